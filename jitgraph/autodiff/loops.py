"""Derivatives through control flow: ``loop`` (backpropagation through time), ``cond``, and ``while`` (refused).

``loop``: the backward of iteration ``t`` needs the values the body saw then. Saving every value of every
iteration costs memory proportional to the body times the trip count; recomputing from the start costs time
quadratic in it. The middle road, used here, is per-iteration checkpointing: the forward loop is rewritten
(:func:`augment_loop`) to also carry one history array per carried value, ``hist[t] = carried at the start of
iteration t`` (a functional ``setitem``, which backends store in place), and the backward loop runs the
iterations in reverse, recomputing each body from ``hist[t]`` and the invariants, then differentiating it. The
gradients of invariants (an RNN's weights) accumulate in the backward loop's carried values.

Bounds must be known when the function is traced (constants): the history has one row per iteration. A loop with
run-time bounds, and a ``while`` (its trip count is only known when it ends), raise a DifferentiationError.

``cond``: the backward is a ``cond`` on the same predicate whose branches recompute their forward branch and
differentiate it, so only the branch taken runs, forward and backward.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jitgraph.autodiff.emit import Emitter, is_float
from jitgraph.autodiff.errors import DifferentiationError
from jitgraph.ir.graph import Graph, GraphBuilder, Node, TupleType, eliminate_dead
from jitgraph.ir.ops.control import INDEX_TYPE
from jitgraph.ir.ops.indexing import Operand
from jitgraph.ir.types import TensorType


@dataclass(frozen=True)
class History:
    """How a loop's backward finds each iteration's carried values: an augmented forward loop records them
    (``recorded``: the ``carried`` elements after the original ones are their histories); a backward loop is
    linear in what it carries (cotangents and accumulators), so differentiating it again (``jvp``) may recompute
    its body from zeros instead (``recorded=False``). Bounds ``start``/``step``, ``trips`` iterations."""

    carried: int
    start: int
    step: int
    trips: int
    recorded: bool = True


HISTORIES: weakref.WeakKeyDictionary[Node, History] = weakref.WeakKeyDictionary()


def _constant_int(node: Node) -> int | None:
    if node.op != "const":
        return None
    value = node.attrs["value"]
    return int(value) if np.ndim(value) == 0 and np.asarray(value).dtype.kind in "iu" else None


def _where(node: Node) -> dict:
    loc = node.loc
    return {"filename": getattr(loc, "filename", None), "lineno": getattr(loc, "lineno", None)}


def augment_loop(builder: GraphBuilder, node: Node, inputs: tuple[Node, ...]) -> Node:
    """A copy of the forward ``loop`` node (with ``inputs``) that also carries the history of its carried values
    (see the module docstring); its first results are the original loop's, so ``tuple_get`` users are unchanged."""
    bounds = [_constant_int(i) for i in inputs[:3]]
    if any(b is None for b in bounds):
        raise DifferentiationError("cannot differentiate through a loop whose bounds are only known at run time",
                                   hint="make the trip count a constant (a Python int the trace sees)",
                                   **_where(node))
    start, stop, step = (int(b) for b in bounds)  # type: ignore[arg-type]
    trips = len(range(start, stop, step))
    k = node.attrs["carried"]
    (body,) = node.regions
    carried = list(inputs[3:3 + k])
    types = [c.tensor_type for c in carried]
    hist_types = [TensorType((trips,) + t.shape, np.float64 if t.weak else t.dtype) for t in types]
    hist_init = [builder.op("zeros", shape=t.shape, dtype=t.dtype) for t in hist_types]

    bb = GraphBuilder()
    bb.loc = node.loc
    mapping: dict[Node, Node] = {body.inputs[0]: bb.input(INDEX_TYPE, "i")}
    for j, inp in enumerate(body.inputs[1:1 + k]):
        mapping[inp] = bb.input(inp.type, body.input_names[1 + j])
    hist_in = [bb.input(t, f"hist{j}") for j, t in enumerate(hist_types)]
    for j, inp in enumerate(body.inputs[1 + k:]):
        mapping[inp] = bb.input(inp.type, body.input_names[1 + k + j])
    _copy_body(bb, body, mapping)
    row = bb.op("floor_divide", bb.op("subtract", mapping[body.inputs[0]], bb.const(start)), bb.const(step))
    hist_out = [bb.op("setitem", h, mapping[body.inputs[1 + j]], row, spec=(Operand(0),))
                for j, h in enumerate(hist_in)]
    new_body = bb.build([mapping[o] for o in body.outputs] + hist_out)
    attrs = {**node.attrs, "carried": 2 * k}
    augmented = builder.op("loop", *inputs[:3], *carried, *hist_init, *inputs[3 + k:], regions=(new_body,), **attrs)
    HISTORIES[augmented] = History(k, start, step, trips)
    return augmented


def _copy_body(bb: GraphBuilder, body: Graph, mapping: dict[Node, Node]) -> list[Node]:
    """Copy ``body``'s non-input nodes into ``bb`` with inputs remapped (``mapping`` gains them)."""
    copied = []
    for n in body.nodes:
        if n.op == "input":
            continue
        mapping[n] = bb.add(Node(n.op, tuple(mapping[i] for i in n.inputs), n.type, n.attrs, n.regions, n.loc))
        copied.append(mapping[n])
    return copied


def _strong(t: TensorType) -> TensorType:
    return TensorType(t.shape, np.float64, layout="C") if t.weak else t.with_(layout="C")


def loop_rule(e: Emitter, node: Node, g: list, wants: tuple[bool, ...]) -> list:
    history = HISTORIES.get(node)
    if history is None:
        raise DifferentiationError("internal: a loop reached the backward without its history", **_where(node))
    k, trips = history.carried, history.trips
    h = k if history.recorded else 0  # history slots in the loop's carried values
    (body,) = node.regions
    carried_init = node.inputs[3:3 + k]
    invariants = node.inputs[3 + k + h:]
    diff_c = [j for j in range(k) if is_float(carried_init[j])]
    diff_inv = [m for m, inv in enumerate(invariants) if wants[3 + k + h + m] and is_float(inv)]
    hists = [e.op("tuple_get", node, index=k + j) for j in range(h)]

    bb = GraphBuilder()
    bb.loc = node.loc
    r = bb.input(INDEX_TYPE, "r")
    ct_in = [bb.input(_strong(carried_init[j].tensor_type), f"ct{j}") for j in diff_c]
    acc_in = [bb.input(_strong(invariants[m].tensor_type), f"acc{m}") for m in diff_inv]
    hist_in = [bb.input(h.type, f"hist{j}") for j, h in enumerate(hists)]
    inv_in = [bb.input(inv.type, f"inv{m}") for m, inv in enumerate(invariants)]
    row = bb.op("subtract", bb.const(trips - 1), r)
    i = bb.op("add", bb.const(history.start), bb.op("multiply", row, bb.const(history.step)))
    mapping: dict[Node, Node] = {body.inputs[0]: i}
    # the augmented body: (i, *carried, *hist, *inv) -> (*carried', *hist'); recompute the original part
    for j in range(k):
        t = carried_init[j].tensor_type
        mapping[body.inputs[1 + j]] = (bb.op("getitem", hist_in[j], row, spec=(Operand(0),)) if h
                                       else bb.op("zeros", shape=t.shape, dtype=t.dtype))
    for m in range(len(invariants)):
        mapping[body.inputs[1 + k + h + m]] = inv_in[m]
    for j in range(h):
        mapping[body.inputs[1 + k + j]] = hist_in[j]
    copied = _copy_body(bb, body, mapping)
    wrt = [mapping[body.inputs[1 + j]] for j in diff_c] + [inv_in[m] for m in diff_inv]
    seeds = [(mapping[body.outputs[j]], ct) for j, ct in zip(diff_c, ct_in)]
    grads = e.backward(bb, copied, wrt, seeds)
    be = Emitter(bb)
    new_ct = [be.cast(gr, ct) for gr, ct in zip(grads[:len(diff_c)], ct_in)]
    new_acc = [be.cast(be.add(acc, gr), acc) for acc, gr in zip(acc_in, grads[len(diff_c):])]
    back_body = eliminate_dead(bb.build(new_ct + new_acc))  # the recomputed history stores are dead here

    inits = []
    for j in diff_c:
        part = g[j] if j < len(g) else None
        inits.append(e.zeros(carried_init[j].tensor_type.shape, _strong(carried_init[j].tensor_type).dtype)
                     if part is None else e.cast(part, ct_in[len(inits)]))
    accs = [e.zeros(invariants[m].tensor_type.shape, _strong(invariants[m].tensor_type).dtype) for m in diff_inv]
    loop = e.op("loop", e.const(0), e.const(trips), e.const(1), *inits, *accs, *hists, *invariants,
                regions=(back_body,), carried=len(inits) + len(accs))
    HISTORIES[loop] = History(len(inits) + len(accs), 0, 1, trips, recorded=False)
    result: list = [None] * len(node.inputs)
    for n, j in enumerate(diff_c):
        result[3 + j] = e.op("tuple_get", loop, index=n)
    for n, m in enumerate(diff_inv):
        result[3 + k + h + m] = e.op("tuple_get", loop, index=len(diff_c) + n)
    return result


def cond_rule(e: Emitter, node: Node, g: list, wants: tuple[bool, ...]) -> list:
    """``cond(pred, *ops)``: a backward ``cond`` on ``pred`` whose branches recompute and differentiate theirs."""
    operands = node.inputs[1:]
    diff = [m for m, op in enumerate(operands) if wants[1 + m] and is_float(op)]
    assert isinstance(node.type, TupleType)
    outs = [m for m, t in enumerate(node.type.elements) if t.dtype.kind == "f" and m < len(g) and g[m] is not None]
    cts = [e.cast_to(g[m], _strong(node.type.elements[m]).dtype) for m in outs]
    branches = []
    for branch in node.regions:
        bb = GraphBuilder()
        bb.loc = node.loc
        ct_in = [bb.input(_strong(node.type.elements[m]), f"ct{m}") for m in outs]
        mapping = {inp: bb.input(inp.type, branch.input_names[n]) for n, inp in enumerate(branch.inputs)}
        copied = _copy_body(bb, branch, mapping)
        wrt = [mapping[branch.inputs[m]] for m in diff]
        grads = e.backward(bb, copied, wrt, [(mapping[branch.outputs[m]], ct) for m, ct in zip(outs, ct_in)])
        be = Emitter(bb)
        fixed = [be.cast_to(be.fit(gr, operands[m].tensor_type.shape), _strong(operands[m].tensor_type).dtype)
                 for gr, m in zip(grads, diff)]
        branches.append(bb.build(fixed))  # inputs (*cotangents, *operands): the backward cond's operand order
    back = e.op("cond", node.inputs[0], *cts, *operands, regions=tuple(branches))
    result: list = [None] * len(node.inputs)
    for n, m in enumerate(diff):
        result[1 + m] = e.op("tuple_get", back, index=n)
    return result


def while_rule(e: Emitter, node: Node, g: list, wants: tuple[bool, ...]) -> Sequence:
    raise DifferentiationError("cannot differentiate through a while loop: its trip count is only known when it "
                               "ends, so the backward cannot size what it must save",
                               hint="write it as a for loop over range(n) with a bound n the trace sees (break "
                                    "out of it early with a masked update if needed)", **_where(node))
