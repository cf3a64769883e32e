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


def proven(em: Emitter, x: Node, spec: tuple, operands: tuple[Node, ...]) -> bool:
    """Whether every scalar Operand entry of ``x[spec]`` is proven in ``[0, size)`` (no check needed at all)."""
    full = expand_spec(x.tensor_type.ndim, tuple(spec))
    dim = 0
    for entry in full:
        if entry is None:
            continue
        if isinstance(entry, Operand):
            index, size = operands[entry.k], x.tensor_type.shape[dim]
            bound = upper(index, em.upper)
            if not (nonneg(index, em.nonneg) and bound is not None and bound <= size):
                return False
        dim += 1
    return True


def check(em: Emitter, x: Node, spec: tuple, operands: tuple[Node, ...], indent: int) -> dict[int, str]:
    """Emit ``IndexError`` checks for the scalar Operand entries of ``x[spec]`` that are not proven in range.

    The returned mapping names, per checked Operand position ``k``, the variable the access uses instead. Serially
    that is the index wrapped NumPy's way into a ``np.uint64``: the common case costs one unsigned compare (a
    negative index becomes a huge unsigned value, so ``u >= size`` catches both ends), and Numba adds no wraparound
    select to an unsigned index (a signed one gets one per access, which also blocks vectorisation). One index
    checked against one size is checked once per block (``data[k]`` and ``indices[k]`` in CSR share it).

    Inside a prange body a ``raise`` would make Numba run the loop serially (a second exit), so there a bad index
    sets the loop's error flag (raised right after the loop) and the access uses a clamped copy of the index.
    """
    full = expand_spec(x.tensor_type.ndim, tuple(spec))
    safe: dict[int, str] = {}
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
                key = (var, size, dim)
                if key in em.scope.checked:
                    safe[entry.k] = em.scope.checked[key]
                elif em.prange_flag is not None and size > 0:
                    em.flag_used = True
                    name = f"ix{len(em.lines)}"
                    em.write(indent, f"{name} = {var} if -{size} <= {var} < {size} else 0")
                    em.write(indent, f"if not -{size} <= {var} < {size}:")
                    em.write(indent + 1, f"{em.prange_flag}[0] = True")
                    safe[entry.k] = em.scope.checked[key] = name
                elif em.prange_flag is None:
                    safe[entry.k] = em.scope.checked[key] = _checked_index(em, var, size, dim, indent)
                else:  # size 0 inside a prange: every index is out of bounds
                    em.write(indent, f"if not -{size} <= {var} < {size}:")
                    em.write(indent + 1, f'raise IndexError("index out of bounds for axis {dim} with size {size}")')
        dim += 1
    return safe


def _checked_index(em: Emitter, var: str, size: int, dim: int, indent: int) -> str:
    """``ixN = np.uint64(var)``, wrapped when negative; IndexError (NumPy's) when outside ``[-size, size)``."""
    name = f"ix{len(em.lines)}"
    em.write(indent, f"{name} = np.uint64({var})")
    em.write(indent, f"if {name} >= {size}:  # negative (wraps around) or out of bounds")
    em.write(indent + 1, f"if not -{size} <= {var} < 0:")
    em.write(indent + 2, f'raise IndexError("index out of bounds for axis {dim} with size {size}")')
    em.write(indent + 1, f"{name} = np.uint64({var} + {size})")
    return name
