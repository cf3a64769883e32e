"""Derivatives through control flow: ``loop`` and ``while`` (backpropagation through time), and ``cond``.

``loop``: the backward of iteration ``t`` needs the values the body saw then. Saving every value of every
iteration costs memory proportional to the body times the trip count; recomputing from the start costs time
quadratic in it. The middle road, used here, is per-iteration checkpointing: the forward loop is rewritten
(:func:`augment_loop`) to also carry one history array per carried value, ``hist[0]`` the initial value and
``hist[t + 1]`` what iteration ``t`` returned (a functional ``setitem``, which backends store in place). The backward
loop runs the iterations in reverse: it differentiates each body from ``hist[t]`` and the invariants, recomputing
only what the rules read and the history does not give -- a value the body returns is read from ``hist[t + 1]``
(an RNN's ``tanh``), so its recomputation, matmuls included, is dead code. The gradients of invariants (an RNN's
weights) accumulate in the backward loop's carried values.

Trip counts. With constant bounds the history has one row per iteration. A loop with run-time bounds and a
``while`` (its trip count is only known when it ends) need a bound on the rows: ``max_trips`` (the option of
``jitgraph.grad`` and friends). The augmented forward then also counts its iterations; a run that makes more than
``max_trips`` raises ValueError after the forward (the history rows were clamped, nothing was written out of
bounds), and the backward loop runs as many iterations as the forward made. Without ``max_trips`` such a loop is a
DifferentiationError at its line.

``cond``: the backward is a ``cond`` on the same predicate whose branches recompute their forward branch and
differentiate it, so only the branch taken runs, forward and backward.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitgraph.autodiff.emit import Emitter, is_float
from jitgraph.autodiff.errors import DifferentiationError
from jitgraph.ir.graph import Graph, GraphBuilder, Node, TupleType, eliminate_dead
from jitgraph.ir.ops import get_op
from jitgraph.ir.ops.control import INDEX_TYPE
from jitgraph.ir.ops.indexing import Operand
from jitgraph.ir.types import TensorType

HINT_BOUND = ("pass max_trips=N to jitgraph.grad / value_and_grad / vjp / jvp (the most iterations the loop may "
              "run), or make the trip count a constant the trace sees (range(n) with a Python int n)")


@dataclass(frozen=True)
class History:
    """How a loop's backward finds each iteration's values. An augmented forward loop records them
    (``recorded``): after its ``carried`` original values come the iteration count (when ``count`` is set: the
    checked count, a node of the enclosing graph) and one history per carried value. A backward loop is linear in
    what it carries (cotangents and accumulators), so differentiating it again (``jvp``) recomputes its body from
    zeros instead (``recorded=False``). ``trips`` is the trip count when the trace knows it."""

    carried: int
    trips: int | None
    recorded: bool = True
    count: Node | None = None

    @property
    def extra(self) -> int:
        """Carried slots the augmentation added after the original ones."""
        return (self.carried if self.recorded else 0) + (1 if self.count is not None else 0)


HISTORIES: weakref.WeakKeyDictionary[Node, History] = weakref.WeakKeyDictionary()


def _constant_int(node: Node) -> int | None:
    if node.op != "const":
        return None
    value = node.attrs["value"]
    return int(value) if np.ndim(value) == 0 and np.asarray(value).dtype.kind in "iu" else None


def _where(node: Node) -> dict:
    loc = node.loc
    return {"filename": getattr(loc, "filename", None), "lineno": getattr(loc, "lineno", None)}


def _describe_loop(node: Node) -> str:
    loc = node.loc
    return ("for loop" if node.op == "loop" else "while loop") + (f" at {loc}" if loc else "")


def augment_loop(builder: GraphBuilder, node: Node, inputs: tuple[Node, ...], max_trips: int | None = None) -> Node:
    """A copy of the forward ``loop``/``while`` node (with ``inputs``) that also records its history (see the module
    docstring); its first results are the original's, so ``tuple_get`` users are unchanged."""
    is_loop = node.op == "loop"
    bounds = [_constant_int(i) for i in inputs[:3]] if is_loop else [None]
    trips: int | None = None
    if all(b is not None for b in bounds):
        start, stop, step = (int(b) for b in bounds)  # type: ignore[arg-type]
        trips = len(range(start, stop, step))
    elif max_trips is None:
        what = ("a while loop: its trip count is only known when it ends" if not is_loop
                else "a loop whose bounds are only known at run time")
        raise DifferentiationError(f"cannot differentiate through {what}, so the backward cannot size what it "
                                   "must save", hint=HINT_BOUND, **_where(node))
    rows = trips if trips is not None else int(max_trips)  # type: ignore[arg-type]
    counted = trips is None
    k = node.attrs["carried"]
    operands = inputs[3:] if is_loop else inputs
    carried = list(operands[:k])
    hist_types = [TensorType((rows + 1,) + t.shape, np.float64 if t.weak else t.dtype)
                  for t in (c.tensor_type for c in carried)]
    zero = builder.const(0)
    hist_init = [builder.op("setitem", builder.op("zeros", shape=t.shape, dtype=t.dtype), c, zero, spec=(Operand(0),))
                 for t, c in zip(hist_types, carried)]
    count_init = [zero] if counted else []

    body = node.regions[-1]
    lead = 1 if is_loop else 0  # the loop index
    bb = GraphBuilder()
    bb.loc = node.loc
    mapping: dict[Node, Node] = {}
    new_inputs = _augmented_inputs(bb, body, lead, k, counted, hist_types, mapping)
    _copy_body(bb, body, mapping)
    outs = [mapping[o] for o in body.outputs]
    if counted:
        count_next = bb.op("add", new_inputs["count"], bb.const(1))
        row = bb.op("minimum", count_next, bb.const(rows))  # clamped: a run past max_trips raises after the loop
        extra_out = [count_next]
    else:
        i = mapping[body.inputs[0]]
        row = bb.op("add", bb.op("floor_divide", bb.op("subtract", i, bb.const(start)), bb.const(step)), bb.const(1))
        extra_out = []
    hist_out = [bb.op("setitem", h, outs[j], row, spec=(Operand(0),)) for j, h in enumerate(new_inputs["hist"])]
    new_body = bb.build(outs + extra_out + hist_out)
    regions: tuple[Graph, ...] = (new_body,)
    if not is_loop:
        regions = (_augmented_test(node.regions[0], k, counted, hist_types), new_body)
    attrs = {**node.attrs, "carried": 2 * k + len(count_init)}
    augmented = builder.op(node.op, *inputs[:3 if is_loop else 0], *carried, *count_init, *hist_init,
                           *operands[k:], regions=regions, **attrs)
    count = None
    if counted:
        made = builder.op("tuple_get", augmented, index=k)
        fits = builder.op("less_equal", made, builder.const(rows))
        count = builder.op("check", made, fits, error="ValueError",
                           message=f"the {_describe_loop(node)} ran more than max_trips={rows} iterations, so its "
                                   "gradient cannot be computed; pass a larger max_trips")
    HISTORIES[augmented] = History(k, trips, True, count)
    return augmented


def _augmented_inputs(bb: GraphBuilder, body: Graph, lead: int, k: int, counted: bool,
                      hist_types: list[TensorType], mapping: dict[Node, Node]) -> dict[str, list[Node] | Node]:
    """The inputs of an augmented region, in order: (loop index), carried, (count), histories, invariants; the
    region's own inputs map onto them in ``mapping``."""
    names = body.input_names
    for j, inp in enumerate(body.inputs[:lead + k]):
        mapping[inp] = bb.input(inp.type, names[j])
    made: dict[str, list[Node] | Node] = {}
    if counted:
        made["count"] = bb.input(INDEX_TYPE, "count")
    made["hist"] = [bb.input(t, f"hist{j}") for j, t in enumerate(hist_types)]
    for j, inp in enumerate(body.inputs[lead + k:]):
        mapping[inp] = bb.input(inp.type, names[lead + k + j])
    return made


def _augmented_test(test: Graph, k: int, counted: bool, hist_types: list[TensorType]) -> Graph:
    """A while loop's test, taking the augmented carried values (and ignoring the added ones)."""
    tb = GraphBuilder()
    tb.loc = test.outputs[0].loc if test.outputs else None
    mapping: dict[Node, Node] = {}
    _augmented_inputs(tb, test, 0, k, counted, hist_types, mapping)
    _copy_body(tb, test, mapping)
    return tb.build([mapping[o] for o in test.outputs])


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


def _redirect(bb: GraphBuilder, replace: dict[Node, Node], outputs: list[Node]) -> list[Node]:
    """Make every reader of a key of ``replace`` read its value instead (nodes keep their identity unless an input
    changed; their types are inferred again). ``bb.nodes`` is rewritten in place; returns ``outputs`` remapped. A
    replacement whose readers would change shape, dtype or weakness is skipped (cannot happen for equal types)."""
    mapping: dict[Node, Node] = {}
    nodes: list[Node] = []
    for n in bb.nodes:
        inputs = tuple(mapping.get(i, i) for i in n.inputs)
        if inputs != n.inputs:
            t = get_op(n.op).infer(tuple(i.type for i in inputs), n.attrs, n.regions)
            same = t == n.type or (isinstance(t, TensorType) and isinstance(n.type, TensorType)
                                   and (t.shape, t.dtype, t.weak) == (n.type.shape, n.type.dtype, n.type.weak))
            if not same:
                return outputs  # keep the graph as it was
            new = Node(n.op, inputs, t, n.attrs, n.regions, n.loc)
            if n in HISTORIES:
                HISTORIES[new] = HISTORIES[n]
            mapping[n] = new
            n = new
        nodes.append(n)
        if n in replace:
            mapping[n] = replace[n]
    bb.nodes[:] = nodes
    return [mapping.get(o, o) for o in outputs]


def loop_rule(e: Emitter, node: Node, g: list, wants: tuple[bool, ...]) -> list:
    """The backward of a ``loop``/``while`` region: a ``loop`` over the forward's iterations in reverse."""
    history = HISTORIES.get(node)
    if history is None:
        raise DifferentiationError(f"cannot differentiate through a {node.op} nested in another region (or a "
                                   "region the transform did not prepare)", hint="move the inner loop out, or "
                                   "unroll it with a Python loop the trace sees", **_where(node))
    is_loop = node.op == "loop"
    k, recorded = history.carried, history.recorded
    counted = history.count is not None
    lead_in = 3 if is_loop else 0  # node inputs before the carried values
    body = node.regions[-1]
    operands = node.inputs[lead_in:]
    carried_init = operands[:k]
    invariants = operands[k + history.extra:]
    first_inv = lead_in + k + history.extra
    diff_c = [j for j in range(k) if is_float(carried_init[j])]
    diff_inv = [m for m, inv in enumerate(invariants) if wants[first_inv + m] and is_float(inv)]
    hist_at = k + (1 if counted else 0)
    hists = [e.op("tuple_get", node, index=hist_at + j) for j in range(k)] if recorded else []
    bb = GraphBuilder()
    bb.loc = node.loc
    r = bb.input(INDEX_TYPE, "r")
    ct_in = [bb.input(_strong(carried_init[j].tensor_type), f"ct{j}") for j in diff_c]
    acc_in = [bb.input(_strong(invariants[m].tensor_type), f"acc{m}") for m in diff_inv]
    hist_in = [bb.input(h.type, f"hist{j}") for j, h in enumerate(hists)]
    trips, t, index, runtime = _reverse_bounds(e, bb, node, history, r)
    inv_in = [bb.input(inv.type, f"inv{m}") for m, inv in enumerate(invariants)]

    mapping: dict[Node, Node] = {}
    if is_loop:
        mapping[body.inputs[0]] = index  # type: ignore[assignment]
    lead = 1 if is_loop else 0
    after_next = bb.op("add", t, bb.const(1))
    outputs_at: dict[int, Node] = {}
    for j in range(k):
        c = carried_init[j].tensor_type
        mapping[body.inputs[lead + j]] = (bb.op("getitem", hist_in[j], t, spec=(Operand(0),)) if recorded
                                          else bb.op("zeros", shape=c.shape, dtype=c.dtype))
        if recorded:
            outputs_at[j] = bb.op("getitem", hist_in[j], after_next, spec=(Operand(0),))
    pos = lead + k
    if counted:
        mapping[body.inputs[pos]] = t
        pos += 1
    if recorded:
        for j in range(k):
            mapping[body.inputs[pos + j]] = hist_in[j]
        pos += k
    for m in range(len(invariants)):
        mapping[body.inputs[pos + m]] = inv_in[m]
    copied = _copy_body(bb, body, mapping)
    wrt = [mapping[body.inputs[lead + j]] for j in diff_c] + [inv_in[m] for m in diff_inv]
    seeds = [(mapping[body.outputs[j]], ct) for j, ct in zip(diff_c, ct_in)]
    grads = e.backward(bb, copied, wrt, seeds)
    be = Emitter(bb)
    new_ct = [be.cast(gr, ct) for gr, ct in zip(grads[:len(diff_c)], ct_in)]
    new_acc = [be.cast(be.add(acc, gr), acc) for acc, gr in zip(acc_in, grads[len(diff_c):])]
    results = new_ct + new_acc
    if recorded:  # what the body returned is in the history: its recomputation is dead code afterwards
        recomputed = set(copied)  # (not a value the body passes through: those come before the history reads)
        replace = {mapping[o]: outputs_at[j] for j, o in enumerate(body.outputs[:k])
                   if mapping[o] in recomputed and not o.tensor_type.weak}  # (a weak carried value's row is strong)
        results = _redirect(bb, replace, results)
    # inputs: r, cotangents, accumulators, histories, run-time bounds, invariants (the loop's operand order)
    back_body = eliminate_dead(bb.build(results))

    inits = []
    for j in diff_c:
        part = g[j] if j < len(g) else None
        inits.append(e.zeros(carried_init[j].tensor_type.shape, _strong(carried_init[j].tensor_type).dtype)
                     if part is None else e.cast(part, ct_in[len(inits)]))
    accs = [e.zeros(invariants[m].tensor_type.shape, _strong(invariants[m].tensor_type).dtype) for m in diff_inv]
    loop = e.op("loop", e.const(0), trips, e.const(1), *inits, *accs, *hists, *runtime, *invariants,
                regions=(back_body,), carried=len(inits) + len(accs))
    HISTORIES[loop] = History(len(inits) + len(accs), history.trips, recorded=False)
    result: list = [None] * len(node.inputs)
    for n, j in enumerate(diff_c):
        result[lead_in + j] = e.op("tuple_get", loop, index=n)
    for n, m in enumerate(diff_inv):
        result[first_inv + m] = e.op("tuple_get", loop, index=len(diff_c) + n)
    return result


def _reverse_bounds(e: Emitter, bb: GraphBuilder, node: Node, history: History, r: Node
                    ) -> tuple[Node, Node, Node | None, list[Node]]:
    """The backward loop's trip count (a node of the enclosing graph), and in its body ``bb`` (index ``r``) the
    forward iteration ``t = trips - 1 - r`` it undoes and, for a ``loop``, that iteration's index. Bounds the trace
    knows are constants in the body; the others become inputs of the body (added to ``bb`` after its histories),
    fed by the returned enclosing-graph nodes, which the backward loop passes before the invariants."""
    runtime: list[Node] = []

    def bound(value: int | None, outer: Any, name: str) -> Node:
        if value is not None:
            return bb.const(value)
        outer = outer()
        runtime.append(outer)
        return bb.input(outer.type, name)

    if history.trips is not None:
        trips: Node = e.const(history.trips)
    elif history.count is not None:
        trips = history.count
    else:  # a backward loop being transposed (jvp): loop(0, trips, 1)
        trips = node.inputs[1]
    known = None if history.trips is None else history.trips - 1
    t = bb.op("subtract", bound(known, lambda: e.sub(trips, 1), "last"), r)
    if node.op != "loop":
        return trips, t, None, runtime
    start = bound(_constant_int(node.inputs[0]), lambda: node.inputs[0], "start")
    step = bound(_constant_int(node.inputs[2]), lambda: node.inputs[2], "step")
    return trips, t, bb.op("add", start, bb.op("multiply", t, step)), runtime


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
