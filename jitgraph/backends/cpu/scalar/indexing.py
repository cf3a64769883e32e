"""Emitters for indexing and views: ``getitem``, ``setitem``, ``transpose``/``reshape``/``broadcast_to``, and the
index checks that make a bad index raise NumPy's IndexError.

An index the bounds analysis (:mod:`.bounds`) proves in range is used as is; every other is checked with one
compare. ``setitem`` stores in place when the old array is dead (:meth:`.scope.Scope.dead_after`), else into a copy;
a slice region is stored by a loop nest (:func:`.loopnest.emit_store`).

An index with integer-array operands (advanced indexing: a gather ``x[idx]``, a store of a scalar ``x[idx] = 0``)
is a loop nest over the result (:func:`_advanced`): each element of an index array is read, checked and wrapped
NumPy's way, then used, so no index array is ever materialised or sorted.
"""

from __future__ import annotations

import numpy as np

from jitgraph.backends.cpu.scalar import bounds, loopnest
from jitgraph.backends.cpu.scalar.core import Emitter, cast_text, dtype_ctor
from jitgraph.backends.cpu.scalar.depend import nonneg
from jitgraph.backends.cpu.scalar.loopnest import broadcast_index
from jitgraph.backends.cpu.scalar.scope import is_array
from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Node
from jitgraph.ir.ops.indexing import Operand, expand_spec, index_shape
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
        if isinstance(entry, Operand) and not is_array(operands[entry.k]):  # index arrays: element by element
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
        emit_gather(em, node, indent)
        return None
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
    advanced = any(is_array(o) for o in ops)
    if advanced and is_array(value):
        # NumPy assigns repeated indices "last value wins" in its own iterator's order (which follows the index
        # arrays' memory layout): a C-order loop nest could keep another value
        raise UnsupportedError("assigning an array through integer-array indices (x[idx] = values) is not supported "
                               "by the loop driver", hint="the graph runs on the eager backend instead")
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
    if advanced:
        _advanced(em, node, target, indent, safe)
    elif is_array(value) or any(isinstance(e, slice) or e is Ellipsis for e in node.attrs["spec"]) \
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


def emit_gather(em: Emitter, node: Node, indent: int) -> None:
    """``x[spec]`` with integer-array operands into a fresh C array of the node's (NumPy's) shape and x's dtype."""
    t = node.tensor_type
    x, *ops = node.inputs
    safe = check(em, x, node.attrs["spec"], tuple(ops), indent)
    name = em.vname(node)
    em.write(indent, f"{name} = np.empty({em.shape_text(t.shape)}, {dtype_ctor(t.dtype)})")
    _advanced(em, node, name, indent, safe)
    em.var[node] = name
    em.scope.fresh(node, owned=True)


def _advanced(em: Emitter, node: Node, target: str, indent: int, safe: dict[int, str]) -> None:
    """The loop nest of a gather (``target[f...] = x[...]``) or of a scalar store (``target[...] = value``).

    NumPy's placement rule (as :func:`~jitgraph.ir.ops.indexing.index_shape` states it): the index arrays (and the
    ints among them) broadcast together into one block of result dims, which stands where the first of them stands
    when they are adjacent in the spec and in front otherwise; each ``None`` or slice adds one dim of its own.
    """
    getting = node.op == "getitem"
    x, *rest = node.inputs
    value, ops = (None, rest) if getting else (rest[0], rest[1:])
    xt = x.tensor_type
    full = expand_spec(xt.ndim, tuple(node.attrs["spec"]))
    for o in ops:
        if is_array(o) and o.tensor_type.dtype == np.dtype(np.uint64):  # int64 cannot hold every uint64 index
            raise UnsupportedError("uint64 index arrays are not supported by the loop driver",
                                   hint="index with int64 arrays (idx.astype(np.int64)); the graph runs eagerly")
    region = index_shape(xt.shape, full, tuple(o.tensor_type for o in ops))
    if 0 in region and any(is_array(o) and o.tensor_type.size for o in ops):
        # NumPy checks every index even when the result is empty; the nest below would run no iteration
        raise UnsupportedError(f"{node.op} with an empty result but a non-empty index array is not supported by the "
                               "loop driver", hint="the graph runs on the eager backend instead")
    arrays = [p for p, e in enumerate(full) if _in_block(e)]
    block = tuple(np.broadcast_shapes(*(ops[e.k].tensor_type.shape for e in full if _in_block(e)
                                        and isinstance(e, Operand))))
    basic = [p for p, e in enumerate(full) if e is None or isinstance(e, slice)]
    adjacent = arrays == list(range(arrays[0], arrays[0] + len(arrays)))
    first = sum(1 for p in basic if p < arrays[0]) if adjacent else 0
    loop_vars = [f"f{d}" for d in range(len(region))]
    block_vars = loop_vars[first:first + len(block)]
    dim_var = dict(zip(basic, loop_vars[:first] + loop_vars[first + len(block):]))
    parts: list[str] = []
    reads: list[tuple[int, int, Node, str, int, int]] = []  # (loop level, part, index array, its index, size, dim)
    dim = 0
    for p, entry in enumerate(full):
        if entry is None:
            continue
        size = xt.shape[dim]
        if isinstance(entry, slice):
            start, _, step = entry.indices(size)
            var = dim_var[p]
            parts.append(var if (start, step) == (0, 1) else f"{start} + {var}" if step == 1
                         else f"{start} + {step} * {var}")
        elif isinstance(entry, Operand) and is_array(ops[entry.k]):
            index = ops[entry.k]
            at = broadcast_index(index.tensor_type.shape, block, block_vars)
            level = max((loop_vars.index(v) + 1 for v in at.split(", ") if v in loop_vars), default=0)
            reads.append((level, len(parts), index, at, size, dim))
            parts.append("")  # the checked element's name, once emitted
        elif isinstance(entry, Operand):
            parts.append(safe.get(entry.k) or em.var[ops[entry.k]])
        else:
            parts.append(str(int(entry) % size))
        dim += 1
    # Each index element is read and checked in the outermost loop that determines it (a row gather checks each
    # row index once, not once per element of the row).
    for level in range(len(region) + 1):
        if level:
            em.write(indent + level - 1, f"for {loop_vars[level - 1]} in range({em.size(region[level - 1])}):")
        for at_level, part, index, at, size, dim in reads:
            if at_level == level:
                element = f"e{em.vname(node)[1:]}_{part}"
                em.write(indent + level, f"{element} = np.int64({em.var[index]}[{at}])")
                parts[part] = _element_index(em, element, size, dim, indent + level)
    inner = indent + len(region)
    index = ", ".join(parts)
    if getting:
        em.write(inner, f"{target}[{', '.join(loop_vars)}] = {em.var[x]}[{index}]")
    else:
        em.write(inner, f"{target}[{index}] = {cast_text(em.var[value], value.tensor_type.dtype, xt.dtype)}")


def _in_block(entry: object) -> bool:
    """Whether a spec entry joins the broadcast block of an advanced index: index arrays and ints (a scalar
    operand and a literal int both index one dim at the same place for every block element)."""
    if isinstance(entry, Operand):
        return True
    return isinstance(entry, int | np.integer) and not isinstance(entry, bool)


def _element_index(em: Emitter, var: str, size: int, dim: int, indent: int) -> str:
    """One element of an index array, checked like a scalar index (:func:`check`): wrapped into ``np.uint64``
    serially; inside a prange body a bad one sets the loop's error flag and reads element 0 instead."""
    if em.prange_flag is None or size == 0:
        return _checked_index(em, var, em.size(size), dim, indent)
    em.flag_used = True
    name, n = f"ix{len(em.lines)}", em.size(size)
    em.write(indent, f"{name} = {var} if -{n} <= {var} < {n} else 0")
    em.write(indent, f"if not -{n} <= {var} < {n}:")
    em.write(indent + 1, f"{em.prange_flag}[0] = True")
    return name
