"""Index bounds: prove a scalar index in range, or emit a check that raises NumPy's IndexError.

Numba does not bounds-check by default, and turning its checks on everywhere costs time in exactly the loops this
backend exists for. Most indices are induction variables of ``range(0, n)`` over the same ``n`` they index, so a
tiny interval analysis (non-negative, below a known exclusive bound) proves them; every other index is checked
with one compare, so a bad index raises like eager NumPy instead of reading garbage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jitgraph.backends.cpu.scalar.depend import _const, nonneg
from jitgraph.ir.graph import Node
from jitgraph.ir.ops.indexing import Operand, expand_spec

if TYPE_CHECKING:
    from jitgraph.backends.cpu.scalar.emit import Emitter


def upper(node: Node, facts: dict[Node, int]) -> int | None:
    """An exclusive upper bound of an integer scalar, when one is known."""
    value = _const(node)
    if value is not None:
        return value + 1
    if node in facts:
        return facts[node]
    if node.op == "minimum":
        known = [u for u in (upper(i, facts) for i in node.inputs) if u is not None]
        return min(known) if known else None
    if node.op in ("maximum", "where"):
        known = [upper(i, facts) for i in (node.inputs[1:] if node.op == "where" else node.inputs)]
        return None if None in known else max(known)  # type: ignore[type-var]
    if node.op == "check":
        return upper(node.inputs[0], facts)
    if node.op in ("add", "subtract") and len(node.inputs) == 2:
        a, b = node.inputs
        cb, ca = _const(b), _const(a)
        if cb is not None:
            ua = upper(a, facts)
            return None if ua is None else ua + (cb if node.op == "add" else -cb)
        if ca is not None and node.op == "add":
            ub = upper(b, facts)
            return None if ub is None else ub + ca
    return None


def note_induction(em: Emitter, induction: Node, stop: Node) -> None:
    bound = upper(stop, em.upper)
    if bound is not None:
        em.upper[induction] = bound - 1


def check(em: Emitter, x: Node, spec: tuple, operands: tuple[Node, ...], indent: int) -> dict[Node, str]:
    """Emit ``IndexError`` checks for the scalar Operand entries of ``x[spec]`` that are not proven in range.

    Inside a prange body a ``raise`` would make Numba run the loop serially (a second exit), so there a bad index
    sets the loop's error flag (raised right after the loop) and the access uses a clamped copy of the index;
    the returned mapping names those copies.
    """
    full = expand_spec(x.tensor_type.ndim, tuple(spec))
    safe: dict[Node, str] = {}
    dim = 0
    for entry in full:
        if entry is None:
            continue
        if isinstance(entry, Operand):
            index = operands[entry.k]
            size = x.tensor_type.shape[dim]
            bound = upper(index, em.upper)
            if not (nonneg(index, em.nonneg) and bound is not None and bound <= size):
                var = em.var[index]
                if em.prange_flag is not None and size > 0 and index not in safe:
                    em.flag_used = True
                    name = f"ix{len(em.lines)}"
                    em.write(indent, f"{name} = {var} if -{size} <= {var} < {size} else 0")
                    em.write(indent, f"if not -{size} <= {var} < {size}:")
                    em.write(indent + 1, f"{em.prange_flag}[0] = True")
                    safe[index] = name
                elif em.prange_flag is None or size == 0:
                    em.write(indent, f"if not -{size} <= {var} < {size}:")
                    em.write(indent + 1, f'raise IndexError("index out of bounds for axis {dim} with size {size}")')
        dim += 1
    return safe
