"""Whole-array ops inside a driver, written as explicit loop nests instead of NumPy calls.

Why: Numba compiles each NumPy array expression into its own allocation and loop, and type-unifying them makes
compiles slow (tens of seconds for a stencil body). The pipeline's ``fused`` groups become sweeps (:mod:`.groups`);
what they leave node by node is handled here: a tree of elementwise ops whose intermediate values have one consumer
(:func:`.scope.plan_inline`) becomes one loop nest that writes one fresh array (:func:`emit_map`, operands broadcast
NumPy's way), and a full ``sum`` / ``max`` / ``min`` of such a tree becomes one accumulation loop
(:func:`emit_reduce`). Every scalar expression and every reduction step comes from the shared emitter table,
so a loop nest computes exactly what the fused kernels of the CPU backend compute.
"""

from __future__ import annotations

from jitgraph.backends import emitter_table as shared
from jitgraph.backends.cpu.scalar.core import Emitter, cast_text, dtype_ctor, reduction_step, wrap
from jitgraph.backends.cpu.scalar.scope import is_array
from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Node
from jitgraph.ir.ops.indexing import Operand, expand_spec, index_shape


def broadcast_index(shape: tuple[int, ...], target: tuple[int, ...], loop_vars: list[str]) -> str:
    """The index of an operand of ``shape`` inside a loop nest over ``target``: right-aligned, size-1 dims stay 0."""
    while len(shape) > len(target) and shape[0] == 1:
        shape = shape[1:]
    offset = len(target) - len(shape)
    return ", ".join("0" if n == 1 and target[offset + k] != 1 else loop_vars[offset + k] for k, n in enumerate(shape))


def scalar_tree(em: Emitter, node: Node, loop_vars: list[str]) -> str:
    """``node``'s value at the loop nest's current index: inlined producers expanded, arrays indexed."""
    shape = node.tensor_type.shape
    operands = []
    for i in node.inputs:
        if i in em.scope.inline:
            operands.append(scalar_tree(em, i, loop_vars))
        elif is_array(i):
            operands.append(f"{em.var[i]}[{broadcast_index(i.tensor_type.shape, shape, loop_vars)}]")
        else:
            operands.append(em.var[i])
    return wrap(em.op_text(node, operands), node.tensor_type.dtype)


def _loops(em: Emitter, shape: tuple[int, ...], indent: int) -> tuple[list[str], int]:
    names = [f"f{d}" for d in range(len(shape))]
    for d, extent in enumerate(shape):
        em.write(indent + d, f"for {names[d]} in range({em.size(extent)}):")
    return names, indent + len(shape)


def emit_map(em: Emitter, node: Node, indent: int) -> None:
    """An elementwise array op (and the producers inlined into it) as one loop nest writing a fresh array."""
    t = node.tensor_type
    name = em.vname(node)
    em.write(indent, f"{name} = np.empty({em.shape_text(t.shape)}, {dtype_ctor(t.dtype)})")
    loop_vars, inner = _loops(em, t.shape, indent)
    em.write(inner, f"{name}[{', '.join(loop_vars)}] = {scalar_tree(em, node, loop_vars)}")
    em.var[node] = name
    em.scope.fresh(node, owned=True)


def emit_reduce(em: Emitter, node: Node, indent: int) -> None:
    """A full sum/max/min as one accumulation loop: the shared table's accumulator dtype (float sums in float64, at
    least as accurate as NumPy's pairwise float32 sum), identity and combine step (a NaN wins max/min)."""
    (x,) = node.inputs
    out = node.tensor_type.dtype
    acc = shared.accumulator_dtype(node.op, out)
    name = em.vname(node)
    em.write(indent, f"{name} = {shared.reduction_init(node.op, acc)}")
    loop_vars, inner = _loops(em, x.tensor_type.shape, indent)
    leaf = scalar_tree(em, x, loop_vars) if x in em.scope.inline else f"{em.var[x]}[{', '.join(loop_vars)}]"
    value = leaf if node.op in ("any", "all") else cast_text(leaf, x.tensor_type.dtype, acc)  # truth values
    em.write(inner, f"{name} = {reduction_step(node.op, name, value, acc)}")
    em.write(indent, f"{name} = {dtype_ctor(out)}({name})")
    em.var[node] = name


def emit_arg_reduce(em: Emitter, node: Node, indent: int) -> None:
    """``argmax``/``argmin`` along one axis (or of a flattened array with ``keepdims``) as a loop nest: for each
    output element a scan along the axis keeping the first extreme, and the first NaN wins as in NumPy (its
    ``v != v`` test is always false for integers and booleans, which Numba folds away)."""
    (x,) = node.inputs
    xt = x.tensor_type
    axis = node.attrs.get("axis")
    if xt.dtype.kind not in "iufb" or xt.size == 0:
        raise UnsupportedError(f"{node.op} of a {xt.dtype} array of size {xt.size} is not supported in loop bodies",
                               hint="the graph runs on the eager backend instead")
    source = em.var[x]
    if axis is None:  # keepdims over the flattened array: one scan of the ravelled (contiguous) data
        em.write(indent, f"a{em.vname(node)[1:]} = np.ascontiguousarray({source}).reshape(({xt.size},))")
        source, shape, axis = f"a{em.vname(node)[1:]}", (xt.size,), 0
    else:
        shape = xt.shape
        axis %= len(shape)
    name, t = em.vname(node), node.tensor_type
    loop_vars = [f"f{d}" for d in range(len(shape))]
    outer = [d for d in range(len(shape)) if d != axis]
    out_index = [loop_vars[d] for d in outer]
    if node.attrs.get("keepdims"):
        out_index = ["0" if d == axis else loop_vars[d] for d in range(len(shape))] if t.ndim == len(shape) \
            else ["0"] * t.ndim
    em.write(indent, f"{name} = np.empty({em.shape_text(t.shape) if t.shape else '()'}, np.int64)")
    better = ">" if node.op == "argmax" else "<"
    scan = (_scan_row if axis == len(shape) - 1 else _scan_columns)
    scan(em, name, (source, dtype_ctor(xt.dtype)), shape, axis, loop_vars, ", ".join(out_index), better, indent)
    em.var[node] = name
    em.scope.fresh(node, owned=True)


def _read(source: str, loop_vars: list[str], axis: int, position: str) -> str:
    return f"{source}[{', '.join(position if d == axis else v for d, v in enumerate(loop_vars))}]"


def _scan_row(em: Emitter, name: str, array: tuple[str, str], shape: tuple[int, ...], axis: int, loop_vars: list[str],
              out: str, better: str, indent: int) -> None:
    """Along the last axis: per output element, one contiguous scan that stops at the first NaN."""
    source = array[0]
    at = indent
    for d in range(len(shape) - 1):
        em.write(at, f"for {loop_vars[d]} in range({em.size(shape[d])}):")
        at += 1
    scan, tag = loop_vars[axis], name[1:]
    em.write(at, f"b{tag} = {_read(source, loop_vars, axis, '0')}")
    em.write(at, f"i{tag} = 0")
    em.write(at, f"if b{tag} == b{tag}:  # no NaN first: scan on")
    em.write(at + 1, f"for {scan} in range(1, {em.size(shape[axis])}):")
    em.write(at + 2, f"e{tag} = {_read(source, loop_vars, axis, scan)}")
    em.write(at + 2, f"if e{tag} != e{tag}:  # the first NaN is the answer")
    em.write(at + 3, f"i{tag} = {scan}")
    em.write(at + 3, "break")
    em.write(at + 2, f"if e{tag} {better} b{tag}:")
    em.write(at + 3, f"b{tag} = e{tag}")
    em.write(at + 3, f"i{tag} = {scan}")
    em.write(at, f"{name}[{out}] = i{tag}")


def _scan_columns(em: Emitter, name: str, array: tuple[str, str], shape: tuple[int, ...], axis: int, loop_vars: list[str],
                  out: str, better: str, indent: int) -> None:
    """Along a leading axis: the array walked in memory order, with the best value so far per output element
    kept in an array (side by side, so the compare-and-select vectorises); a NaN sticks once found."""
    (source, ctor), tag = array, name[1:]
    outer = [d for d in range(len(shape)) if d != axis]
    em.write(indent, f"b{tag} = np.empty({em.shape_text([shape[d] for d in outer])}, {ctor})")
    best = f"b{tag}[{', '.join(loop_vars[d] for d in outer)}]"
    at = indent
    for d in outer:
        em.write(at, f"for {loop_vars[d]} in range({em.size(shape[d])}):")
        at += 1
    em.write(at, f"{best} = {_read(source, loop_vars, axis, '0')}")
    em.write(at, f"{name}[{out}] = 0")
    at = indent
    for d in range(len(shape)):
        em.write(at, f"for {loop_vars[d]} in range({1 if d == axis else 0}, {em.size(shape[d])}):")
        at += 1
    em.write(at, f"e{tag} = {_read(source, loop_vars, axis, loop_vars[axis])}")
    em.write(at, f"c{tag} = {best}")
    em.write(at, f"if c{tag} == c{tag} and (e{tag} {better} c{tag} or e{tag} != e{tag}):")
    em.write(at + 1, f"{best} = e{tag}")
    em.write(at + 1, f"{name}[{out}] = {loop_vars[axis]}")


def emit_store(em: Emitter, target: str, node: Node, indent: int, safe: dict[int, str]) -> None:
    """``target[spec] = value`` for a slice region, as a loop nest (Numba's own slice assignment compiles slowly).

    Each target dim is a static slice ``start + step * f`` of x (bounds resolved from x's static shape), or a fixed
    int / runtime scalar index; ``None`` adds a size-1 dim. The value broadcasts NumPy's way: right-aligned, size-1
    dims repeat.
    """
    x, value, *ops = node.inputs
    xt = x.tensor_type
    spec = expand_spec(xt.ndim, tuple(node.attrs["spec"]))
    region = index_shape(xt.shape, spec, tuple(o.tensor_type for o in ops))
    loop_vars = [f"f{d}" for d in range(len(region))]
    parts, dim, out_dim = [], 0, 0
    for entry in spec:
        if entry is None:
            out_dim += 1
            continue
        size = xt.shape[dim]
        if isinstance(entry, slice):
            start, _, step = entry.indices(size)
            var = loop_vars[out_dim]
            parts.append(var if (start, step) == (0, 1) else f"{start} + {step} * {var}" if step != 1
                         else f"{start} + {var}")
            out_dim += 1
        elif isinstance(entry, Operand):
            parts.append(safe.get(entry.k) or em.var[ops[entry.k]])
        else:
            parts.append(str(int(entry) % size))
        dim += 1
    if is_array(value):
        vidx = broadcast_index(value.tensor_type.shape, tuple(region), loop_vars)
        src = cast_text(f"{em.var[value]}[{vidx}]", value.tensor_type.dtype, xt.dtype)
    else:
        src = cast_text(em.var[value], value.tensor_type.dtype, xt.dtype)
    for d, extent in enumerate(region):
        em.write(indent + d, f"for {loop_vars[d]} in range({em.size(extent)}):")
    em.write(indent + len(region), f"{target}[{', '.join(parts)}] = {src}")
