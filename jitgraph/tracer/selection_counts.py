"""Where the Python ints of lazy selections may go (``len(x[m])``, ``np.unique(y).size``, ``sel.shape[0]``).

A cut hands the resumed trace the selected array, whose length is then a trace-time Python int: exact, unbounded,
and converted by NumPy's rules (NEP 50) wherever it meets an array. A lazy selection (selections.py) makes the
length a weak ``int64`` of the graph instead, which is exact only where Python's int and the graph's agree:

* as a result, in float arithmetic (``total / len(sel)``, ``X / len(classes)``), in comparisons, and mixed with
  8-byte integers, booleans or other such counts;
* in int arithmetic (``len(a) + len(b) - 1``, ``2 * len(sel)``) while the static bound on the value (a count is
  at most the size of its array) stays far from int64's range.

Elsewhere -- an ``int8`` array times ``len(sel)`` (NumPy raises OverflowError for a Python int beyond int8), a
count that indexes, shapes or enters a loop or branch region, or a product that could overflow -- the check below
retries the trace with that site cut, as for any other use selections.py does not support (resume.Retry). It runs
on the whole graph when the trace is complete (trace.py), since the readers of a value are known only then.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.types import TensorType
from jitgraph.tracer import resume
from jitgraph.tracer.context import TraceContext

LIMIT = 2**62  # a bound below this: every add or subtract of two such values still fits int64
COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
INT_ARITHMETIC = {"add", "subtract", "multiply", "floor_divide", "remainder", "negative", "absolute", "positive"}


@dataclass(frozen=True)
class Count:
    """A count made at lazy site ``site``: its ``to_python`` node and the static bound on its value."""

    node: Node
    bound: int
    site: int


def note(tx: TraceContext, node: Node, bound: int, site: int) -> None:
    """Remember a count for :func:`check` (the trace's ResumeState holds them, one list per pass)."""
    tx.resume.counts.append(Count(node, bound, site))


def check(tx: TraceContext, graph: Graph) -> None:
    """Raise resume.Retry for the site of the first count read in a way the graph's int64 could get wrong."""
    counts: list[Count] = tx.resume.counts if tx.resume is not None else []
    if not counts:
        return
    users = graph.users()
    bounds = {c.node: c.bound for c in counts}
    for count in counts:
        if not _safe(count.node, count.bound, users, bounds):
            raise resume.Retry(("selection", count.site))


def _safe(node: Node, bound: int, users: dict[Node, list[Node]], bounds: dict[Node, int]) -> bool:
    """Whether every reader of ``node`` (a weak int of magnitude at most ``bound``) computes what Python would."""
    for reader in users.get(node, ()):
        if reader.regions or not isinstance(reader.type, TensorType):
            return False
        if reader.op == "check":  # a run-time check passes its first operand through (ZeroDivisionError, ...)
            if reader.inputs[0] is node and not _safe(reader, bound, users, bounds):
                return False
            continue
        if OPS[reader.op].kind is not OpKind.ELEMENTWISE and reader.op != "to_python":
            return False
        others = [i for i in reader.inputs if i is not node]
        if any(_small_int(i) for i in others):
            return False  # NumPy converts the Python int to that dtype (OverflowError beyond it)
        t = reader.type
        if reader.op in COMPARISONS or reader.op == "to_python" or t.dtype.kind in "fcb" or not t.weak:
            continue  # a float, a truth value, or an 8-byte int array's own (wrapping) arithmetic, as in NumPy
        if t.dtype.kind != "i" or reader.op not in INT_ARITHMETIC:
            return False
        new = _bound(reader, bound, others, bounds)
        if new is None or new >= LIMIT or not _safe(reader, new, users, bounds):
            return False
    return True


def _small_int(node: Node) -> bool:
    t = node.type
    return isinstance(t, TensorType) and not t.weak and t.dtype.kind in "iu" and t.dtype.itemsize < 8


def _bound(reader: Node, bound: int, others: list[Node], bounds: dict[Node, int]) -> int | None:
    """A bound on an int result from the bounds of its operands: this value, other counts, weak int constants."""
    values = [bound]
    for other in others:
        if other in bounds:
            values.append(bounds[other])
        elif other.op == "const" and other.type.weak:
            values.append(abs(int(np.asarray(other.attrs["value"]))))
        else:
            return None  # another runtime int (an argument, a sum of counts): its magnitude is not known here
    if reader.op == "multiply":
        return int(np.prod([float(v) for v in values])) if all(v < LIMIT for v in values) else None
    if reader.op in ("floor_divide", "remainder"):
        return max(values)
    return sum(values)


__all__ = ["Count", "check", "note"]
