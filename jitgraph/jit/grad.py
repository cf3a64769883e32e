"""Compiled gradient functions: ``grad``, ``value_and_grad``, ``vjp`` and ``jvp`` as :class:`CompiledFunction`\\ s.

A :class:`GradFunction` is a CompiledFunction whose trace step is "trace the user's function, then differentiate
the graph" (:func:`jitgraph.autodiff.differentiate`). Everything after the trace is the compiled function's own
machinery, unchanged: the dispatch key and guards (the user function's guards: they are about the arguments), the
cache and recompiles, the pass pipeline and backend on the joint graph, ``explain`` (which shows the joint graph),
and the fallback -- an entry that cannot run compiled (a backend failure, arguments that overlap in memory, the
recompile limit) runs the same joint graph with the reference interpreter, so it still returns gradients.

A trace that breaks (code the tracer cannot capture) cannot be differentiated: that raises GraphBreakError at the
user's line rather than running eagerly, since eager NumPy has no gradients to give. Int arguments stay
specialised (a grad function does not retrace them as runtime values).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitgraph import config
from jitgraph.autodiff import DifferentiationError, JointGraph
from jitgraph.autodiff.forward import jvp_graph
from jitgraph.autodiff.loops import HISTORIES
from jitgraph.autodiff.reverse import differentiate
from jitgraph.backends.eager import evaluate
from jitgraph.device_arrays import is_device_array
from jitgraph.inspect.result import ExplainResult
from jitgraph.ir.graph import Graph
from jitgraph.ir.types import TensorType, type_of
from jitgraph.jit.breaks import BreakReason
from jitgraph.jit.explain_builder import build_explain
from jitgraph.jit.function import CompiledFunction
from jitgraph.jit.stages import Traced, strict, trace_stage
from jitgraph.tracer.context import GraphBreak
from jitgraph.tracer.guards import GuardSet
from jitgraph.tracer.keys import is_namedtuple, make_key
from jitgraph.tracer.outputs import output_value
from jitgraph.tracer.trace import TraceResult, raising_checks, trace

KINDS = ("grad", "value_and_grad", "vjp", "jvp")


@dataclass(frozen=True)
class GradSpec:
    """What to compute: ``kind`` (one of :data:`KINDS`), the positional arguments differentiated (``argnums``,
    an int or a tuple as in JAX) and whether the function returns ``(loss, aux)`` (``has_aux``)."""

    kind: str
    argnums: int | tuple[int, ...] = 0
    has_aux: bool = False

    @property
    def positions(self) -> tuple[int, ...]:
        return (self.argnums,) if isinstance(self.argnums, int) else tuple(self.argnums)


class GradFunction(CompiledFunction):
    """What ``jitgraph.grad(f)`` and friends return: call it like ``f`` (``vjp``/``jvp`` kinds take the cotangent
    or the tangents after ``f``'s arguments); ``explain()`` shows the joint forward+backward graph."""

    interpreted_graphs_run_eagerly = False  # the joint graph has no eager twin: interpreting it is the fallback
    tiers_down = False  # nor is the eager gradient a twin to measure it against (tiering.py)
    skips_to_eager = False  # its eager entries interpret the joint graph: worth the checks (eager_mode.py)

    def __init__(self, fn: Any, spec: GradSpec, backend: str | None = None, fullgraph: bool = False,
                 cache_limit: int = 8, options: dict[str, Any] | None = None) -> None:
        if spec.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {spec.kind!r}")
        self.user_fn = fn
        self.spec = spec
        # the joint graphs of the latest traces (explain, saved_values); bounded, since an eager entry retraces
        self.joints: collections.deque[JointGraph] = collections.deque(maxlen=8)
        super().__init__(_EagerGradient(self), backend=backend, fullgraph=fullgraph, cache_limit=cache_limit,
                         options=options)
        functools.update_wrapper(self, fn, updated=())
        # Not __wrapped__: the tracer inlines a jitgraph wrapper's __wrapped__ when one is called inside a trace,
        # and inlining ``fn`` there would compute f's value where its gradient was asked for.
        self.__dict__.pop("__wrapped__", None)
        self.name = f"{spec.kind}({getattr(fn, '__qualname__', None) or type(fn).__qualname__})"

    # ---- the trace step: trace the user's function, then differentiate its graph -----------------------------
    def _trace(self, args: tuple, kwargs: dict[str, Any], result: TraceResult | None = None,
               dynamic: frozenset[int | str] | None = None) -> Traced:
        n = self._n_primals(args)
        primals = args[:n]
        if result is None:
            try:
                result = trace(self.user_fn, primals, kwargs)
            except Exception as exc:
                if strict() or isinstance(exc, DifferentiationError):
                    raise
                result = TraceResult(None, None, GuardSet(), GraphBreak(f"internal tracer error: {exc!r}", None,
                                                                        None), 0)
        if result.breaks is not None or result.graph is None:
            brk = result.breaks
            reason = BreakReason(brk.reason if brk else "no graph", getattr(brk, "filename", None),
                                 getattr(brk, "lineno", None))
            raise reason.error(f"cannot differentiate {self.name}: graph break: {reason.reason}",
                               hint="differentiation needs the whole function as one graph; rewrite this line in "
                                    "NumPy the tracer captures (see explain)")
        result = self._differentiate(result, primals, args[n:], kwargs)
        return trace_stage(self.user_fn, args, kwargs, name=self.name, backend=self.backend, options=self.options,
                           result=result)

    symbolic_sizes = False  # each size is traced (dynamic_policy.DynamicPolicy.symbolic_sizes)

    def _compile_dynamic(self, user_args: tuple, user_kwargs: dict[str, Any]) -> None:
        return None  # int arguments stay specialised (see the module docstring)

    def _n_primals(self, args: tuple) -> int:
        if self.spec.kind == "vjp":
            return len(args) - 1
        if self.spec.kind == "jvp":
            return len(args) // 2
        return len(args)

    def _differentiate(self, result: TraceResult, primals: tuple, extra: tuple, kwargs: dict[str, Any]
                       ) -> TraceResult:
        graph = result.graph
        assert graph is not None
        kind = self.spec.kind
        positions = tuple(range(len(primals))) if kind in ("vjp", "jvp") else self.spec.positions
        for p in positions:
            if not -len(primals) <= p < len(primals):
                raise DifferentiationError(f"{self.name}: argnums {p} is out of range for {len(primals)} positional "
                                           "arguments")
        positions = tuple(p % len(primals) for p in positions)
        starts = checked_leaf_starts(graph, primals, positions)
        wrt = [leaf for p in positions for leaf in range(starts[p], starts[p + 1])]
        n_leaves = starts[-1]
        if kind == "jvp":
            tangent_types = [_leaf_type(v) for v in _flat(extra)]
            joint = jvp_graph(graph, wrt, tangent_types, insert_at=n_leaves, max_trips=self.max_trips)
            spec = ("tuple", (result.out_spec, _shift(result.out_spec, joint.n_forward)))
        elif kind == "vjp":
            (cotangent,) = extra
            out_spec = split_loss(result.out_spec, True, self.name, False)[0] if self.spec.has_aux else result.out_spec
            seeds, types = _cotangent_seeds(out_spec, cotangent)
            joint = differentiate(graph, wrt, seeds, cotangent_types=types, insert_at=n_leaves,
                                  max_trips=self.max_trips)
            counter = iter(range(joint.n_forward, 10 ** 9))
            spec = ("tuple", tuple(grad_spec(primals[p], counter) for p in positions))
        else:
            loss_spec, aux_spec = split_loss(result.out_spec, self.spec.has_aux, self.name)
            loss = graph.outputs[loss_spec[1]]
            t = loss.type
            if not (isinstance(t, TensorType) and t.shape == () and t.dtype.kind == "f"):
                raise DifferentiationError(f"{self.name}: the function must return a float scalar (a loss) to be "
                                           f"differentiated, not {t}", hint="reduce it first (.sum() or .mean()), "
                                           "or use jitgraph.vjp for a non-scalar output")
            joint = differentiate(graph, wrt, [loss_spec[1]], max_trips=self.max_trips)
            counter = iter(range(joint.n_forward, 10 ** 9))
            per_arg = tuple(grad_spec(primals[p], counter) for p in positions)
            grads = per_arg[0] if isinstance(self.spec.argnums, int) else ("tuple", per_arg)
            if kind == "grad":
                spec = ("tuple", (grads, aux_spec)) if self.spec.has_aux else grads
            else:
                spec = ("tuple", (result.out_spec, grads))
        self.joints.append(joint)
        extra_info = dict(result.extra)
        extra_info["leaf_names"] = list(joint.graph.input_names)
        extra_info["may_raise"] = raising_checks(joint.graph)
        extra_info["autodiff"] = joint
        return TraceResult(joint.graph, spec, result.guards, None, len(joint.graph.inputs), result.seconds,
                           extra_info)

    @property
    def max_trips(self) -> int | None:
        """The bound on loops whose trip count the trace does not know (option ``max_trips``; README "Autodiff")."""
        return config.option(self.options, "max_trips")

    # ---- the fallback: the joint graph, interpreted ----------------------------------------------------------
    def run_interpreted(self, *args: Any, **kwargs: Any) -> Any:
        """Compute this call's result with the reference interpreter (what an eager cache entry runs). It traces
        and differentiates again on every call: fallbacks are for correctness, not speed."""
        traced = self._trace(args, kwargs)
        graph = traced.result.graph
        leaves: list[Any] = []
        make_key(args, kwargs, leaves)
        extra = traced.check(args, kwargs) if traced.check is not None else []
        leaves += extra or []
        outs, written = evaluate(graph, leaves)
        for (index, _), value in zip(graph.mutations, written):
            np.copyto(leaves[index], value)
        return output_value(traced.out_spec, traced.guards.constants, outs, leaves, args, kwargs)

    def explain(self, output: Any = None) -> GradExplainResult:
        """As ``CompiledFunction.explain`` (the graphs shown are the joint forward+backward graphs), with the user's
        function as the source shown and an autodiff part: what was differentiated and which forward values the
        backward reads (saved) or recomputes."""
        base = build_explain(self.entries, function=self.user_fn, recompile_reasons=self.recompile_reasons(True),
                             fallbacks=self.cache_info().fallbacks, output=output)
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(ExplainResult)}
        return GradExplainResult(**fields, autodiff=self.autodiff_notes(), autodiff_values=self.autodiff_values())

    def autodiff_notes(self) -> list[str]:
        """The autodiff part of ``explain``, in lines (the plain-text view; the rich and HTML views show the same
        facts: the first lines as a summary, :meth:`autodiff_values` as a table)."""
        if not self.joints:
            return []
        joint = self.joints[-1]
        lines = self._autodiff_summary(joint)
        lines.append(f"forward values the backward reads ({len(joint.saved)}):")
        lines.extend(f"  {_describe(n)}" for n in joint.saved)
        cut = joint.cut
        if cut is not None and joint.saved:
            lines.extend(f"  saved: {_describe(n)}" for n in cut.saved)
            lines.extend(f"  recomputed: {_describe(n)}" for n in cut.recomputed)
        return lines

    def _autodiff_summary(self, joint: JointGraph) -> list[str]:
        names = joint.graph.input_names
        lines = [f"{self.spec.kind} with respect to: " + ", ".join(names[i] for i in joint.wrt if i < len(names)),
                 f"joint graph: {joint.n_forward} forward output(s), then {len(joint.wrt)} gradient(s)"]
        cut = joint.cut
        if cut is not None and joint.saved:
            applied = "applied: the backward reads the saved values and recomputes the rest" if joint.applied \
                else "reported only"
            lines.append(f"min-cut ({applied}): save {len(cut.saved)} value(s), {cut.saved_bytes} bytes (saving "
                         f"every value read: {cut.naive_bytes} bytes), recompute {len(cut.recomputed)}")
        loops = sum(1 for n in joint.graph.nodes if n.op == "loop" and n in HISTORIES and HISTORIES[n].recorded)
        if loops:
            lines.append(f"loops: {loops} loop region(s) record each iteration's carried values; the backward loop "
                         "runs the iterations in reverse, recomputing from them only what the recorded outputs "
                         "do not give")
        return lines

    def autodiff_values(self) -> list[tuple[str, str, str]]:
        """The forward values the backward needs, as ``(role, value, source)`` rows: role is "saved" or
        "recomputed" (by the min-cut), or "read" where no cut was made."""
        if not self.joints:
            return []
        joint = self.joints[-1]
        cut = joint.cut

        def row(role: str, n: Any) -> tuple[str, str, str]:
            return (role, f"{n.op} : {n.type}", str(n.loc) if n.loc else "")

        if cut is None:
            return [row("read", n) for n in joint.saved]
        return [row("saved", n) for n in cut.saved] + [row("recomputed", n) for n in cut.recomputed]

    def saved_values(self) -> list[str]:
        """The forward values the backward of the latest compile reads, in words (``explain`` adds these)."""
        if not self.joints:
            return []
        return [_describe(n) for n in self.joints[-1].saved]

    def __reduce__(self) -> tuple[Any, ...]:
        return (GradFunction, (self.user_fn, self.spec, self.backend, self.fullgraph, self.cache_limit, self.options))


def _describe(node: Any) -> str:
    return f"{node.op} : {node.type}" + (f" @ {node.loc}" if node.loc else "")


@dataclasses.dataclass
class GradExplainResult(ExplainResult):
    """An ExplainResult with the autodiff part (``autodiff``: lines) printed after the graphs."""

    autodiff: list[str] = dataclasses.field(default_factory=list)
    # (role, value, source) rows: what the rich and HTML views tabulate (jitgraph.inspect.render.autodiff)
    autodiff_values: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)

    def __str__(self) -> str:
        text = super().__str__()
        if not self.autodiff:
            return text
        return text + "\nAutodiff:\n" + "\n".join("  " + line for line in self.autodiff)


class _EagerGradient:
    """What an eager cache entry of a GradFunction calls: the joint graph, interpreted (see the module doc)."""

    def __init__(self, owner: GradFunction) -> None:
        self._owner = weakref.ref(owner)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        owner = self._owner()
        assert owner is not None
        return owner.run_interpreted(*args, **kwargs)

    @property
    def __code__(self) -> Any:  # parameter names in recompile reasons are the user function's
        owner = self._owner()
        return getattr(getattr(owner, "user_fn", None), "__code__", None)


# ---- pytrees of arguments and results ----------------------------------------------------------------------
def _flat(value: Any) -> list[Any]:
    """The leaves of ``value`` in the order the tracer makes graph inputs for them (``TraceContext.wrap_arg``)."""
    t = type(value)
    if t is float or t is np.ndarray or isinstance(value, np.generic) or is_device_array(value):
        return [value]
    if t is tuple or t is list or is_namedtuple(value):
        return [leaf for v in value for leaf in _flat(v)]
    if t is dict:
        return [leaf for v in value.values() for leaf in _flat(v)]
    return []


def leaf_starts(primals: tuple) -> list[int]:
    starts = [0]
    for value in primals:
        starts.append(starts[-1] + len(_flat(value)))
    return starts


def checked_leaf_starts(graph: Graph, primals: tuple, positions: Sequence[int]) -> list[int]:
    """:func:`leaf_starts`, after checking that every leaf of the primals at ``positions`` (the differentiated
    ones) is an array or a float: the graph inputs ``starts[p]:starts[p + 1]`` are argument ``p``'s leaves."""
    starts = leaf_starts(primals)
    names = list(graph.input_names)
    for p in positions:
        check_leaves(primals[p], names[starts[p]:starts[p + 1]], f"argument {p}")
    return starts


def _leaf_type(value: Any) -> TensorType:
    return type_of(np.asarray(value) if isinstance(value, float) else value)


def check_leaves(value: Any, names: Sequence[str], what: str) -> None:
    """Every leaf of a differentiated argument must be an array or a float (ints are part of the key)."""
    t = type(value)
    if t is tuple or t is list or t is dict or is_namedtuple(value):
        for v in (value.values() if t is dict else value):
            check_leaves(v, names, what)
        return
    if not _flat(value):
        raise DifferentiationError(f"cannot differentiate with respect to {what}: it holds a {t.__name__} "
                                   f"({value!r:.40}); only float arrays and floats have gradients",
                                   hint="leave it out of argnums")


def grad_spec(value: Any, counter: Any) -> Any:
    """An output spec that rebuilds ``value``'s pytree from consecutive graph outputs (``counter``)."""
    t = type(value)
    if t is np.ndarray or is_device_array(value):
        return ("out", next(counter), "array")
    if isinstance(value, np.generic):
        return ("out", next(counter), "scalar")
    if t is float:
        return ("out", next(counter), "python")
    if t is tuple or t is list:
        return (t.__name__, tuple(grad_spec(v, counter) for v in value))
    if is_namedtuple(value):
        return ("namedtuple", t, tuple(grad_spec(v, counter) for v in value))
    if t is dict:
        return ("dict", tuple(value), tuple(grad_spec(v, counter) for v in value.values()))
    raise DifferentiationError(f"cannot build a gradient for a {t.__name__}")


def split_loss(spec: Any, has_aux: bool, name: str, computed: bool = True) -> tuple[Any, Any]:
    if has_aux:
        if spec[0] not in ("tuple", "list") or len(spec[1]) != 2:
            raise DifferentiationError(f"{name}: has_aux=True needs the function to return a pair (loss, aux)")
        loss, aux = spec[1]
    else:
        loss, aux = spec, None
    if computed and loss[0] != "out":
        raise DifferentiationError(f"{name}: the loss does not depend on the traced computation (the function "
                                   "returns a constant or an argument as it is)", hint="return a computed value")
    return loss, aux


def _cotangent_seeds(spec: Any, cotangent: Any) -> tuple[list[int | None], list[TensorType]]:
    """Which graph output each leaf of the cotangent seeds (None: an output that is not computed), and their
    types, walking the output spec and the cotangent pytree together."""
    seeds: list[int | None] = []

    def walk(s: Any, value: Any) -> None:
        tag = s[0]
        if tag in ("tuple", "list", "namedtuple", "dict"):
            parts = s[-1]
            values = list(value.values()) if tag == "dict" else list(value)
            if len(values) != len(parts):
                raise DifferentiationError("the cotangent's structure differs from the function's output")
            for p, v in zip(parts, values):
                walk(p, v)
            return
        n = len(_flat(value))
        seeds.extend([s[1] if tag == "out" else None] * n)

    walk(spec, cotangent)
    return seeds, [_leaf_type(v) for v in _flat(cotangent)]


def _shift(spec: Any, offset: int) -> Any:
    """``spec`` with every graph output index moved by ``offset`` (the tangents mirror the outputs)."""
    tag = spec[0]
    if tag == "out":
        return ("out", spec[1] + offset, spec[2])
    if tag in ("tuple", "list"):
        return (tag, tuple(_shift(s, offset) for s in spec[1]))
    if tag == "namedtuple":
        return (tag, spec[1], tuple(_shift(s, offset) for s in spec[2]))
    if tag == "dict":
        return (tag, spec[1], tuple(_shift(s, offset) for s in spec[2]))
    raise DifferentiationError("jvp: an output that is not computed from the arguments (a constant, or an "
                               "argument returned as it is) has no tangent here", hint="return computed values")


def cached(table: weakref.WeakKeyDictionary, fn: Callable[..., Any], key: tuple, make: Callable[[], Any]) -> Any:
    """One compiled object per (function, options): ``vjp(f, x)`` called in a loop compiles once."""
    try:
        per_fn = table.setdefault(fn, {})
    except TypeError:  # not weakly referenceable: no cache
        return make()
    if key not in per_fn:
        per_fn[key] = make()
    return per_fn[key]
