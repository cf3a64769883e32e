"""NumPy table entries for array manipulation that lowers onto existing ops: ``np.pad`` (constant, edge, reflect,
symmetric, wrap), ``np.flip``, ``np.repeat``, ``np.tile``, ``np.linspace``, ``np.column_stack``, ``np.atleast_*d``,
``np.round``, ``np.array_equal``, ``ufunc.outer``, and ``np.sort``/``np.argsort`` (ops of their own, run through
NumPy). Functions whose result size depends on the data (``np.unique``, ``np.nonzero``...) break with that reason.

Each lowering reproduces NumPy's own algorithm where the result could differ in the last bit or in its memory
(``np.flip`` is a view, ``np.pad`` pads axis by axis so corners come from the last axis, ``np.round`` scales,
rounds half to even and scales back).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.ir.ops.indexing import Operand
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.numpy_base import LoweringTable, always_breaks, as_array, axes_arg
from jitgraph.tracer.numpy_shapes import _reshape_to
from jitgraph.tracer.scalar_builtins import round_decimals
from jitgraph.tracer.values import TArray, contains_tarray, is_plain

TABLE = LoweringTable("numpy_arrays")
numpy, method = TABLE.numpy, TABLE.method


def _fail(tx: TraceContext, err: BaseException) -> None:
    tx.graph_break(str(err), err)


def _plain_ints(tx: TraceContext, value: Any, what: str) -> np.ndarray:
    if contains_tarray(value) or isinstance(value, TArray):
        tx.graph_break(f"{what} computed from array data")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # noqa: BLE001
        tx.graph_break(f"{what}: {exc}", exc)
    if arr.dtype.kind not in "iub" and arr.size:
        _fail(tx, TypeError("`pad_width` must be of integral type." if what == "pad_width" else
                            f"{what} must be integers"))
    return arr.astype(np.int64)


def _axis_slice(ndim: int, axis: int, sl: slice) -> tuple[Any, ...]:
    return tuple(sl if k == axis else slice(None) for k in range(ndim))


def _take(tx: TraceContext, node: Node, axis: int, sl: slice) -> Node:
    return tx.op("getitem", node, spec=_axis_slice(node.tensor_type.ndim, axis, sl))


# ---- np.pad ------------------------------------------------------------------------------------------------------
_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "empty")


@numpy(np.pad)
def _pad(tx: TraceContext, array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
    """NumPy pads one axis after the other, each reading the array padded so far: the same concatenations here."""
    x = tx.node(array)
    t = x.tensor_type
    if callable(mode):
        tx.graph_break("np.pad with a padding function")
    if mode not in _PAD_MODES:
        if mode in ("linear_ramp", "maximum", "mean", "median", "minimum"):
            tx.graph_break(f"np.pad(mode={mode!r}) is not supported by the tracer")
        _fail(tx, ValueError(f"mode '{mode}' is not supported"))
    allowed = {"constant": {"constant_values"}, "reflect": {"reflect_type"}, "symmetric": {"reflect_type"}}
    extra = set(kwargs) - allowed.get(mode, set())
    if extra:
        _fail(tx, ValueError(f"unsupported keyword arguments for mode '{mode}': {extra}"))
    if kwargs.get("reflect_type", "even") != "even":
        tx.graph_break("np.pad(reflect_type='odd') is not supported by the tracer")
    widths = _plain_ints(tx, pad_width, "pad_width")
    try:
        widths = np.broadcast_to(widths, (t.ndim, 2))
    except ValueError as exc:
        _fail(tx, ValueError(f"operands could not be broadcast together with remapped shapes: {exc}"))
    if (widths < 0).any():
        _fail(tx, ValueError("index can't contain negative values"))
    values = kwargs.get("constant_values", 0)
    if contains_tarray(values) or isinstance(values, TArray):
        tx.graph_break("np.pad with constant_values computed from array data")
    const_values = np.broadcast_to(np.asarray(values), (t.ndim, 2))
    node = x
    for axis in range(t.ndim):
        before, after = (int(w) for w in widths[axis])
        if before == 0 and after == 0:
            continue
        n = node.tensor_type.shape[axis]
        if mode in ("constant", "empty"):
            fill = const_values[axis] if mode == "constant" else (0, 0)
            parts = [_block(tx, node, axis, before, fill[0]), node, _block(tx, node, axis, after, fill[1])]
        else:
            if n == 0:
                _fail(tx, ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or "
                                     "'empty'"))
            parts = [_side(tx, node, axis, before, mode, True), node, _side(tx, node, axis, after, mode, False)]
        parts = [p for p in parts if p is not None and p.tensor_type.shape[axis] > 0] or [node]
        node = tx.op("concatenate", *parts, axis=axis) if len(parts) > 1 else node
    return tx.fresh(tx.op("copy", node) if node is x else node, "array")


def _block(tx: TraceContext, like: Node, axis: int, width: int, value: Any) -> Node | None:
    if width == 0:
        return None
    shape = list(like.tensor_type.shape)
    shape[axis] = width
    dtype = like.tensor_type.dtype
    with np.errstate(all="ignore"):
        fill = np.asarray(value).astype(dtype) if dtype.kind != "b" else np.asarray(value).astype(bool)
    return tx.op("full", shape=tuple(shape), dtype=dtype, value=fill.item())


def _side(tx: TraceContext, node: Node, axis: int, width: int, mode: str, left: bool) -> Node | None:
    if width == 0:
        return None
    n = node.tensor_type.shape[axis]
    shape = list(node.tensor_type.shape)
    shape[axis] = width
    if mode == "edge" or (mode == "reflect" and n == 1):
        edge = _take(tx, node, axis, slice(0, 1) if left else slice(n - 1, n))
        return tx.op("broadcast_to", edge, shape=tuple(shape))
    limit = n - 1 if mode == "reflect" else n
    if width > limit:
        tx.graph_break(f"np.pad(mode={mode!r}) wider than the axis ({width} > {limit}) repeats the pattern, "
                       "which the tracer does not lower")
    if mode == "wrap":
        return _take(tx, node, axis, slice(n - width, n) if left else slice(0, width))
    if mode == "reflect":
        sl = slice(width, 0, -1) if left else slice(n - 2, _stop(n - 2 - width), -1)
    else:  # symmetric
        sl = slice(width - 1, None, -1) if left else slice(n - 1, _stop(n - 1 - width), -1)
    return _take(tx, node, axis, sl)


def _stop(stop: int) -> int | None:
    return None if stop < 0 else stop


# ---- flips, stacking, shapes ---------------------------------------------------------------------------------------
@numpy(np.flip)
def _flip(tx: TraceContext, m: Any, axis: Any = None) -> Any:
    x = as_array(tx, m)
    ndim = tx.type_of(x).ndim
    axes = tuple(range(ndim)) if axis is None else axes_arg(tx, axis, ndim, "flip")
    spec = tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(ndim))
    return tx.view(x, "getitem", spec=spec)


@numpy(np.fliplr)
def _fliplr(tx: TraceContext, m: Any) -> Any:
    if tx.type_of(as_array(tx, m)).ndim < 2:
        _fail(tx, ValueError("Input must be >= 2-d."))
    return _flip(tx, m, 1)


@numpy(np.flipud)
def _flipud(tx: TraceContext, m: Any) -> Any:
    if tx.type_of(as_array(tx, m)).ndim < 1:
        _fail(tx, ValueError("Input must be >= 1-d."))
    return _flip(tx, m, 0)


@numpy(np.column_stack)
def _column_stack(tx: TraceContext, tup: Any) -> Any:
    if isinstance(tup, TArray) or not isinstance(tup, list | tuple) or not tup:
        tx.graph_break("np.column_stack of something other than a non-empty list of arrays")
    nodes = []
    for item in tup:
        node = tx.node(item)
        if node.tensor_type.ndim < 2:
            node = tx.op("reshape", node, shape=(-1, 1) if node.tensor_type.ndim else (1, 1))
        nodes.append(node)
    return tx.fresh(tx.op("concatenate", *nodes, axis=1))


def _atleast(ndim: int) -> Any:
    def lowering(tx: TraceContext, *arys: Any) -> Any:
        out = []
        for a in arys:
            x = as_array(tx, a)
            shape = tx.type_of(x).shape
            if len(shape) >= ndim:
                out.append(x)
                continue
            if ndim == 1 or not shape:
                new = (1,) * (ndim - len(shape)) + shape
            elif ndim == 2:
                new = (1,) + shape
            else:  # atleast_3d: (n,) -> (1, n, 1); (m, n) -> (m, n, 1)
                new = (1,) + shape + (1,) if len(shape) == 1 else shape + (1,)
            out.append(_reshape_to(tx, x, new))
        return out[0] if len(out) == 1 else tuple(out)

    return lowering


TABLE.functions[np.atleast_1d] = _atleast(1)
TABLE.functions[np.atleast_2d] = _atleast(2)
TABLE.functions[np.atleast_3d] = _atleast(3)


@numpy(np.repeat)
@method("repeat")
def _repeat(tx: TraceContext, a: Any, repeats: Any, axis: Any = None) -> Any:
    """A whole-number repeat is a broadcast along a new axis, merged back; per-element counts known at trace time
    are a gather with a constant index (counts from array data give a data-dependent size: a break)."""
    node = tx.node(a)
    if axis is None:
        node = tx.op("reshape", node, shape=(-1,))
        axis = 0
    t = node.tensor_type
    (ax,) = axes_arg(tx, axis, t.ndim, "repeat")
    counts = _plain_ints(tx, repeats, "np.repeat counts")
    if (counts < 0).any():
        _fail(tx, ValueError("repeats may not contain negative values."))
    if counts.ndim == 0 or counts.size == 1:
        r = int(counts.reshape(-1)[0]) if counts.size else 0
        expanded = tx.op("reshape", node, shape=t.shape[:ax + 1] + (1,) + t.shape[ax + 1:])
        wide = tx.op("broadcast_to", expanded, shape=t.shape[:ax + 1] + (r,) + t.shape[ax + 1:])
        return tx.fresh(tx.op("reshape", tx.op("copy", wide), shape=t.shape[:ax] + (t.shape[ax] * r,) +
                              t.shape[ax + 1:]))
    if counts.shape != (t.shape[ax],):
        _fail(tx, ValueError(f"operands could not be broadcast together with shape ({t.shape[ax]},) "
                             f"({counts.shape[0]},)"))
    index = tx.builder.const(np.repeat(np.arange(t.shape[ax]), counts))
    spec = tuple(Operand(0) if k == ax else slice(None) for k in range(t.ndim))
    return tx.fresh(tx.op("getitem", node, index, spec=spec))


@numpy(np.tile)
def _tile(tx: TraceContext, A: Any, reps: Any) -> Any:
    node = tx.node(A)
    reps_arr = _plain_ints(tx, reps, "np.tile reps").reshape(-1)
    shape = node.tensor_type.shape
    d = max(len(shape), reps_arr.size)
    shape = (1,) * (d - len(shape)) + shape
    reps_t = (1,) * (d - reps_arr.size) + tuple(int(r) for r in reps_arr)
    node = tx.op("reshape", node, shape=shape)
    # (r0, s0, r1, s1, ...) broadcast, then merged: each axis is its block repeated r times
    inter = tuple(x for pair in zip((1,) * d, shape) for x in pair)
    wide = tuple(x for pair in zip(reps_t, shape) for x in pair)
    out = tx.op("broadcast_to", tx.op("reshape", node, shape=inter), shape=wide)
    return tx.fresh(tx.op("reshape", tx.op("copy", out), shape=tuple(r * s for r, s in zip(reps_t, shape))))


# ---- creation ----------------------------------------------------------------------------------------------------
@numpy(np.linspace)
def _linspace(tx: TraceContext, start: Any, stop: Any, num: Any = 50, endpoint: bool = True, retstep: bool = False,
              dtype: Any = None, axis: int = 0, **kwargs: Any) -> Any:
    """Trace-time bounds: NumPy's own result as a constant. Bounds from array data: NumPy's formula
    (``arange(num) * step + start``, the last element set to ``stop``)."""
    if not is_plain([num, endpoint, retstep, axis]) or contains_tarray(list(kwargs.values())):
        tx.graph_break("np.linspace with a count computed from array data")
    if not contains_tarray([start, stop]):
        try:
            result = np.linspace(start, stop, num, endpoint, retstep, dtype, axis, **kwargs)
        except Exception as exc:  # noqa: BLE001
            tx.graph_break(f"np.linspace: {exc}", exc)
        if retstep:
            return tx.fresh(tx.builder.const(result[0]), "array"), result[1]
        return tx.fresh(tx.builder.const(result), "array")
    a, b = tx.node(start), tx.node(stop)
    if a.tensor_type.shape != () or b.tensor_type.shape != () or retstep or dtype is not None or kwargs:
        tx.graph_break("np.linspace with array bounds, retstep or dtype computed from array data")
    n = int(num)
    if n < 0:
        _fail(tx, ValueError(f"Number of samples, {n}, must be non-negative."))
    div = (n - 1) if endpoint else n
    f64 = np.dtype(np.float64)
    a, b = (tx.op("astype", v, dtype=f64) for v in (a, b))
    delta = tx.op("subtract", b, a)
    y = tx.builder.const(np.arange(0, n, dtype=f64))
    if div > 0:
        step = tx.op("divide", delta, tx.node(float(div)))
        y = tx.op("add", tx.op("multiply", y, step), a)
    else:
        y = tx.op("add", tx.op("multiply", y, delta), a)
    if endpoint and n > 1:
        y = tx.op("setitem", y, b, spec=(n - 1,))
    return tx.fresh(y, "array")


# ---- rounding, comparison ------------------------------------------------------------------------------------------
@numpy(np.round, np.around)
@method("round")
def _round(tx: TraceContext, a: Any, decimals: Any = 0, out: Any = None) -> Any:
    if out is not None:
        tx.graph_break("np.round(out=...) is not supported by the tracer")
    if not isinstance(decimals, int | np.integer):
        tx.graph_break("np.round with decimals that are not a trace-time integer")
    x = as_array(tx, a)
    node = tx.read(x)
    kind = node.tensor_type.dtype.kind
    if kind == "c":
        tx.graph_break("np.round of complex values is not supported by the tracer")
    if kind in "iub":
        if decimals >= 0 or kind == "b":
            return tx.fresh(tx.op("copy", node), x.kind if x.kind != "py" else "scalar")
        tx.graph_break("np.round of integers to negative decimals is not supported by the tracer")
    result = round_decimals(tx, tx.strong(node), int(decimals))
    return tx.result(result)


@numpy(np.array_equal)
def _array_equal(tx: TraceContext, a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """Shapes decide at trace time; equal shapes compare every element (a NumPy bool, where NumPy returns a
    Python bool: equal in value and truth)."""
    x, y = tx.node(a1), tx.node(a2)
    if x.tensor_type.shape != y.tensor_type.shape:
        return False
    same = tx.op("equal", x, y)
    if equal_nan:
        both = tx.op("logical_and", tx.op("isnan", x), tx.op("isnan", y))
        same = tx.op("logical_or", same, both)
    return tx.result(tx.op("all", same, axis=tuple(range(same.tensor_type.ndim)), keepdims=False))


# ---- ufunc.outer ---------------------------------------------------------------------------------------------------
def _ufunc_outer(tx: TraceContext, ufunc: np.ufunc, a: Any, b: Any, **kwargs: Any) -> Any:
    if kwargs or ufunc.nin != 2:
        tx.graph_break(f"np.{ufunc.__name__}.outer with {sorted(kwargs)} is not supported")
    x, y = tx.node(a), tx.node(b)
    x = tx.op("reshape", x, shape=x.tensor_type.shape + (1,) * y.tensor_type.ndim)
    return tx.result(tx.strong(tx.op(ufunc.__name__, x, y)))


TABLE.ufunc_methods["outer"] = _ufunc_outer


# ---- sorting -------------------------------------------------------------------------------------------------------
def _sort_args(tx: TraceContext, x: TArray, axis: Any, kind: Any, order: Any, what: str) -> tuple[Any, str]:
    if order is not None:
        tx.graph_break(f"{what}(order=...) sorts structured arrays, which the tracer does not support")
    if axis is not None:
        (axis,) = axes_arg(tx, axis, tx.type_of(x).ndim, what)
    return axis, "quicksort" if kind is None else kind


@numpy(np.sort)
def _np_sort(tx: TraceContext, a: Any, axis: Any = -1, kind: Any = None, order: Any = None, **kwargs: Any) -> Any:
    x = as_array(tx, a)
    axis, kind = _sort_args(tx, x, axis, kind, order, "sort")
    return tx.fresh(tx.op("sort", tx.read(x), axis=axis, kind=kind), "array")


@numpy(np.argsort)
@method("argsort")
def _argsort(tx: TraceContext, a: Any, axis: Any = -1, kind: Any = None, order: Any = None, **kwargs: Any) -> Any:
    x = as_array(tx, a)
    axis, kind = _sort_args(tx, x, axis, kind, order, "argsort")
    return tx.fresh(tx.op("argsort", tx.read(x), axis=axis, kind=kind), "array")


@method("sort")
def _m_sort(tx: TraceContext, a: TArray, axis: Any = -1, kind: Any = None, order: Any = None) -> None:
    """``a.sort()`` sorts in place: a write of the sorted values."""
    if axis is None:
        _fail(tx, ValueError("axis None is not supported for ndarray.sort"))
    axis, kind = _sort_args(tx, a, axis, kind, order, "sort")
    tx.write(a, tx.op("sort", tx.read(a), axis=axis, kind=kind))


# ---- data-dependent sizes: named breaks ----------------------------------------------------------------------------
for _name in ("unique", "nonzero", "flatnonzero", "argwhere", "extract", "compress", "trim_zeros", "bincount",
              "histogram2d", "histogramdd", "setdiff1d", "union1d", "intersect1d"):
    TABLE.functions[getattr(np, _name)] = always_breaks(
        f"np.{_name}: the size of its result depends on the array data (the function splits there; "
        "np.unique used only through len/size/shape is one graph)" if _name == "unique" else
        f"np.{_name}: the size of its result depends on the array data (the function splits there)")


# ---- what the entries above do not support (docs/supported.md) --------------------------------------------------
TABLE.note("modes linear_ramp, maximum, mean, median, minimum and padding functions; reflect_type='odd'; reflect, "
           "symmetric and wrap widths larger than the axis; pad widths or constant values from array data", np.pad)
TABLE.note("counts computed from array data", np.repeat, ".repeat")
TABLE.note("reps computed from array data", np.tile)
TABLE.note("a count from array data; retstep= or dtype= with bounds from array data; array bounds", np.linspace)
TABLE.note("complex input; out=; negative decimals on integers", np.round, np.around, ".round")
TABLE.note("returns a NumPy bool where NumPy returns a Python bool (same truth and value)", np.array_equal)
TABLE.note("keyword arguments; ufuncs with one input", "ufunc.outer")
TABLE.note("order= (structured arrays); runs through NumPy (never inside a kernel or loop body)", np.sort, np.argsort,
           ".sort", ".argsort")
TABLE.note("axis=None; order= (structured arrays); runs through NumPy", ".sort")
