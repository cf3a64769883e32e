"""``vjp`` and ``jvp``: the bodies of the public entry points, and ``vjp``'s forward/backward split.

``vjp(f, *primals)`` runs the forward now and the backward when ``vjp_fn(cotangent)`` is called. The values the
backward needs cross between the two calls as *residuals*, chosen by the minimum cut of the joint graph
(:mod:`jitgraph.autodiff.partition`, :mod:`jitgraph.autodiff.split`): the forward graph returns the function's
outputs and the saved values; the backward graph takes the arguments, those values and the cotangent, and
recomputes the cheap rest. Both are :class:`SplitVJP` compiled functions (guards, cache, explain as usual); they
trace ``f`` the same way, so they agree on the cut. Functions whose cut is not expressible as array residuals
(loop regions, outputs that are not computed values) take the joint path instead: ``vjp_fn`` runs the joint graph,
forward included.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from jitgraph.autodiff import DifferentiationError
from jitgraph.autodiff.reverse import differentiate
from jitgraph.autodiff.split import can_split, split
from jitgraph.jit.function import CompiledFunction
from jitgraph.jit.grad import GradFunction, GradSpec, cached, checked_leaf_starts, grad_spec, split_loss
from jitgraph.tracer.keys import is_namedtuple
from jitgraph.tracer.trace import TraceResult, raising_checks

_VJP: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_FORWARD: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class NoSplit(DifferentiationError):
    """This function's vjp cannot be split into forward and backward graphs (the joint path is used instead)."""


class SplitVJP(GradFunction):
    """One half of a split vjp: ``part="forward"`` is called with the primals and returns ``(out, residuals)``;
    ``part="backward"`` with ``(*primals, residuals, cotangent)`` and returns one gradient pytree per primal."""

    def __init__(self, fn: Any, part: str, has_aux: bool, backend: str | None, options: dict[str, Any]) -> None:
        self.part = part
        super().__init__(fn, GradSpec("vjp", has_aux=has_aux), backend=backend, options=options)
        self.name = f"vjp_{part}({getattr(fn, '__qualname__', None) or type(fn).__qualname__})"

    def _n_primals(self, args: tuple) -> int:
        return len(args) if self.part == "forward" else len(args) - 2

    def _differentiate(self, result: TraceResult, primals: tuple, extra: tuple, kwargs: dict[str, Any]
                       ) -> TraceResult:
        graph = result.graph
        assert graph is not None
        n_leaves = checked_leaf_starts(graph, primals, range(len(primals)))[-1]
        out_spec = split_loss(result.out_spec, True, self.name, False)[0] if self.spec.has_aux else result.out_spec
        seeds = _computed_outputs(out_spec)
        types = [graph.outputs[k].tensor_type.with_(weak=False, layout="C") for k in seeds]
        joint = differentiate(graph, list(range(n_leaves)), seeds, cotangent_types=types, insert_at=n_leaves,
                              max_trips=self.max_trips)
        if not can_split(joint):
            raise NoSplit(f"{self.name}: the backward needs a loop region's values")
        parts = split(joint, n_leaves, len(types))
        self.joints.append(joint)
        if self.part == "forward":
            n_out = len(graph.outputs)
            residuals = ("tuple", tuple(("out", n_out + k, "array") for k in range(len(parts.residuals))))
            spec, part_graph = ("tuple", (result.out_spec, residuals)), parts.forward
        else:
            counter = iter(range(10 ** 9))
            spec = ("tuple", tuple(grad_spec(v, counter) for v in primals))
            part_graph = parts.backward
        info = dict(result.extra)
        info.update(leaf_names=list(part_graph.input_names), may_raise=raising_checks(part_graph), autodiff=joint)
        return TraceResult(part_graph, spec, result.guards, None, len(part_graph.inputs), result.seconds, info)


def _computed_outputs(spec: Any) -> list[int]:
    """The graph outputs of an output spec, in leaf order; anything but computed values refuses the split."""
    tag = spec[0]
    if tag == "out":
        return [spec[1]]
    if tag in ("tuple", "list", "namedtuple", "dict"):
        return [k for s in spec[-1] for k in _computed_outputs(s)]
    raise NoSplit("an output that is not a computed value (an argument or a constant)")


def _like(cotangent: Any, out: Any) -> Any:
    """The cotangent with each leaf in its output's dtype, as an array (the backward was traced for those)."""
    t = type(out)
    if t is dict:
        return {k: _like(cotangent[k], v) for k, v in out.items()}
    if t is tuple or t is list or is_namedtuple(out):
        parts = [_like(c, o) for c, o in zip(cotangent, out)]
        return t._make(parts) if is_namedtuple(out) else t(parts)
    return np.asarray(cotangent, dtype=np.asarray(out).dtype)


def _key(options: dict[str, Any]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in options.items()))


def vjp(fn: Any, primals: tuple, has_aux: bool, backend: str | None, options: dict[str, Any]) -> tuple:
    """``(out, vjp_fn)`` (``(out, vjp_fn, aux)`` with ``has_aux``), as ``jax.vjp``; ``vjp_fn(cotangent)`` returns
    one gradient pytree per primal, as a tuple (see the module docstring for what runs when)."""
    key = (has_aux, backend, _key(options))
    parts = cached(_VJP, fn, ("split",) + key, lambda: [SplitVJP(fn, "forward", has_aux, backend, options),
                                                        SplitVJP(fn, "backward", has_aux, backend, options)])
    forward, backward = parts
    try:
        out, residuals = forward(*primals)
        primal_out = out[0] if has_aux else out

        def vjp_fn(cotangent: Any) -> tuple:
            return backward(*primals, residuals, _like(cotangent, primal_out))
    except NoSplit:
        plain = cached(_FORWARD, fn, key, lambda: CompiledFunction(fn, backend=backend, options=options))
        joint = cached(_VJP, fn, ("joint",) + key, lambda: GradFunction(fn, GradSpec("vjp", has_aux=has_aux),
                                                                       backend=backend, options=options))
        out = plain(*primals)

        def vjp_fn(cotangent: Any) -> tuple:
            return joint(*primals, cotangent)

    if has_aux:
        value, aux = out
        return value, vjp_fn, aux
    return out, vjp_fn


def jvp(fn: Any, primals: Sequence[Any], tangents: Sequence[Any], backend: str | None,
        options: dict[str, Any]) -> tuple:
    """``(out, tangent_out)`` as ``jax.jvp``: one compiled graph computes both."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise DifferentiationError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    key = (backend, _key(options))
    joint = cached(_VJP, fn, ("jvp",) + key, lambda: GradFunction(fn, GradSpec("jvp"), backend=backend,
                                                                  options=options))
    return joint(*primals, *tangents)

