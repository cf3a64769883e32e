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
from jitgraph.backends.cpu import emitters as cpu_emitters
from jitgraph.backends.cpu.scalar.core import Emitter, cast_text, dtype_ctor, wrap
from jitgraph.backends.cpu.scalar.scope import is_array
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
        em.write(indent + d, f"for {names[d]} in range({extent}):")
    return names, indent + len(shape)


def emit_map(em: Emitter, node: Node, indent: int) -> None:
    """An elementwise array op (and the producers inlined into it) as one loop nest writing a fresh array."""
    t = node.tensor_type
    name = em.vname(node)
    em.write(indent, f"{name} = np.empty({t.shape!r}, {dtype_ctor(t.dtype)})")
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
    em.write(inner, f"{name} = {cpu_emitters.reduction_combine(node.op, name, value)}")
    em.write(indent, f"{name} = {dtype_ctor(out)}({name})")
    em.var[node] = name


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
        em.write(indent + d, f"for {loop_vars[d]} in range({extent}):")
    em.write(indent + len(region), f"{target}[{', '.join(parts)}] = {src}")
