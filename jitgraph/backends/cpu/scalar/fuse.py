"""Whole-array ops inside a driver, written as explicit loop nests instead of NumPy calls.

Why: Numba compiles each NumPy array expression into its own allocation and loop, and type-unifying them makes
compiles slow (tens of seconds for a stencil body). Here a tree of same-shape elementwise ops whose intermediate
values have one consumer becomes one loop nest that writes one fresh array (``emit_map``), and a full ``sum`` /
``max`` / ``min`` of such a tree becomes one accumulation loop (``emit_reduce``), with NumPy's NaN propagation.

Soundness: a value is inlined into its consumer only when no node between the two could write a buffer (no
``setitem`` and no region), so reading the leaves later, inside the consumer's loop, sees the same data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.types import TensorType

if TYPE_CHECKING:
    from jitgraph.backends.cpu.scalar.emit import Emitter

WRITERS = {"setitem", "scatter_add", "loop", "while", "cond"}
FUSED_REDUCTIONS = {"sum", "max", "min"}


def _array(node: Node) -> bool:
    return isinstance(node.type, TensorType) and node.type.shape != ()


def fusable(node: Node) -> bool:
    """An elementwise op producing an array whose array operands all have its exact shape (no broadcasting)."""
    if OPS[node.op].kind is not OpKind.ELEMENTWISE or not _array(node):
        return False
    shape = node.tensor_type.shape
    return all(not _array(i) or i.tensor_type.shape == shape for i in node.inputs)


def reducible(node: Node) -> bool:
    """A full reduction we write as a loop: sum/max/min over every axis of a numeric array, keepdims off."""
    if node.op not in FUSED_REDUCTIONS or node.attrs.get("keepdims") or node.attrs.get("dtype") is not None:
        return False
    (x,) = node.inputs
    if not _array(x) or x.tensor_type.dtype.kind not in "iuf" or x.tensor_type.size == 0:
        return False
    return tuple(node.attrs["axis"]) == tuple(range(x.tensor_type.ndim))


def plan_inline(graph: Graph) -> set[Node]:
    """Values computed inside their single consumer's loop nest instead of being stored."""
    users = graph.users()
    pos = {n: k for k, n in enumerate(graph.nodes)}
    writer_positions = [k for k, n in enumerate(graph.nodes) if n.op in WRITERS]
    live = set(graph.live_roots())
    inline: set[Node] = set()
    for node in graph.nodes:
        if not fusable(node) or node in live or len(users.get(node, ())) != 1:
            continue
        consumer = users[node][0]
        if consumer.inputs.count(node) != 1:
            continue
        joins = (fusable(consumer) and consumer.tensor_type.shape == node.tensor_type.shape) or reducible(consumer)
        if joins and not any(pos[node] < w < pos[consumer] for w in writer_positions):
            inline.add(node)
    return inline


def _scalar_tree(em: Emitter, node: Node, index: str) -> str:
    from jitgraph.backends.cpu.scalar.emit import dtype_ctor, elementwise_text

    operands = []
    for i in node.inputs:
        t = i.tensor_type
        if i in em.scope.inline:
            operands.append((_scalar_tree(em, i, index), t.with_(shape=())))
        elif _array(i):
            operands.append((f"{em.var[i]}[{index}]", t.with_(shape=())))
        else:
            operands.append((em.var[i], t))
    return f"{dtype_ctor(node.tensor_type.dtype)}({elementwise_text(node, operands, scalar=True)})"


def _loops(em: Emitter, shape: tuple[int, ...], indent: int) -> tuple[str, int]:
    names = [f"f{d}" for d in range(len(shape))]
    for d, extent in enumerate(shape):
        em.write(indent + d, f"for {names[d]} in range({extent}):")
    return ", ".join(names), indent + len(shape)


def emit_map(em: Emitter, node: Node, indent: int) -> None:
    from jitgraph.backends.cpu.scalar.emit import dtype_ctor

    t = node.tensor_type
    name = em.vname(node)
    em.write(indent, f"{name} = np.empty({t.shape!r}, {dtype_ctor(t.dtype)})")
    index, inner = _loops(em, t.shape, indent)
    em.write(inner, f"{name}[{index}] = {_scalar_tree(em, node, index)}")
    em.var[node] = name
    em.scope.fresh(node, owned=True)


def emit_reduce(em: Emitter, node: Node, indent: int) -> None:
    """sum accumulates in float64 for floats (at least as accurate as NumPy's pairwise float32 sum) and in the
    result dtype for integers; max/min start from the identity and let a NaN win, as NumPy's do."""
    from jitgraph.backends.cpu.scalar.emit import dtype_ctor

    (x,) = node.inputs
    out = node.tensor_type.dtype
    name = em.vname(node)
    hole = "@INDEX@"
    leaf = _scalar_tree(em, x, hole) if x in em.scope.inline else f"{em.var[x]}[{hole}]"
    if node.op == "sum":
        acc = np.dtype(np.float64) if out.kind == "f" else out
        em.write(indent, f"{name} = {dtype_ctor(acc)}(0)")
        index, inner = _loops(em, x.tensor_type.shape, indent)
        em.write(inner, f"{name} += {dtype_ctor(acc)}({leaf.replace(hole, index)})")
    else:
        if out.kind == "f":
            start = "-np.inf" if node.op == "max" else "np.inf"
        else:
            info = np.iinfo(out)
            start = repr(int(info.min if node.op == "max" else info.max))
        em.write(indent, f"{name} = {dtype_ctor(out)}({start})")
        index, inner = _loops(em, x.tensor_type.shape, indent)
        em.write(inner, f"e_ = {leaf.replace(hole, index)}")
        better = ">" if node.op == "max" else "<"
        nan = " or e_ != e_" if out.kind == "f" else ""
        em.write(inner, f"if e_ {better} {name}{nan}:")
        em.write(inner + 1, f"{name} = e_")
    em.write(indent, f"{name} = {dtype_ctor(out)}({name})")
    em.var[node] = name


def emit_store(em: Emitter, target: str, node: Node, indent: int, safe: dict[int, str]) -> None:
    """``target[spec] = value`` for a slice region, as a loop nest (Numba's own slice assignment compiles slowly).

    Each target dim is a static slice ``start + step * f`` of x (bounds resolved from x's static shape), or a fixed
    int / runtime scalar index; ``None`` adds a size-1 dim. The value broadcasts NumPy's way: right-aligned, size-1
    dims repeat.
    """
    from jitgraph.backends.cpu.scalar.emit import cast_text
    from jitgraph.ir.ops.indexing import Operand, expand_spec, index_shape

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
    if _array(value):
        vshape = value.tensor_type.shape
        while len(vshape) > len(region) and vshape[0] == 1:
            vshape = vshape[1:]
        offset = len(region) - len(vshape)
        vidx = ", ".join("0" if n == 1 and region[offset + k] != 1 else loop_vars[offset + k]
                         for k, n in enumerate(vshape))
        src = cast_text(f"{em.var[value]}[{vidx}]", value.tensor_type.with_(shape=()), xt.dtype, True)
    else:
        src = cast_text(em.var[value], value.tensor_type, xt.dtype, True)
    for d, extent in enumerate(region):
        em.write(indent + d, f"for {loop_vars[d]} in range({extent}):")
    em.write(indent + len(region), f"{target}[{', '.join(parts)}] = {src}")
