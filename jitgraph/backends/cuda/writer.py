"""The source writer every CUDA kernel template shares: parameters, scopes, loads, stores and node statements.

A kernel is written as Python source that numba.cuda compiles. Each fused group's body node becomes one statement
``v12 = np.float32(...)`` named after the body's printed ``%12``, so the kernel reads side by side with the IR
dump. Values live in *scopes* that mirror the loop nest: a value computed at the per-row level is visible inside
the sweeps over the row, and a value computed inside a sweep is forgotten when the sweep ends (it is recomputed,
at most once per reduction level, which is the fusion pass's recomputation bound).

Array operands are indexed through the group's *axis maps*: each operand dim follows the domain axis that its
consumer walks (right-aligned broadcasting), or index 0 for a size-1 dim, so one kernel serves every shape with
the same rank and broadcast pattern; sizes are kernel arguments, never constants.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from jitgraph.backends.cuda import emitters as em
from jitgraph.errors import UnsupportedError
from jitgraph.ir.fusion_groups import GroupInfo
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.printer import node_names
from jitgraph.ir.types import TensorType


@dataclass
class Writer:
    """Accumulates one kernel's source lines; ``leaves`` are the body values passed in as parameters."""

    body: Graph
    info: GroupInfo
    leaves: list[Node]
    scalar_arrays: frozenset[int] = frozenset()  # leaves (by position) that arrive as 1-element device arrays
    lines: list[str] = field(default_factory=list)
    indent: int = 1
    scopes: list[dict[object, str]] = field(default_factory=lambda: [{}])

    def __post_init__(self) -> None:
        names = node_names(self.body)
        self.vname = {n: "v" + names[n].lstrip("%") for n in self.body.nodes}
        self.leaf_index = {n: k for k, n in enumerate(self.leaves)}
        self.users: dict[Node, list[Node]] = self.body.users()

    # ---- source ----------------------------------------------------------------------------------------------
    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def open(self, header: str) -> None:
        """Start a block (``for``/``if``/``while``): one indent level and one value scope."""
        self.line(header)
        self.indent += 1
        self.scopes.append({})

    def close(self) -> None:
        self.indent -= 1
        self.scopes.pop()

    def lookup(self, key: object) -> str | None:
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        return None

    def bind(self, key: object, name: str) -> None:
        self.scopes[-1][key] = name

    # ---- parameters ------------------------------------------------------------------------------------------
    def leaf_param(self, node: Node) -> str:
        return f"a{self.leaf_index[node]}"

    def leaf_params(self) -> list[str]:
        return [self.leaf_param(n) for n in self.leaves]

    def size_params(self) -> list[str]:
        return [f"n{a}" for a in range(len(self.info.domain))]

    # ---- values ----------------------------------------------------------------------------------------------
    def axes_of(self, node: Node) -> set[int]:
        return {a for a in self.info.amap.get(node, ()) if a is not None}

    def load(self, leaf: Node, consumer: Node) -> str:
        """The element of array leaf ``leaf`` that ``consumer`` reads at the current domain point."""
        t = leaf.tensor_type
        if t.shape == ():
            k = self.leaf_index[leaf]
            return f"{self.leaf_param(leaf)}[0]" if k in self.scalar_arrays else self.leaf_param(leaf)
        idx = self.operand_index(t, consumer)
        key = ("load", leaf, idx)
        name = self.lookup(key)
        if name is None:
            name = f"ld{self.leaf_index[leaf]}_{len(self.lines)}"
            self.line(f"{name} = {self.leaf_param(leaf)}[{', '.join(idx)}]")
            self.bind(key, name)
        return name

    def operand_index(self, t: TensorType, consumer: Node) -> tuple[str, ...]:
        if OPS[consumer.op].kind is OpKind.REDUCTION or consumer.op in ("matmul", "dot"):
            cmap: tuple[int | None, ...] = tuple(range(len(self.info.domain)))
            cshape = self.info.domain
        else:
            cmap, cshape = self.info.amap[consumer], consumer.tensor_type.shape
        shift = len(cshape) - t.ndim
        out = []
        for jj, size in enumerate(t.shape):
            axis = cmap[jj + shift]
            out.append("0" if size == 1 or axis is None else f"i{axis}")
        return tuple(out)

    def value(self, node: Node) -> str:
        """An expression for ``node`` at the current point, emitting its statement (and its operands') if needed."""
        found = self.lookup(node)
        if found is not None:
            return found
        if node.op == "const":
            t = node.tensor_type
            if t.shape != ():
                raise UnsupportedError("array constant inside a kernel body")
            return em.literal(node.attrs["value"], t.dtype)
        if node.op == "input" or node in self.leaf_index:
            raise AssertionError("leaves are loaded by their consumers")
        if node.op == "reshape":  # only size-1 dims change: the same element
            return self.operand(node.inputs[0], node)
        if node.op == "setitem":  # whole-array ``x[...] = v`` (the fusion pass admits no other): v, cast; x unread
            expr = em.cast(self.operand(node.inputs[1], node), node.tensor_type.dtype, node.inputs[1].type.dtype)
            self.line(f"{self.vname[node]} = {expr}")
            self.bind(node, self.vname[node])
            return self.vname[node]
        if OPS[node.op].kind is OpKind.REDUCTION:
            raise AssertionError(f"reduction {node.op} used before its level was reduced")
        args = [self.operand(i, node) for i in node.inputs]
        expr = em.emit(node, args)
        name = self.vname[node]
        self.line(f"{name} = {em.cast(expr, node.tensor_type.dtype)}")
        self.bind(node, name)
        return name

    def operand(self, value: Node, consumer: Node) -> str:
        if value in self.leaf_index:
            return self.load(value, consumer)
        return self.value(value)

    def store_index(self, node: Node) -> str:
        t = node.tensor_type
        if t.shape == ():
            return "0"
        amap = self.info.amap[node]
        return ", ".join("0" if a is None else f"i{a}" for a in amap)

    def store(self, param: str, node: Node, dtype: np.dtype) -> None:
        self.line(f"{param}[{self.store_index(node)}] = {em.cast(self.value(node), dtype, node.tensor_type.dtype)}")

    def unravel(self, flat: str, axes: Sequence[int]) -> None:
        """Bind ``i{axis}`` for ``axes`` (outermost first) from a flat index over them (row-major)."""
        if not axes:
            return
        if len(axes) == 1:
            self.line(f"i{axes[0]} = {flat}")
            return
        self.line(f"t_ = {flat}")
        for a in reversed(axes[1:]):
            self.line(f"i{a} = t_ % n{a}")
            self.line(f"t_ = t_ // n{a}")
        self.line(f"i{axes[0]} = t_")

    def product(self, axes: Iterable[int]) -> str:
        axes = list(axes)
        if not axes:
            return "1"
        return f"n{axes[0]}" if len(axes) == 1 else "(" + " * ".join(f"n{a}" for a in axes) + ")"

    def source(self, name: str, params: Sequence[str]) -> str:
        return f"def {name}({', '.join(params)}):\n" + "\n".join(self.lines) + "\n"
