"""Value ranges of integer scalars: what the driver proves about indices and integer arithmetic.

Numba does not bounds-check by default, and turning its checks on everywhere costs time in exactly the loops this
backend exists for. Most indices are induction variables of ``range(0, n)`` over the same ``n`` they index, so a
tiny interval analysis (non-negative, below a known exclusive bound) proves them; every other index is checked
(:mod:`.indexing`). The same facts bound the magnitude of integer arithmetic: an int64 sum proven to fit needs no
wrap-around spelling (see ``EmitContext.proven_in_range`` in :mod:`jitgraph.backends.emitter_table`).

The functions here read facts and emit nothing: ``nonneg`` holds the integer scalars proven ``>= 0`` and ``upper``
the exclusive upper bounds known so far (the induction variables of enclosing loops).
"""

from __future__ import annotations

from jitgraph.backends.cpu.scalar.depend import const_int, nonneg
from jitgraph.ir.graph import Node
from jitgraph.ir.ops.indexing import Operand, expand_spec
from jitgraph.ir.types import TensorType

INT64_LIMIT = 2 ** 63


def upper(node: Node, facts: dict[Node, int]) -> int | None:
    """An exclusive upper bound of an integer scalar, when one is known."""
    value = const_int(node)
    if value is not None:
        return value + 1
    if node in facts:
        return facts[node]
    if node.op == "minimum":
        known = [u for u in (upper(i, facts) for i in node.inputs) if u is not None]
        return min(known) if known else None
    if node.op in ("maximum", "where"):
        bounds = [upper(i, facts) for i in (node.inputs[1:] if node.op == "where" else node.inputs)]
        return None if None in bounds else max(bounds)  # type: ignore[type-var]
    if node.op == "check":
        return upper(node.inputs[0], facts)
    if node.op in ("add", "subtract") and len(node.inputs) == 2:
        a, b = node.inputs
        cb, ca = const_int(b), const_int(a)
        if cb is not None:
            ua = upper(a, facts)
            return None if ua is None else ua + (cb if node.op == "add" else -cb)
        if ca is not None and node.op == "add":
            ub = upper(b, facts)
            return None if ub is None else ub + ca
    return None


def induction_bound(stop: Node, facts: dict[Node, int]) -> int | None:
    """The exclusive upper bound of an induction variable counting up to ``stop``, when one is known."""
    bound = upper(stop, facts)
    return None if bound is None else bound - 1


def magnitude(node: Node, known_nonneg: set[Node], facts: dict[Node, int], known: dict[Node, int],
              depth: int = 0) -> int | None:
    """An exclusive bound on ``|value|`` of an integer scalar, when one is known (None: unknown). ``known`` holds
    the bounds of region inputs, proven outside the region (:func:`.regions.bind`)."""
    t = node.type
    if not isinstance(t, TensorType) or t.shape != () or t.dtype.kind not in "iub" or depth > 32:
        return None
    if t.dtype.kind == "b":
        return 2
    if t.dtype.itemsize < 8:
        return 2 ** (8 * t.dtype.itemsize)
    value = const_int(node)
    if value is not None:
        return abs(value) + 1
    if node in known:
        return known[node]
    bound = upper(node, facts)
    if bound is not None and nonneg(node, known_nonneg):
        return max(bound, 1)
    parts = node.inputs[1:] if node.op == "where" else node.inputs[:1] if node.op == "check" else node.inputs
    if node.op not in ("add", "subtract", "multiply", "minimum", "maximum", "where", "check", "negative") \
            or not parts:
        return None
    sizes = [magnitude(i, known_nonneg, facts, known, depth + 1) for i in parts]
    if None in sizes:
        return None
    if node.op in ("add", "subtract"):
        return sum(sizes)  # type: ignore[arg-type]
    if node.op == "multiply":
        return sizes[0] * sizes[1]  # type: ignore[operator]
    return max(sizes)  # type: ignore[type-var]


def fits_int64(node: Node, known_nonneg: set[Node], facts: dict[Node, int], known: dict[Node, int]) -> bool:
    """Whether an int64 result is proven not to overflow (so the plain, undefined-on-overflow operator is exact)."""
    bound = magnitude(node, known_nonneg, facts, known)
    return bound is not None and bound < INT64_LIMIT


def proven(x: Node, spec: tuple, operands: tuple[Node, ...], known_nonneg: set[Node], facts: dict[Node, int]) -> bool:
    """Whether every scalar Operand entry of ``x[spec]`` is proven in ``[0, size)`` (no check needed at all)."""
    full = expand_spec(x.tensor_type.ndim, tuple(spec))
    dim = 0
    for entry in full:
        if entry is None:
            continue
        if isinstance(entry, Operand):
            index, size = operands[entry.k], x.tensor_type.shape[dim]
            bound = upper(index, facts)
            if not (nonneg(index, known_nonneg) and bound is not None and bound <= size):
                return False
        dim += 1
    return True
