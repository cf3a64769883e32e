"""Linear algebra: matmul, dot, outer, einsum (explicit subscripts). Backends hand these to BLAS through NumPy."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import ask_numpy, broadcast, type_error
from jitgraph.ir.symbols import size_of_shape
from jitgraph.ir.types import TensorType


def _mismatch(what: str, a: tuple[int, ...], b: tuple[int, ...]) -> Exception:
    err = ValueError(f"{what}: shapes {a} and {b} not aligned")
    return type_error(str(err), err)


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    if not a or not b:
        err = ValueError("matmul: Input operand does not have enough dimensions")
        raise type_error(str(err), err)
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise _mismatch("matmul", a, b)
    batch = broadcast([a2[:-2], b2[:-2]], "matmul")
    shape = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b) == 1:
        shape = shape[:-1]
    return shape


def dot_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    if not a or not b:
        return broadcast([a, b], "dot")
    if len(b) == 1:
        if a[-1] != b[0]:
            raise _mismatch("dot", a, b)
        return a[:-1]
    if a[-1] != b[-2]:
        raise _mismatch("dot", a, b)
    return a[:-1] + b[:-2] + b[-1:]


def parse_einsum(subscripts: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str, dict[str, int]]:
    """Split explicit subscripts and size every letter; implicit mode follows NumPy (sorted letters seen once)."""
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise type_error("einsum: ellipsis subscripts are not supported", ValueError("ellipsis"))
    lhs, _, rhs = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        err = ValueError("einsum: more operands than subscripts" if len(shapes) > len(terms)
                         else "einsum: fewer operands provided than specified in the subscripts string")
        raise type_error(str(err), err)
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, shapes):
        if len(term) != len(shape):
            err = ValueError(f"einsum: subscripts '{term}' do not match operand of {len(shape)} dimensions")
            raise type_error(str(err), err)
        for letter, d in zip(term, shape):
            if sizes.setdefault(letter, d) != d and 1 not in (sizes[letter], d):
                err = ValueError(f"einsum: size of label '{letter}' does not match ({sizes[letter]} vs {d})")
                raise type_error(str(err), err)
            sizes[letter] = max(sizes[letter], d)
    if "->" not in spec:
        counts = {c: lhs.count(c) for c in sizes}
        rhs = "".join(sorted(c for c, n in counts.items() if n == 1))
    return terms, rhs, sizes


def _infer_matmul(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    a, b = types
    shape = matmul_shape(a.shape, b.shape)
    dtype = ask_numpy(np.matmul, [a.with_(shape=(1,) * a.ndim), b.with_(shape=(1,) * b.ndim)], "matmul")
    return TensorType(shape, dtype)


def _infer_dot(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    a, b = types
    shape = dot_shape(a.shape, b.shape)
    dtype = ask_numpy(np.dot, [a.with_(shape=(1,) * a.ndim), b.with_(shape=(1,) * b.ndim)], "dot")
    return TensorType(shape, dtype)


def _infer_outer(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    a, b = types
    dtype = ask_numpy(np.outer, [a.with_(shape=(1,)), b.with_(shape=(1,))], "outer")
    return TensorType((size_of_shape(a.shape), size_of_shape(b.shape)), dtype)  # a symbol for a 1-D symbolic operand


def _infer_einsum(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    _, rhs, sizes = parse_einsum(attrs["subscripts"], [t.shape for t in types])
    dtype = ask_numpy(lambda *xs: np.einsum(attrs["subscripts"], *xs),
                      [t.with_(shape=(1,) * t.ndim) for t in types], "einsum")
    return TensorType(tuple(sizes[c] for c in rhs), dtype)


_OPTIMIZE_ABOVE = 1 << 16  # multiply-adds of the unoptimised loop nest below which the path search costs more


def _einsum(*xs: Any, subscripts: str) -> Any:
    """NumPy's einsum; three operands or more take an optimised contraction path only when the loop nest is big: the
    path search costs ~100 us, twenty times a small einsum (and the eager default, ``optimize=False``, is this)."""
    optimize = False
    if len(xs) > 2:
        _, _, sizes = parse_einsum(subscripts, [np.shape(x) for x in xs])
        optimize = math.prod(sizes.values()) > _OPTIMIZE_ABOVE
    return np.einsum(subscripts, *xs, optimize=optimize)


define(Op("matmul", OpKind.LINALG, _infer_matmul, np.matmul, doc="a @ b"))
define(Op("dot", OpKind.LINALG, _infer_dot, np.dot, doc="np.dot"))
define(Op("outer", OpKind.LINALG, _infer_outer, np.outer, doc="np.outer"))
define(Op("einsum", OpKind.LINALG, _infer_einsum, _einsum, doc="np.einsum; attrs: subscripts"))
