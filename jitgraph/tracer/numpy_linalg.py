"""NumPy table entries for ``np.linalg`` and vector products that lower onto reductions and elementwise ops:
``np.linalg.norm`` (vector and matrix norms, ``ord``, ``axis``, ``keepdims``), ``np.vdot``, ``np.inner``.

Norms follow ``numpy.linalg.norm`` step by step (its own formulas per ``ord``), so dtypes and NaN behaviour are
NumPy's: integers are converted to float64 first, ``ord=None`` over the whole array is ``sqrt(sum(x * x))``.
Norms that need a singular value decomposition (matrix ``ord=2``, ``-2``, ``'nuc'``) break with that reason, as do
complex inputs. Decompositions and solvers (``np.linalg.solve``, ``cholesky``, ``eig``...) have no IR op: they break
naming the function.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.numpy_base import LoweringTable, always_breaks, axes_arg
from jitgraph.tracer.values import TArray

TABLE = LoweringTable("numpy_linalg")
numpy, method = TABLE.numpy, TABLE.method

_INF = float("inf")


def _fail(tx: TraceContext, err: BaseException) -> None:
    tx.graph_break(str(err), err)


def _reduce(tx: TraceContext, name: str, x: Node, axis: tuple[int, ...], keepdims: bool = False) -> Node:
    return tx.op(name, x, axis=axis, keepdims=keepdims)


def _float_input(tx: TraceContext, x: Node) -> Node:
    dtype = x.tensor_type.dtype
    if dtype.kind == "c":
        tx.graph_break("np.linalg.norm of a complex array is not supported by the tracer")
    if dtype.kind not in "f":
        return tx.op("astype", x, dtype=np.dtype(np.float64))
    return x


def _vector_norm(tx: TraceContext, x: Node, ord: Any, axis: tuple[int, ...], keepdims: bool) -> Node:
    if ord == _INF:
        return _reduce(tx, "max", tx.op("absolute", x), axis, keepdims)
    if ord == -_INF:
        return _reduce(tx, "min", tx.op("absolute", x), axis, keepdims)
    if ord == 0:
        nonzero = tx.op("not_equal", x, tx.node(0))
        return tx.op("astype", _reduce(tx, "sum", nonzero, axis, keepdims), dtype=x.tensor_type.dtype)
    if ord == 1:
        return _reduce(tx, "sum", tx.op("absolute", x), axis, keepdims)
    if ord is None or ord == 2:
        return tx.op("sqrt", _reduce(tx, "sum", tx.op("multiply", x, x), axis, keepdims))
    if isinstance(ord, str):
        _fail(tx, ValueError(f"Invalid norm order '{ord}' for vectors"))
    if not isinstance(ord, int | float | np.number):
        tx.graph_break("np.linalg.norm with an ord computed from array data")
    dtype = x.tensor_type.dtype
    p = tx.node(np.asarray(ord, dtype))
    total = _reduce(tx, "sum", tx.op("power", tx.op("absolute", x), p), axis, keepdims)
    return tx.op("power", total, tx.node(np.reciprocal(np.asarray(ord, dtype))))


def _matrix_norm(tx: TraceContext, x: Node, ord: Any, axes: tuple[int, int], keepdims: bool) -> Node:
    row, col = axes
    if row == col:
        _fail(tx, ValueError("Duplicate axes given."))
    if ord in (None, "fro", "f"):
        out = tx.op("sqrt", _reduce(tx, "sum", tx.op("multiply", x, x), axes))
    elif ord in (1, -1, _INF, -_INF):
        absx = tx.op("absolute", x)
        pick = "max" if ord in (1, _INF) else "min"
        if ord in (1, -1):
            summed, other = row, col - 1 if col > row else col
        else:
            summed, other = col, row - 1 if row > col else row
        out = _reduce(tx, pick, _reduce(tx, "sum", absx, (summed,)), (other,))
    elif ord in (2, -2, "nuc"):
        tx.graph_break(f"np.linalg.norm(ord={ord!r}) of a matrix needs a singular value decomposition (no IR op)")
    else:
        _fail(tx, ValueError("Invalid norm order for matrices."))
    if keepdims:
        shape = list(x.tensor_type.shape)
        shape[row] = shape[col] = 1
        out = tx.op("reshape", out, shape=tuple(shape))
    return out


@numpy(np.linalg.norm)
def _norm(tx: TraceContext, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    node = _float_input(tx, tx.node(x))
    t = node.tensor_type
    if isinstance(ord, TArray) or isinstance(axis, TArray):
        tx.graph_break("np.linalg.norm with ord or axis computed from array data")
    if axis is None:
        if ord is None or (ord in ("f", "fro") and t.ndim == 2) or (ord == 2 and t.ndim == 1):
            flat = tx.op("reshape", node, shape=(-1,))
            out = tx.op("sqrt", _reduce(tx, "sum", tx.op("multiply", flat, flat), (0,)))
            if keepdims:
                out = tx.op("reshape", out, shape=(1,) * t.ndim)
            return tx.result(out)
        axis = tuple(range(t.ndim))
    elif not isinstance(axis, tuple):
        if not isinstance(axis, int | np.integer):
            _fail(tx, TypeError("'axis' must be None, an integer or a tuple of integers"))
        axis = (int(axis),)
    axes = tuple(axes_arg(tx, a, t.ndim, "norm")[0] for a in axis)  # in the caller's order: (1, 0) transposes
    if len(set(axes)) != len(axes):
        _fail(tx, ValueError("Duplicate axes given."))
    if len(axes) == 1:
        return tx.result(_vector_norm(tx, node, ord, axes, bool(keepdims)))
    if len(axes) == 2:
        return tx.result(_matrix_norm(tx, node, ord, (axes[0], axes[1]), bool(keepdims)))
    _fail(tx, ValueError("Improper number of dimensions to norm."))


@numpy(np.vdot)
def _vdot(tx: TraceContext, a: Any, b: Any) -> Any:
    """``np.vdot``: the dot product of the flattened arrays (complex conjugation is not traced)."""
    x, y = tx.node(a), tx.node(b)
    if "c" in (x.tensor_type.dtype.kind, y.tensor_type.dtype.kind):
        tx.graph_break("np.vdot of complex arrays is not supported by the tracer")
    if x.tensor_type.size != y.tensor_type.size:
        _fail(tx, ValueError("cannot reshape array: vdot needs arrays of the same size"))
    flat = [tx.op("reshape", n, shape=(-1,)) for n in (x, y)]
    return tx.result(tx.op("dot", *flat))


@numpy(np.inner)
def _inner(tx: TraceContext, a: Any, b: Any) -> Any:
    """``np.inner``: a sum product over the last axes (``einsum`` with the last letters shared)."""
    x, y = tx.node(a), tx.node(b)
    if x.tensor_type.ndim == 0 or y.tensor_type.ndim == 0:
        return tx.result(tx.op("multiply", x, y))
    letters = "abcdefghijklmnopqrstuvw"
    na, nb = x.tensor_type.ndim, y.tensor_type.ndim
    sa, sb = letters[:na - 1] + "z", letters[na - 1:na + nb - 2] + "z"
    return tx.result(tx.op("einsum", x, y, subscripts=f"{sa},{sb}->{sa[:-1]}{sb[:-1]}"))


for _name in ("solve", "inv", "cholesky", "eig", "eigh", "eigvals", "eigvalsh", "svd", "qr", "det", "slogdet",
              "lstsq", "pinv", "matrix_rank", "matrix_power"):
    TABLE.functions[getattr(np.linalg, _name)] = always_breaks(
        f"np.linalg.{_name} has no IR op (a decomposition or solver runs through LAPACK): the call runs eagerly")

TABLE.note("matrix ord=2, -2 and 'nuc' (a singular value decomposition); complex input", np.linalg.norm)
TABLE.note("complex input (the conjugate)", np.vdot)
