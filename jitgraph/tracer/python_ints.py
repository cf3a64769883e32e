"""Python ints in a graph: int64 values that must not wrap.

A Python int computed from array data (``h = h * 31 + int(x[i])``, a product of counts) is an int64 in compiled
code, and int64 arithmetic wraps where Python's ints grow: 3e6 cubed would come back as 8553255926290448384.
So ``+``, ``-`` and ``*`` of two Python ints get a run-time check (``check`` with ``error="RerunEagerly"``) that
the operands are small enough for the result to fit; where it fails, the driver runs the call eagerly and Python
computes the big int (errors.RerunEagerly; the check is a raising node, so the arguments are as before the call).

Most Python-int arithmetic in traced code is index arithmetic (``i - 1``, ``i * n + j``) on loop variables and
sizes, which cannot overflow, and a check in every inner loop would cost time. So each value gets a trace-time
bound on its magnitude where one is known -- constants, ``int()`` of narrow integer dtypes, the induction variable
of a ``range`` (its start, stop and step), sizes -- and propagated through ``+ - *``; an op whose bound is below
2**63 needs no check. The rest (loop-carried values, ``int()`` of int64 data, function arguments) are checked.

Two assumptions, both about what a machine can run: a dimension of an array is below 2**48 (``SIZE_BOUND``), and
a ``range`` loop whose stop is not known at trace time runs fewer than 2**48 iterations (days of run time), so
its variable stays within ``|start| + 2**48 * |step|``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.ir.ops.control import RegionBuilder
from jitgraph.ir.symbols import Sym, SymExpr
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.values import TArray

INT64_LIMIT = 2 ** 63
SIZE_BOUND = 2 ** 48  # a dimension of an array the code loops over or allocates
TRIP_BOUND = 2 ** 48  # iterations of a loop whose stop is not known at trace time
_CHECKED_OPS = {"add", "subtract", "multiply"}
_HALF = 2 ** 62  # operands below this in magnitude add without overflow
_MESSAGE = "a Python int beyond the int64 range: compiled code has no Python big ints"


def bound(tx: TraceContext, node: Node) -> int | None:
    """An upper bound on ``abs(value)`` of an integer scalar ``node`` known at trace time, else None."""
    known = tx.regions.int_bounds
    if node in known:
        return known[node]
    try:
        found = _bound(tx, node)
    except RecursionError:  # a long chain of ops nothing memoised: no bound, so a check (never a wrong answer)
        found = None
    known[node] = found
    return found


def _bound(tx: TraceContext, node: Node) -> int | None:
    op = node.op
    if op == "const":
        value = node.attrs["value"]
        if type(value) in (Sym, SymExpr):
            return SIZE_BOUND if type(value) is Sym else None
        value = np.asarray(value)
        return int(np.max(np.abs(value.astype(object)))) if value.size and value.dtype.kind in "biu" else None
    if op in ("to_python", "astype"):
        source = node.inputs[0].type
        dtype = getattr(source, "dtype", None)
        if dtype is None or dtype.kind not in "biu":
            return None
        return 1 if dtype.kind == "b" else 2 ** (8 * dtype.itemsize) if dtype.itemsize < 8 else None
    if op == "check":
        return bound(tx, node.inputs[0])
    if op == "input":  # a loop body's capture of an enclosing value (an outer loop's variable): that value's bound
        region = getattr(tx.builder, "region", None)
        while isinstance(region, RegionBuilder):
            outer = region.outer_of(node)
            if outer is not None:
                return bound(tx, outer)
            region = region.parent
        return None
    if op in _CHECKED_OPS and len(node.inputs) == 2:
        a, b = (bound(tx, i) for i in node.inputs)
        if a is None or b is None:
            return None
        return a * b if op == "multiply" else a + b
    if op in ("negative", "absolute", "positive"):
        return bound(tx, node.inputs[0])
    if op in ("minimum", "maximum") and len(node.inputs) == 2:
        a, b = (bound(tx, i) for i in node.inputs)
        return None if a is None or b is None else max(a, b)
    return None


def induction_bound(tx: TraceContext, start: Any, stop: Any, step: Any) -> int | None:
    """A bound on ``abs(i)`` for ``i`` in ``range(start, stop, step)`` (each a Python int or a traced value)."""

    def of(v: Any) -> int | None:
        if isinstance(v, int | np.integer):
            return abs(int(v))
        return bound(tx, tx.read(v)) if isinstance(v, TArray) else None

    b_start, b_stop, b_step = of(start), of(stop), of(step)
    if b_start is not None and b_stop is not None:
        return max(b_start, b_stop) + (b_step or 0) if b_step is not None else None
    if b_start is not None and b_step is not None:
        return b_start + TRIP_BOUND * b_step
    return None


def checked(tx: TraceContext, node: Node) -> Node:
    """``node``, a ``+ - *`` of two Python ints, behind a run-time check that it did not wrap, unless the bounds
    of its operands prove it fits."""
    if node.op not in _CHECKED_OPS or len(node.inputs) != 2:
        return node
    a, b = node.inputs
    ba, bb = bound(tx, a), bound(tx, b)
    if ba is not None and bb is not None and (ba * bb if node.op == "multiply" else ba + bb) < INT64_LIMIT:
        return node
    if node.op == "multiply":
        pred = _product_fits(tx, a, b, ba, bb)
    else:  # each operand below 2**62 in magnitude: the sum or difference is below 2**63
        parts = [_within(tx, x, _HALF) for x, bx in ((a, ba), (b, bb)) if bx is None or bx >= _HALF]
        pred = parts[0] if len(parts) == 1 else tx.op("logical_and", *parts)
    return tx.op("check", node, pred, message=_MESSAGE, error="RerunEagerly")


def _product_fits(tx: TraceContext, a: Node, b: Node, ba: int | None, bb: int | None) -> Node:
    if bb is not None and bb < _HALF or ba is not None and ba < _HALF:
        big, small = (a, bb) if bb is not None and (ba is None or bb <= ba) else (b, ba)
        return _within(tx, big, _HALF // max(small or 1, 1))  # |big| < 2**62 / |small|: the product is below 2**62
    # Neither bounded: the float64 product is within a relative 2**-52 of the exact one.
    product = tx.op("multiply", tx.op("astype", a, dtype=np.dtype(np.float64)),
                    tx.op("astype", b, dtype=np.dtype(np.float64)))
    return tx.op("less", tx.op("absolute", product), tx.builder.const(np.float64(_HALF)))


def _within(tx: TraceContext, x: Node, limit: int) -> Node:
    """``-limit < x < limit`` (two comparisons: ``abs`` of int64's minimum wraps)."""
    return tx.op("logical_and", tx.op("less", x, tx.node(limit)), tx.op("greater", x, tx.node(-limit)))
