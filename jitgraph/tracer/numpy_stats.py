"""NumPy table entries for running and summary statistics: ``cumsum``/``cumprod`` (scan ops run through NumPy),
``diff``, ``searchsorted``, ``nansum``/``nanmean``, ``average``, ``isclose``/``allclose``, ``count_nonzero``, and
the selection functions ``take``, ``split``/``array_split`` and ``meshgrid``.

Formulas are NumPy's own (``isclose`` is ``|a - b| <= atol + rtol * |b|`` with equal infinities close and NaN
never close unless ``equal_nan``; ``nanmean`` divides the NaN-free sum by the NaN-free count), so results keep
NumPy's dtypes; where NumPy returns a Python ``bool`` or ``int`` (``allclose``, ``count_nonzero`` without an axis)
the graph returns the NumPy scalar of the same value.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.ir.ops.indexing import Operand
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.numpy_base import LoweringTable, as_array, axes_arg, dtype_arg, no_out
from jitgraph.tracer.values import TArray, contains_tarray

TABLE = LoweringTable("numpy_stats")
numpy, method = TABLE.numpy, TABLE.method


def _fail(tx: TraceContext, err: BaseException) -> None:
    tx.graph_break(str(err), err)


def _one_axis(tx: TraceContext, axis: Any, ndim: int, what: str) -> int | None:
    return None if axis is None else axes_arg(tx, axis, ndim, what)[0]


# ---- scans and differences ---------------------------------------------------------------------------------------
def _scan(name: str) -> Any:
    def lowering(tx: TraceContext, a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        no_out(tx, out, name)
        x = as_array(tx, a)
        dt = None if dtype is None else dtype_arg(tx, dtype)
        node = tx.op(name, tx.strong(tx.read(x)), axis=_one_axis(tx, axis, tx.type_of(x).ndim, name), dtype=dt)
        return tx.fresh(node, "array")

    return lowering


for _name in ("cumsum", "cumprod"):
    TABLE.functions[getattr(np, _name)] = TABLE.methods[_name] = _scan(_name)


@numpy(np.diff)
def _diff(tx: TraceContext, a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """``a[1:] - a[:-1]`` along ``axis``, ``n`` times (booleans: ``!=``, as NumPy)."""
    if prepend is not None or append is not None:
        tx.graph_break("np.diff with prepend= or append= is not supported by the tracer")
    if not isinstance(n, int) or n < 0:
        _fail(tx, ValueError(f"order must be non-negative but got {n!r}"))
    node = tx.strong(tx.node(a))
    ndim = node.tensor_type.ndim
    if ndim == 0:
        _fail(tx, ValueError("diff requires input that is at least one dimensional"))
    (ax,) = axes_arg(tx, axis, ndim, "diff")
    op = "not_equal" if node.tensor_type.dtype.kind == "b" else "subtract"
    for _ in range(n):
        hi = tx.op("getitem", node, spec=tuple(slice(1, None) if k == ax else slice(None) for k in range(ndim)))
        lo = tx.op("getitem", node, spec=tuple(slice(None, -1) if k == ax else slice(None) for k in range(ndim)))
        node = tx.op(op, hi, lo)
    return tx.fresh(node if n else tx.op("copy", node), "array")


@numpy(np.searchsorted)
@method("searchsorted")
def _searchsorted(tx: TraceContext, a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    if sorter is not None:
        tx.graph_break("np.searchsorted(sorter=...) is not supported by the tracer")
    return tx.result(tx.op("searchsorted", tx.strong(tx.node(a)), tx.strong(tx.node(v)), side=side))


# ---- NaN-aware and weighted summaries ------------------------------------------------------------------------------
def _reduce_args(tx: TraceContext, x: Node, axis: Any, what: str) -> tuple[int, ...]:
    if isinstance(axis, TArray):
        tx.graph_break(f"{what}: axis computed from array data")
    return axes_arg(tx, axis, x.tensor_type.ndim, what)


@numpy(np.nansum)
def _nansum(tx: TraceContext, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False) -> Any:
    no_out(tx, out, "nansum")
    x = tx.strong(tx.node(a))
    axes = _reduce_args(tx, x, axis, "nansum")
    if x.tensor_type.dtype.kind in "fc":
        x = tx.op("where", tx.op("isnan", x), tx.node(0), x)
    attrs: dict[str, Any] = {"axis": axes, "keepdims": bool(keepdims)}
    if dtype is not None:
        attrs["dtype"] = dtype_arg(tx, dtype)
    return tx.result(tx.op("sum", x, **attrs))


@numpy(np.nanmean)
def _nanmean(tx: TraceContext, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: bool = False) -> Any:
    no_out(tx, out, "nanmean")
    x = tx.strong(tx.node(a))
    if x.tensor_type.dtype.kind not in "fc":
        return tx.result(tx.op("mean", x, axis=_reduce_args(tx, x, axis, "nanmean"), keepdims=bool(keepdims)))
    if dtype is not None:
        tx.graph_break("np.nanmean(dtype=...) is not supported by the tracer")
    axes = _reduce_args(tx, x, axis, "nanmean")
    nan = tx.op("isnan", x)
    total = tx.op("sum", tx.op("where", nan, tx.node(0), x), axis=axes, keepdims=bool(keepdims))
    count = tx.op("sum", tx.op("logical_not", nan), axis=axes, keepdims=bool(keepdims))
    return tx.result(tx.op("divide", total, tx.op("astype", count, dtype=x.tensor_type.dtype)))


@numpy(np.average)
def _average(tx: TraceContext, a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
             keepdims: bool = False) -> Any:
    x = tx.strong(tx.node(a))
    axes = _reduce_args(tx, x, axis, "average")
    if weights is None:
        if returned:
            tx.graph_break("np.average(returned=True) is not supported by the tracer")
        return tx.result(tx.op("mean", x, axis=axes, keepdims=bool(keepdims)))
    w = tx.strong(tx.node(weights))
    if returned or w.tensor_type.shape != x.tensor_type.shape:
        tx.graph_break("np.average with returned=True or weights of another shape than the array")
    dt = np.result_type(x.tensor_type.dtype, w.tensor_type.dtype, np.float64 if x.tensor_type.dtype.kind in "iub"
                        else x.tensor_type.dtype)
    x, w = tx.op("astype", x, dtype=dt), tx.op("astype", w, dtype=dt)
    scale = tx.op("sum", w, axis=axes, keepdims=bool(keepdims))
    total = tx.op("sum", tx.op("multiply", x, w), axis=axes, keepdims=bool(keepdims))
    ok = tx.op("all", tx.op("not_equal", scale, tx.node(0)), axis=tuple(range(scale.tensor_type.ndim)),
               keepdims=False)
    scale = tx.op("check", scale, ok, message="Weights sum to zero, can't be normalized", error="ZeroDivisionError")
    return tx.result(tx.op("divide", total, scale))


def _isclose_node(tx: TraceContext, a: Any, b: Any, rtol: float, atol: float, equal_nan: bool) -> Node:
    if contains_tarray([rtol, atol, equal_nan]):
        tx.graph_break("np.isclose with rtol/atol/equal_nan computed from array data")
    x, y = tx.strong(tx.node(a)), tx.strong(tx.node(b))
    dt = np.result_type(x.tensor_type.dtype, y.tensor_type.dtype, 1.0)
    x, y = tx.op("astype", x, dtype=dt), tx.op("astype", y, dtype=dt)
    err = tx.op("absolute", tx.op("subtract", x, y))
    bound = tx.op("add", tx.node(np.asarray(atol, dt)), tx.op("multiply", tx.node(np.asarray(rtol, dt)),
                                                               tx.op("absolute", y)))
    finite = tx.op("logical_and", tx.op("isfinite", x), tx.op("isfinite", y))
    close = tx.op("logical_or", tx.op("logical_and", finite, tx.op("less_equal", err, bound)),
                  tx.op("logical_and", tx.op("logical_not", finite), tx.op("equal", x, y)))
    if equal_nan:
        close = tx.op("logical_or", close, tx.op("logical_and", tx.op("isnan", x), tx.op("isnan", y)))
    return close


@numpy(np.isclose)
def _isclose(tx: TraceContext, a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Any:
    return tx.result(_isclose_node(tx, a, b, rtol, atol, equal_nan))


@numpy(np.allclose)
def _allclose(tx: TraceContext, a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
              equal_nan: bool = False) -> Any:
    close = _isclose_node(tx, a, b, rtol, atol, equal_nan)
    return tx.result(tx.op("all", close, axis=tuple(range(close.tensor_type.ndim)), keepdims=False))


@numpy(np.count_nonzero)
def _count_nonzero(tx: TraceContext, a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    x = tx.node(a)
    axes = _reduce_args(tx, x, axis, "count_nonzero")
    nonzero = tx.op("not_equal", x, tx.node(0)) if x.tensor_type.dtype.kind != "b" else x
    return tx.result(tx.op("astype", tx.op("sum", nonzero, axis=axes, keepdims=bool(keepdims)),
                           dtype=np.dtype(np.intp)))


# ---- selection -----------------------------------------------------------------------------------------------------
@numpy(np.take)
@method("take")
def _take(tx: TraceContext, a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    no_out(tx, out, "take")
    if mode != "raise":
        tx.graph_break(f"np.take(mode={mode!r}) is not supported by the tracer")
    x = tx.node(a)
    if axis is None:
        x, ax = tx.op("reshape", x, shape=(-1,)), 0
    else:
        (ax,) = axes_arg(tx, axis, x.tensor_type.ndim, "take")
    index = tx.node(indices)
    if index.tensor_type.dtype.kind not in "iu":
        _fail(tx, TypeError("Cannot cast array data from dtype('float64') to dtype('int64') according to the rule "
                            "'safe'"))
    spec = tuple(Operand(0) if k == ax else slice(None) for k in range(x.tensor_type.ndim))
    return tx.result(tx.op("getitem", x, index, spec=spec))


def _split_points(tx: TraceContext, n: int, sections: Any, exact: bool) -> list[int]:
    if isinstance(sections, TArray) or contains_tarray(sections):
        tx.graph_break("np.split with sections computed from array data")
    if isinstance(sections, int | np.integer):
        k = int(sections)
        if k <= 0:
            _fail(tx, ValueError("number sections must be larger than 0."))
        if exact and n % k:
            _fail(tx, ValueError("array split does not result in an equal division"))
        each, extra = divmod(n, k)
        sizes = [each + 1] * extra + [each] * (k - extra)
        return [int(s) for s in np.cumsum([0] + sizes)]
    return [0] + [int(i) for i in sections] + [n]


def _splitter(exact: bool) -> Any:
    def lowering(tx: TraceContext, ary: Any, indices_or_sections: Any, axis: int = 0) -> Any:
        x = as_array(tx, ary)
        t = tx.type_of(x)
        (ax,) = axes_arg(tx, axis, t.ndim, "split")
        points = _split_points(tx, t.shape[ax], indices_or_sections, exact)
        return [tx.view(x, "getitem", spec=tuple(slice(lo, hi) if k == ax else slice(None) for k in range(t.ndim)))
                for lo, hi in itertools.pairwise(points)]

    return lowering


TABLE.functions[np.split] = _splitter(True)
TABLE.functions[np.array_split] = _splitter(False)


@numpy(np.meshgrid)
def _meshgrid(tx: TraceContext, *xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> Any:
    if indexing not in ("xy", "ij"):
        _fail(tx, ValueError("Valid values for `indexing` are 'xy' and 'ij'."))
    nodes = [tx.op("reshape", tx.node(x), shape=(-1,)) for x in xi]
    ndim = len(nodes)
    sizes = [n.tensor_type.shape[0] for n in nodes]
    out_shape = list(sizes)
    if indexing == "xy" and ndim > 1:
        out_shape[0], out_shape[1] = out_shape[1], out_shape[0]
    result = []
    for k, n in enumerate(nodes):
        axis = (1 if k == 0 else 0 if k == 1 else k) if indexing == "xy" and ndim > 1 else k
        shape = tuple(sizes[k] if j == axis else 1 for j in range(ndim))
        node = tx.op("reshape", n, shape=shape)
        if not sparse:
            node = tx.op("broadcast_to", node, shape=tuple(out_shape))
            node = tx.op("copy", node) if copy else node
        result.append(tx.fresh(node, "array"))
    return tuple(result)


# ---- what the entries above do not support (docs/supported.md) --------------------------------------------------
# ---- histogram (fixed bins): one graph op (jitgraph/ir/ops/histogram.py) ---------------------------------------------
@numpy(np.histogram)
def _histogram(tx: TraceContext, a: Any, bins: Any = 10, range: Any = None, density: Any = None,
               weights: Any = None) -> Any:
    """The counts and edges of a fixed number of bins, or of fixed edges; NumPy computes both inside the graph."""
    if isinstance(bins, str):
        tx.graph_break(f"np.histogram(bins={bins!r}): the number of bins depends on the array data")
    if contains_tarray(range) or isinstance(density, TArray):
        tx.graph_break("np.histogram with range= or density= computed from array data")
    if range is not None:
        try:
            lo, hi = range
            range = (lo.item() if isinstance(lo, np.generic) else lo, hi.item() if isinstance(hi, np.generic) else hi)
        except (TypeError, ValueError) as exc:
            tx.graph_break(f"np.histogram: {exc}", exc)
    operands = [as_array(tx, a)]
    if isinstance(bins, int | np.integer) and not isinstance(bins, bool):
        count: int | None = int(bins)
    elif isinstance(bins, TArray | list | tuple | np.ndarray):
        count = None
        operands.append(as_array(tx, bins))
    else:
        tx.graph_break(f"np.histogram: bins of type {type(bins).__name__}")
    if weights is not None:
        operands.append(as_array(tx, weights))
    node = tx.op("histogram", *(tx.read(o) for o in operands), bins=count, range=range, density=bool(density),
                 weighted=weights is not None)
    return tuple(tx.fresh(tx.op("tuple_get", node, index=k), "array") for k in (0, 1))


# ---- median, quantile, percentile: one graph op run by NumPy (jitgraph/ir/ops/quantile.py) -------------------------
def _order_statistic(fn: str) -> Any:
    def lowering(tx: TraceContext, a: Any, *args: Any, axis: Any = None, out: Any = None,
                 overwrite_input: bool = False, method: str = "linear", keepdims: bool = False, **kwargs: Any) -> Any:
        with_q = "median" not in fn
        if len(args) > (1 if with_q else 0) or (with_q and not args):
            tx.graph_break(f"np.{fn}: axis, out and the rest are traced as keywords only")
        if out is not None or kwargs or not isinstance(method, str) or contains_tarray([axis, keepdims]):
            tx.graph_break(f"np.{fn} with out=, weights=, interpolation= or arguments computed from array data")
        x = as_array(tx, a)
        axes = None if axis is None else axes_arg(tx, axis, tx.type_of(x).ndim, fn)
        operands = [tx.read(x)] + ([tx.read(as_array(tx, args[0]))] if with_q else [])
        node = tx.op("quantile", *operands, fn=fn, axis=axes, keepdims=bool(keepdims), method=method)
        return tx.result(node)

    return lowering


for _fn in ("median", "quantile", "percentile", "nanmedian", "nanquantile", "nanpercentile"):
    TABLE.functions[getattr(np, _fn)] = _order_statistic(_fn)


TABLE.note("out=; runs through NumPy (never inside a kernel or loop body)", np.cumsum, np.cumprod, ".cumsum",
           ".cumprod")
TABLE.note("prepend=, append=", np.diff)
TABLE.note("sorter=; runs through NumPy", np.searchsorted, ".searchsorted")
TABLE.note("out=; dtype= for nanmean", np.nansum, np.nanmean)
TABLE.note("returned=True; weights of another shape than the array", np.average)
TABLE.note("rtol/atol from array data; allclose returns a NumPy bool (NumPy: a Python bool)", np.isclose,
           np.allclose)
TABLE.note("returns a NumPy intp where NumPy returns a Python int (no axis)", np.count_nonzero)
TABLE.note("out=; mode other than 'raise'", np.take, ".take")
TABLE.note("sections computed from array data", np.split, np.array_split)
TABLE.note("views (copy=False) are copies' values without the aliasing", np.meshgrid)
TABLE.note("out=, overwrite_input=, weights=; runs through NumPy (never inside a kernel or loop body)", np.median,
           np.quantile, np.percentile, np.nanmedian, np.nanquantile, np.nanpercentile)
TABLE.note("bins given as a string ('auto', ...: a number of bins chosen by the data); runs through NumPy (never "
           "inside a kernel or loop body)", np.histogram)
