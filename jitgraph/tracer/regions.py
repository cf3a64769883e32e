"""Loops traced once into ``loop`` regions instead of being unrolled.

A ``for`` over ``range(...)`` whose trip count exceeds :data:`UNROLL_MAX`, or whose bounds are symbolic (computed
from array data, like CSR row pointers), is traced *once*, with the induction variable as a symbolic Python int:

1. the body runs once symbolically to discover what it changes (locals rebound, array storages written);
2. it runs again with those values as carried body inputs (types widened once if, say, ``s = 0`` becomes a
   float64), and its final values become the body's outputs;
3. a ``loop`` node is recorded in the enclosing graph and the changed locals and storages are rebound to its
   results, so code after the loop (and views of the same storages) see them.

A short loop (a known trip count of at most :data:`UNROLL_MAX`) is unrolled instead when its body does not index
with the loop variable, or when its body calls NumPy (:func:`_calls_numpy`). A ``break``/``return`` inside the
body, a side effect on a Python object, or a branch on the induction variable makes the attempt fail; the tracer's state is restored and the loop is unrolled as before when its trip count is
known (so nothing that traced before stops tracing), or the call falls back with the reason when it is not.

Entry points, called by the opcode handlers and the builtins table: ``GET_ITER`` asks :func:`wants_region` and
pushes a :class:`RegionIter`, ``FOR_ITER`` hands one to :func:`for_iter`, and ``range(...)`` with a traced bound is
:func:`symbolic_range`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.ir.ops import get_op
from jitgraph.ir.ops.control import INDEX_TYPE, RegionBuilder, _project, _resignature
from jitgraph.ir.types import TensorType
from jitgraph.tracer import python_ints
from jitgraph.tracer.arrays import array_getitem
from jitgraph.tracer.bytecode import Instr
from jitgraph.tracer.context import GraphBreak, TraceContext
from jitgraph.tracer.iteration import MAX_UNROLL, iterate
from jitgraph.tracer.region_body import Snapshot, carriable, enter, fresh_version, kind_of, step, value_node, widen
from jitgraph.tracer.values import Buffer, TArray

if TYPE_CHECKING:
    from jitgraph.tracer.frame import Frame

UNROLL_MAX = 16
"""The longest known trip count a loop is unrolled at when a region would cost more than the copies of its body:
a body that indexes with nothing of the loop's, or one that calls NumPy (:func:`_calls_numpy`). Sixteen copies of
a body of tens of ops keep the graph in the hundreds of nodes (traced and compiled in milliseconds each), while
a per-iteration cost that stays in a region grows with the trip count; past it the region's one copy wins."""
_log = logging.getLogger("jitgraph.regions")


@dataclass(eq=False)
class SymRange:
    """``range(start, stop, step)`` with at least one bound that is a traced integer."""

    start: Any
    stop: Any
    step: Any


@dataclass(eq=False)
class RegionIter:
    """What GET_ITER pushes for a loop to be traced as a region (FOR_ITER recognises it): over a range, or over
    the elements of a 1-D array (``for byte in data``: the body sees ``data[i]``)."""

    rng: range | SymRange | TArray


def symbolic_range(tx: TraceContext, *args: Any) -> SymRange:
    """``range(...)`` with at least one bound that is a traced value (NumPy's errors for non-integers)."""
    for a in args:
        if isinstance(a, TArray):
            t = tx.type_of(a)
            if t.shape != () or t.dtype.kind not in "iu":
                err = TypeError(f"'{t.dtype}' object cannot be interpreted as an integer")
                tx.graph_break(str(err), err)
        elif not isinstance(a, int | np.integer):
            err = TypeError(f"'{type(a).__name__}' object cannot be interpreted as an integer")
            tx.graph_break(str(err), err)
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    return SymRange(start, stop, step)


class _Unroll(Exception):
    """A short loop whose body does not index arrays with the loop variable, or calls NumPy: unrolling is better."""


def wants_region(value: Any) -> bool:
    """Whether ``for`` over ``value`` is tried as a region: a symbolic range, a range of more than one step, or an
    array (:func:`for_iter` decides: a 1-D array of more than one element)."""
    return isinstance(value, SymRange | TArray) or (type(value) is range and len(value) > 1)


def _indexes_with(graph_nodes: list[Node], induction: Node) -> bool:
    """Whether the induction variable reaches an index operand (directly or through scalar arithmetic)."""
    derived = {induction}
    for node in graph_nodes:
        if node.op in ("getitem", "setitem", "scatter_add"):
            first = 2 if node.op != "getitem" else 1
            if any(i in derived for i in node.inputs[first:]):
                return True
        elif node.regions:
            return True  # a nested region: keep the outer loop a region too (its body is not unrollable cheaply)
        elif any(i in derived for i in node.inputs) and node.type.shape == ():  # type: ignore[union-attr]
            derived.add(node)
    return False


def _calls_numpy(graph_nodes: list[Node]) -> bool:
    """Whether the body itself runs an op through NumPy's own routine (LAPACK, sorts, histograms: ``Op.runs_numpy``).

    Why unroll then: compiled code cannot inline such a call, so inside a loop region every iteration leaves the
    compiled loop for it (Numba's object mode costs a few microseconds per call, more than Python's own call:
    the CPU backend runs a body of few other ops eagerly rather than so). Unrolled, the calls sit in straight-line
    code, between compiled kernels, as they did before loops became regions (gmm_e_step's ``inv``/``det`` per
    component). A call inside a nested region is not counted: unrolling the outer loop would leave it in a loop.
    """
    return any(get_op(node.op).runs_numpy for node in graph_nodes)


def _run_body(frame: Frame, head: int, exit_pc: int) -> None:
    """Interpret instructions from ``frame.pc`` until the back-edge returns to the loop head ``head``."""
    while frame.pc != head:
        if not head < frame.pc < exit_pc:
            frame.tx.graph_break("early exit (break) from a loop traced as a region")
        step(frame, "a loop region", "return inside a loop traced as a region")


def _trace_body(frame: Frame, head: int, exit_pc: int, names: list[str], buffers: list[Buffer],
                types: list[TensorType], kinds: list[str], counts_up_from_nonneg: bool = False,
                elements: TArray | None = None, index_bound: int | None = None
                ) -> tuple[RegionBuilder, Node, list[Node], list[Any]]:
    """One pass over the body with ``names``/``buffers`` as carried inputs of ``types``; returns the region
    builder, the induction input, the carried inputs and the final values (TArrays or plain numbers)."""
    tx = frame.tx
    rb = enter(frame)
    induction = rb.fixed_input(INDEX_TYPE, "i")
    if counts_up_from_nonneg:  # a fact for the symbolic-slice lowering (index >= 0, so no wrap-around)
        tx.regions.nonneg.add(induction)
    tx.regions.int_bounds[induction] = index_bound  # its arithmetic needs no overflow check (python_ints.py)
    carried = [rb.fixed_input(t, name) for t, name in zip(types, names + [f"buf{b.uid}" for b in buffers])]
    for name, node, kind in zip(names, carried, kinds):
        frame.locals[name] = TArray(Buffer(node), (), kind)
    for buffer, node in zip(buffers, carried[len(names):]):
        buffer.node = node
        buffer.version = fresh_version()
    index = TArray(Buffer(induction), (), "py")
    frame.push(index if elements is None else array_getitem(tx, elements, index))
    _run_body(frame, head, exit_pc)
    finals = [frame.locals.get(name) for name in names] + [b.node for b in buffers]
    return rb, induction, carried, finals


def _read_outside(frame: Frame, name: str, head: int, exit_pc: int) -> bool:
    """Whether the code reads local ``name`` outside the loop ``[head, exit_pc)``: a variable first bound in the
    body is not carried out of a region, so a later read must see the loop unrolled (or break with the reason)."""
    return any(ins.op == "LOAD_FAST" and ins.argval == name and not head <= k < exit_pc
               for k, ins in enumerate(frame.program.instrs))


def _counts_up_from_nonneg(tx: TraceContext, rng: range | SymRange) -> bool:
    start, stride = rng.start, rng.step
    if isinstance(stride, TArray) or stride <= 0:
        return False
    if isinstance(start, TArray):
        return tx.type_of(start).dtype.kind in "ub" or tx.read(start) in tx.regions.nonneg
    return start >= 0


def trace_loop(frame: Frame, ins: Instr, rng: range | SymRange, elements: TArray | None = None) -> None:
    """FOR_ITER on a :class:`RegionIter`: record the whole loop as one ``loop`` node, then jump past it."""
    tx = frame.tx
    head, exit_pc = frame.pc - 1, ins.target
    state = Snapshot(frame)
    bounds = [value_node(tx, v) for v in (rng.start, rng.stop, rng.step)]
    # Pass 1: discover which locals and storages the body changes.
    up = _counts_up_from_nonneg(tx, rng)
    index_bound = python_ints.induction_bound(tx, rng.start, rng.stop, rng.step)
    rb, induction, _, _ = _trace_body(frame, head, exit_pc, [], [], [], [], up, elements, index_bound)
    if state.python_objects_changed():
        state.restore(frame)
        if isinstance(rng, SymRange):
            tx.graph_break("a loop with a side effect on a Python object (list, dict, closure variable)")
        raise _Unroll
    if not isinstance(rng, SymRange) and len(rng) <= UNROLL_MAX and (not _indexes_with(rb.nodes, induction)
                                                                     or _calls_numpy(rb.nodes)):
        state.restore(frame)
        raise _Unroll
    first_bound = [n for n in frame.locals if n not in state.locals and _read_outside(frame, n, head, exit_pc)]
    if first_bound:
        state.restore(frame)
        if isinstance(rng, SymRange):
            tx.graph_break(f"{first_bound[0]!r} is first bound inside a loop traced as a region and read after it "
                           "(a region carries only variables bound before the loop)")
        raise _Unroll
    changed = [n for n, v in frame.locals.items() if n in state.locals and v is not state.locals[n]]
    written = state.written()
    state.restore(frame)
    for _ in range(3):
        olds = [state.locals[n] for n in changed]
        if not all(carriable(v) for v in olds):
            bad = next(n for n, v in zip(changed, olds) if not carriable(v))
            tx.graph_break(f"the loop rebinds {bad!r}, a {type(olds[0]).__name__}, which a loop region cannot carry")
        inits = [value_node(tx, v) for v in olds] + [b.node for b in written]
        types = [n.tensor_type for n in inits]
        kinds = [kind_of(v, t) for v, t in zip(olds, types)]
        rb, _, _, finals = _trace_body(frame, head, exit_pc, changed, written, types, kinds, up, elements,
                                       index_bound)
        if state.python_objects_changed():
            state.restore(frame)
            tx.graph_break("a loop with a side effect on a Python object (list, dict, closure variable)")
        more = [n for n, v in frame.locals.items() if n in state.locals and n not in changed
                and v is not state.locals[n]]
        more_written = [b for b, node in state.nodes if b not in written and b.node is not node]
        outs = [value_node(tx, v) if not isinstance(v, Node) else v for v in finals]
        out_types = [o.tensor_type for o in outs]
        same = all((a.shape, a.dtype, a.weak) == (b.shape, b.dtype, b.weak) for a, b in zip(types, out_types))
        state.restore(frame)
        if more or more_written:
            changed, written = changed + more, written + more_written
            continue
        if not same:
            widened = [widen(tx, a, b) for a, b in zip(types, out_types)]
            state_inits = list(zip(changed, widened[:len(changed)]))
            for name, t in state_inits:
                if t != types[changed.index(name)]:
                    widened_value = tx.op("astype", value_node(tx, state.locals[name]), dtype=t.dtype)
                    state.locals[name] = tx.fresh(widened_value, "py" if t.weak else "scalar")
            if widened[len(changed):] != types[len(changed):]:
                tx.graph_break("a loop changes the dtype of an array it updates")
            continue
        graph = rb.finish(outs)
        graph = _resignature(graph, 1 + len(inits), rb.captured, rb.captured)
        node = tx.op("loop", *bounds, *inits, *rb.captured, regions=(graph,), carried=len(inits))
        results = _project(tx.builder, node)
        for name, kind, value in zip(changed, kinds, results):
            frame.locals[name] = TArray(Buffer(value), (), kind)
        for buffer, value in zip(written, results[len(changed):]):
            buffer.node = value
            buffer.version = fresh_version()
        frame.stack[:] = state.stack[:-1]  # the body left the stack as it found it; FOR_ITER's exit pops the iterator
        frame.pc = exit_pc
        return
    tx.graph_break("the values a loop carries do not settle on one type")


def for_iter(frame: Frame, ins: Instr, top: RegionIter) -> bool:
    """``FOR_ITER`` on a :class:`RegionIter`: trace the loop as a region (True), or, when that fails for a range
    whose trip count is known, restore the tracer and put a plain iterator in its place to unroll (False)."""
    elements = top.rng if isinstance(top.rng, TArray) else None
    rng = _element_range(frame.tx, elements) if elements is not None else top.rng
    if rng is None:
        frame.stack[-1] = iterate(frame.tx, elements)  # a 0-d, one-element or N-D array: unrolled over its rows
        return False
    state = Snapshot(frame)
    try:
        trace_loop(frame, ins, rng, elements)
    except (GraphBreak, _Unroll) as exc:
        if isinstance(rng, SymRange):
            raise
        if isinstance(exc, GraphBreak) and len(rng) > MAX_UNROLL:
            raise  # too long to unroll: the reason the region failed is the one to give
        if isinstance(exc, GraphBreak):
            _log.debug("loop at %s:%s unrolled instead of traced as a region: %s", exc.filename, exc.lineno,
                       exc.reason)
        state.restore(frame)  # fall back to unrolling, exactly what the tracer did before regions
        frame.stack[-1] = iter(rng) if elements is None else iterate(frame.tx, elements)
        return False
    return True


def _element_range(tx: TraceContext, elements: TArray) -> range | None:
    """The index range of a ``for`` over a 1-D array's elements, or None where it is iterated by unrolling (short
    arrays; rows of an N-D array are views, which an indexed read inside a region would copy)."""
    t = tx.type_of(elements)
    if elements.kind != "array" or t.ndim != 1 or t.shape[0] <= UNROLL_MAX:
        return None  # a short array unrolls, as it always did
    return range(t.shape[0])
