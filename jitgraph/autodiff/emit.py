"""The small vocabulary derivative rules are written in: a :class:`GraphBuilder` plus NumPy-shaped helpers.

Why a wrapper: a rule such as ``g * cos(x)`` should read like the maths, not like five ``builder.op`` calls, and
the two chores every rule shares -- undoing broadcasting (``fit``) and giving a cotangent its primal's dtype
(``cast``) -- belong in one place, so a rule cannot forget them. Constants are Python scalars (weak under NEP 50),
so ``g * 0.5`` keeps ``g``'s float32 rather than promoting to float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.graph import GraphBuilder, Node
from jitgraph.ir.types import TensorType


def shape_of(node: Node) -> tuple[int, ...]:
    return node.tensor_type.shape


def dtype_of(node: Node) -> np.dtype:
    return node.tensor_type.dtype


def is_float(node: Node) -> bool:
    """Whether ``node`` can carry a gradient: a real floating value (weak Python floats included)."""
    return isinstance(node.type, TensorType) and node.type.dtype.kind == "f"


class Emitter:
    """Builds backward nodes into ``builder``; every helper returns the new node."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.builder = builder
        # The transform's own backward walk, for rules that differentiate region bodies (set by reverse.py, which
        # imports the rules: handing it in keeps the import graph a tree).
        self.backward: Any = None

    # ---- plumbing -------------------------------------------------------------------------------------------
    def op(self, name: str, *inputs: Node, **attrs: Any) -> Node:
        return self.builder.op(name, *inputs, **attrs)

    def const(self, value: float | bool | np.ndarray) -> Node:
        return self.builder.const(value)

    def lit(self, value: Node | float) -> Node:
        return value if isinstance(value, Node) else self.builder.const(value)

    # ---- arithmetic (operands may be Python numbers) --------------------------------------------------------
    def add(self, a: Node | float, b: Node | float) -> Node:
        return self.op("add", self.lit(a), self.lit(b))

    def sub(self, a: Node | float, b: Node | float) -> Node:
        return self.op("subtract", self.lit(a), self.lit(b))

    def mul(self, a: Node | float, b: Node | float) -> Node:
        return self.op("multiply", self.lit(a), self.lit(b))

    def div(self, a: Node | float, b: Node | float) -> Node:
        return self.op("divide", self.lit(a), self.lit(b))

    def neg(self, a: Node) -> Node:
        return self.op("negative", a)

    def square(self, a: Node) -> Node:
        return self.op("multiply", a, a)

    def fn(self, name: str, *xs: Node | float) -> Node:
        return self.op(name, *(self.lit(x) for x in xs))

    def where(self, cond: Node, a: Node | float, b: Node | float) -> Node:
        return self.op("where", cond, self.lit(a), self.lit(b))

    def zeros(self, shape: tuple[int, ...], dtype: np.dtype) -> Node:
        return self.op("zeros", shape=tuple(shape), dtype=np.dtype(dtype))

    def zeros_like(self, node: Node) -> Node:
        t = node.tensor_type
        return self.zeros(t.shape, np.float64 if t.weak else t.dtype)

    # ---- shapes ---------------------------------------------------------------------------------------------
    def reshape(self, g: Node, shape: tuple[int, ...]) -> Node:
        return g if shape_of(g) == tuple(shape) else self.op("reshape", g, shape=tuple(shape))

    def transpose(self, g: Node, axes: tuple[int, ...]) -> Node:
        return g if axes == tuple(range(len(axes))) else self.op("transpose", g, axes=tuple(axes))

    def swap_last(self, g: Node) -> Node:
        """``g`` with its last two axes swapped (the matrix transpose of a batch)."""
        n = len(shape_of(g))
        return self.transpose(g, tuple(range(n - 2)) + (n - 1, n - 2))

    def sum(self, g: Node, axes: tuple[int, ...], keepdims: bool = False) -> Node:
        return self.op("sum", g, axis=tuple(sorted(axes)), keepdims=keepdims) if axes else g

    def fit(self, g: Node, shape: tuple[int, ...]) -> Node:
        """``g`` made the shape of the value it is the cotangent of: summed over the axes broadcasting added or
        stretched (the adjoint of broadcasting), reshaped, or broadcast where ``g`` is smaller (a reduction's
        cotangent)."""
        shape = tuple(shape)
        gs = shape_of(g)
        if gs == shape:
            return g
        if len(gs) < len(shape):
            g = self.reshape(g, (1,) * (len(shape) - len(gs)) + gs)
            gs = shape_of(g)
        lead = len(gs) - len(shape)
        stretched = [i for i, d in enumerate(shape) if d == 1 and gs[lead + i] != 1]
        axes = tuple(range(lead)) + tuple(lead + i for i in stretched)
        if axes:
            # one sum without keepdims, then a reshape putting back the stretched 1s: loop bodies compile a
            # one-axis sum (a bias gradient), not one with keepdims
            g = self.sum(g, axes)
            g = self.reshape(g, tuple(1 if i in stretched else gs[lead + i] for i in range(len(shape))))
        if shape_of(g) != shape:
            g = self.op("broadcast_to", g, shape=shape)
        return g

    def expand_reduced(self, g: Node, x: Node, axes: tuple[int, ...], keepdims: bool) -> Node:
        """A reduction's cotangent ``g`` reshaped so that it broadcasts against the reduced input ``x``."""
        if keepdims:
            return g
        shape = tuple(1 if i in axes else d for i, d in enumerate(shape_of(x)))
        return self.reshape(g, shape)

    def cast(self, g: Node, like: Node) -> Node:
        """``g`` in the dtype of the primal ``like`` (float32 parameters get float32 gradients)."""
        t = like.tensor_type
        return self.cast_to(g, np.dtype(np.float64) if t.weak else t.dtype)

    def cast_to(self, g: Node, dtype: np.dtype) -> Node:
        return g if dtype_of(g) == dtype and not g.tensor_type.weak else self.op("astype", g, dtype=np.dtype(dtype))
