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


def lower(node: Node, known_nonneg: set[Node], floors: dict[Node, int]) -> int | None:
    """An inclusive lower bound of an integer scalar, when one is known: constants, values proven >= 0, known
    floors (a while slot after its loop), and ``x + c`` / ``x - c`` of those."""
    value = const_int(node)
    if value is not None:
        return value
    if node in floors:
        return floors[node]
    if nonneg(node, known_nonneg):
        return 0
    if node.op in ("add", "subtract") and len(node.inputs) == 2:
        c = const_int(node.inputs[1])
        low = lower(node.inputs[0], known_nonneg, floors)
        if c is not None and low is not None:
            return low + c if node.op == "add" else low - c
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


def when_true(pred: Node, facts: dict[Node, int]) -> tuple[set[Node], dict[Node, int]]:
    """What holds wherever the bool scalar ``pred`` is true: integer scalars proven ``>= 0`` and exclusive upper
    bounds, from ``x >= c`` / ``x > c`` (c >= -1), ``x < y`` / ``x <= y`` (y bounded), ``a and b`` and the
    short-circuit ``cond(a, b, False)`` a ``while j >= 0 and x[j] > key`` test becomes. ``facts`` are the upper
    bounds known outside (for ``y``)."""
    low: set[Node] = set()
    high: dict[Node, int] = {}
    op, ins = pred.op, pred.inputs
    if op in ("greater_equal", "greater", "less", "less_equal") and len(ins) == 2:
        a, b = ins if op in ("greater_equal", "greater") else (ins[1], ins[0])  # now "a >= b" or "a > b"
        strict = op in ("greater", "less")
        c = const_int(b)
        if c is not None and c >= (-1 if strict else 0) and is_int(a):
            low.add(a)
        bound = upper(a, facts)  # b < a (or <=): b's exclusive bound from a's
        if bound is not None and is_int(b):
            high[b] = bound - 1 if strict else bound
    elif op == "logical_and":
        for i in ins:
            more_low, more_high = when_true(i, facts)
            low |= more_low
            high.update(more_high)
    elif op == "tuple_get" and ins[0].op == "cond":
        cond, k = ins[0], pred.attrs["index"]
        then, other = cond.regions
        out = other.outputs[k]
        if out.op == "const" and not bool(out.attrs["value"]):  # ``a and b``: true only through the then-branch
            low, high = when_true(cond.inputs[0], facts)
            inner_low, inner_high = when_true(then.outputs[k], facts)
            for inp, operand in zip(then.inputs, cond.inputs[1:]):
                if inp in inner_low:
                    low.add(operand)
                if inp in inner_high:
                    high[operand] = min(inner_high[inp], high.get(operand, inner_high[inp]))
    return low, high


def is_int(node: Node) -> bool:
    t = node.type
    return isinstance(t, TensorType) and t.shape == () and t.dtype.kind in "iu"
