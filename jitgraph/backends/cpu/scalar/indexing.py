"""Emitters for indexing and views: ``getitem``, ``setitem``, ``transpose``/``reshape``/``broadcast_to``, and the
index checks that make a bad index raise NumPy's IndexError.

An index the bounds analysis (:mod:`.bounds`) proves in range is used as is; every other is checked with one
compare. ``setitem`` stores in place when the old array is dead (:meth:`.scope.Scope.dead_after`), else into a copy;
a slice region is stored by a loop nest (:func:`.loopnest.emit_store`).
"""

from __future__ import annotations

from jitgraph.backends.cpu.scalar import bounds, loopnest
from jitgraph.backends.cpu.scalar.core import Emitter
from jitgraph.backends.cpu.scalar.depend import nonneg
from jitgraph.backends.cpu.scalar.scope import is_array
from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Node
from jitgraph.ir.ops.indexing import Operand, expand_spec
from jitgraph.ir.printer import format_value


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
            bound = bounds.upper(index, em.upper)
            if not (nonneg(index, em.nonneg) and bound is not None and bound <= size):
                var = em.var[index]
                key = (var, size, dim)
                if key in em.scope.checked:
                    safe[entry.k] = em.scope.checked[key]
                elif em.prange_flag is not None and size > 0:
                    em.flag_used = True
                    name, n = f"ix{len(em.lines)}", em.size(size)
                    em.write(indent, f"{name} = {var} if -{n} <= {var} < {n} else 0")
                    em.write(indent, f"if not -{n} <= {var} < {n}:")
                    em.write(indent + 1, f"{em.prange_flag}[0] = True")
                    safe[entry.k] = em.scope.checked[key] = name
                elif em.prange_flag is None:
                    safe[entry.k] = em.scope.checked[key] = _checked_index(em, var, em.size(size), dim, indent)
                else:  # size 0 inside a prange: every index is out of bounds
                    em.write(indent, f"if not -{size} <= {var} < {size}:")
                    em.write(indent + 1, f'raise IndexError("index out of bounds for axis {dim} with size {size}")')
        dim += 1
    return safe


def _checked_index(em: Emitter, var: str, size: str, dim: int, indent: int) -> str:
    """``ixN = np.uint64(var)``, wrapped when negative; IndexError (NumPy's) when outside ``[-size, size)``.
    ``size`` is a literal or a run-time extent (compared as unsigned: Numba would compare uint64 with int64 as
    floats); the message names the size only when it is a literal (the source is shared across sizes)."""
    name = f"ix{len(em.lines)}"
    limit = size if size.isdigit() else f"np.uint64({size})"
    told = f" with size {size}" if size.isdigit() else ""
    em.write(indent, f"{name} = np.uint64({var})")
    em.write(indent, f"if {name} >= {limit}:  # negative (wraps around) or out of bounds")
    em.write(indent + 1, f"if not -{size} <= {var} < 0:")
    em.write(indent + 2, f'raise IndexError("index out of bounds for axis {dim}{told}")')
    em.write(indent + 1, f"{name} = np.uint64({var} + {size})")
    return name


def index_text(em: Emitter, spec: tuple, operands: tuple[Node, ...], safe: dict[int, str] | None = None) -> str:
    parts = []
    for e in spec:
        if isinstance(e, Operand):
            parts.append((safe or {}).get(e.k) or em.var[operands[e.k]])
        elif e is None:
            parts.append("None")
        elif isinstance(e, slice):
            parts.append(format_value(e) or ":")
        else:
            parts.append(format_value(e))
    return ", ".join(parts) if len(parts) != 1 else parts[0]


def emit_getitem(em: Emitter, node: Node, indent: int) -> str | None:
    x, *ops = node.inputs
    if any(is_array(o) for o in ops):
        raise UnsupportedError("advanced (integer-array) indexing is not supported in loop bodies")
    safe = check(em, x, node.attrs["spec"], tuple(ops), indent)
    text = f"{em.var[x]}[{index_text(em, node.attrs['spec'], tuple(ops), safe)}]"
    if not is_array(node):
        return text
    name = em.vname(node)
    em.write(indent, f"{name} = {text}")
    em.var[node] = name
    em.scope.set_roots(node, em.scope.roots[x], view=True)
    return None


def emit_setitem(em: Emitter, node: Node, indent: int) -> None:
    x, value, *ops = node.inputs
    if any(is_array(o) for o in ops):
        raise UnsupportedError("advanced (integer-array) index assignment is not supported in loop bodies")
    xt = x.tensor_type
    if xt.shape == ():
        raise UnsupportedError("setitem of a 0-d array is not supported in loop bodies")
    safe = check(em, x, node.attrs["spec"], tuple(ops), indent)
    target = em.var[x]
    if em.scope.dead_after(x, node):
        em.var[node] = target
        em.scope.set_roots(node, em.scope.roots[x])
    else:
        target = em.vname(node)
        em.write(indent, f"{target} = {em.var[x]}.copy()")
        em.var[node] = target
        em.scope.fresh(node, owned=True)
    if is_array(value) or any(isinstance(e, slice) or e is Ellipsis for e in node.attrs["spec"]) \
            or len(node.attrs["spec"]) < xt.ndim:
        loopnest.emit_store(em, target, node, indent, safe)
    else:
        index = index_text(em, node.attrs["spec"], tuple(ops), safe)
        em.write(indent, f"{target}[{index}] = {em.cast(value, xt.dtype)}")


def emit_view(em: Emitter, node: Node, indent: int) -> None:
    (x,) = node.inputs
    a = node.attrs
    # a full reversal is ``.T``, which Numba types F for C (and C for F): ``transpose(axes)`` would be layout A,
    # and an A operand keeps a product off BLAS
    reverse = node.op == "transpose" and tuple(a["axes"]) == tuple(range(x.tensor_type.ndim))[::-1]
    text = {"transpose": lambda: f"{em.var[x]}.T" if reverse else f"{em.var[x]}.transpose({tuple(a['axes'])!r})",
            "reshape": lambda: f"{em.var[x]}.reshape({em.shape_text(node.tensor_type.shape)})",
            "broadcast_to": lambda: f"np.broadcast_to({em.var[x]}, {em.shape_text(a['shape'])})"}[node.op]()
    name = em.vname(node)
    em.write(indent, f"{name} = {text}")
    em.var[node] = name
    em.scope.set_roots(node, em.scope.roots[x], view=True)
