"""NumPy table entries that create arrays: zeros/ones/full(_like), arange, eye, array/asarray/copy, astype and
scalar-type conversions."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.symbols import Sym
from jitgraph.tracer import resume
from jitgraph.tracer.arrays import array_setitem
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.numpy_base import Lowering, LoweringTable, as_array, dtype_arg, shape_arg
from jitgraph.tracer.numpy_shapes import memory_axes, stride_proto
from jitgraph.tracer.scalar_builtins import conversion
from jitgraph.tracer.split import NOT_CUT
from jitgraph.tracer.values import TArray, contains_tarray, is_plain

TABLE = LoweringTable("numpy_creation")
numpy, method = TABLE.numpy, TABLE.method


# ---- creation -------------------------------------------------------------------------------------------------
# Sizes are what ``operator.index`` accepts (NumPy raises TypeError for ``np.eye(3.0)``); anything else breaks, and
# the eager call raises NumPy's own error. Results laid out in another order than C are a transpose view of a C array
# with the axes in memory order, so later reshapes and ravels copy or view exactly where NumPy's would.
def _size(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _int_arg(tx: TraceContext, value: Any, what: str, allow_bool: bool = False) -> int:
    if _size(value) or (allow_bool and isinstance(value, bool | np.bool_)):
        return int(value)
    if isinstance(value, float | np.floating):
        err = TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer")
        tx.graph_break(f"{what}: {err}", err)
    tx.graph_break(f"{what}: a {type(value).__name__} where NumPy wants an integer")


def _creation_kwargs(tx: TraceContext, kwargs: dict[str, Any], what: str) -> None:
    """``like=None`` and ``device='cpu'`` change nothing; any other keyword is NumPy's TypeError or not traced."""
    for key, value in kwargs.items():
        if key not in ("like", "device"):
            err = TypeError(f"{what}() got an unexpected keyword argument '{key}'")
            tx.graph_break(str(err), err)
        if value is not None and not (key == "device" and value == "cpu"):
            tx.graph_break(f"np.{what}({key}={value!r}) is not supported by the tracer")


def _creation_order(tx: TraceContext, order: Any, what: str) -> str:
    if isinstance(order, str) and order.upper() in ("C", "F"):
        return order.upper()
    tx.graph_break(f"np.{what}(order={order!r}): only 'C' and 'F' are traced")


def _laid_out(tx: TraceContext, make: Any, shape: tuple[int, ...], axes: tuple[int, ...] | None) -> TArray:
    """``make(shape)`` (a node) laid out in memory with ``axes`` outermost-first; None or ``range(n)`` is C order."""
    if axes is None or axes == tuple(range(len(shape))) or len(shape) != len(axes):
        return tx.fresh(make(shape))
    base = tx.fresh(make(tuple(shape[a] for a in axes)))
    return tx.view(base, "transpose", axes=tuple(int(i) for i in np.argsort(axes)))


def _f_axes(shape: tuple[int, ...], order: str) -> tuple[int, ...] | None:
    return tuple(reversed(range(len(shape)))) if order == "F" else None


def _fill(name: str) -> Lowering:
    def fn(tx: TraceContext, shape: Any, dtype: Any = float, order: str = "C", **kwargs: Any) -> Any:
        _creation_kwargs(tx, kwargs, name)
        dims, dt = shape_arg(tx, shape), dtype_arg(tx, dtype)
        axes = _f_axes(dims, _creation_order(tx, order, name))
        return _laid_out(tx, lambda s: tx.op(name, shape=s, dtype=dt), dims, axes)

    return fn


TABLE.functions[np.zeros] = _fill("zeros")
TABLE.functions[np.ones] = _fill("ones")
# np.empty's contents are unspecified: zeros is a valid choice and keeps outputs deterministic.
TABLE.functions[np.empty] = _fill("zeros")


def _full_node(tx: TraceContext, shape: tuple[int, ...], value: Any, dtype: np.dtype | None,
               axes: tuple[int, ...] | None = None) -> TArray:
    if isinstance(value, TArray):
        node = tx.read(value)
        dt = dtype if dtype is not None else (np.dtype(np.float64) if node.tensor_type.weak else
                                               node.tensor_type.dtype)
        node = tx.op("astype", node, dtype=dt)
        return _laid_out(tx, lambda s: tx.op("copy", tx.op("broadcast_to", node, shape=s)), shape, axes)
    if not is_plain(value):
        tx.graph_break("np.full with a non-scalar fill value")
    dt = dtype if dtype is not None else np.asarray(value).dtype
    return _laid_out(tx, lambda s: tx.op("full", shape=s, dtype=dt, value=value), shape, axes)


@numpy(np.full)
def _full(tx: TraceContext, shape: Any, fill_value: Any, dtype: Any = None, order: str = "C", **kwargs: Any) -> Any:
    _creation_kwargs(tx, kwargs, "full")
    dims = shape_arg(tx, shape)
    return _full_node(tx, dims, fill_value, None if dtype is None else dtype_arg(tx, dtype),
                      _f_axes(dims, _creation_order(tx, order, "full")))


def _like_axes(tx: TraceContext, a: TArray, shape: tuple[int, ...], order: Any) -> tuple[int, ...] | None:
    """NumPy's memory order for ``*_like(a, order=...)``: 'K' follows ``a``'s strides, 'A' is F for a Fortran
    array; a new ``shape`` of another rank is C."""
    if not isinstance(order, str) or order.upper() not in ("C", "F", "A", "K"):
        tx.graph_break(f"*_like(order={order!r}): NumPy raises or the order is not traced")
    order = order.upper()
    if order in ("C", "F"):
        return _f_axes(shape, order)
    proto = stride_proto(tx, a)
    if proto is None or proto.flags.c_contiguous or proto.ndim != len(shape):
        return None  # unknown strides: the IR's own assumption (computed arrays are C-ordered)
    if proto.flags.f_contiguous:
        return _f_axes(shape, "F")
    if order == "A":
        return None
    return memory_axes(proto)


def _like(name: str) -> Lowering:
    def fn(tx: TraceContext, a: Any, dtype: Any = None, order: str = "K", subok: bool = True,
           shape: Any = None, **kwargs: Any) -> Any:
        _creation_kwargs(tx, kwargs, f"{name}_like")
        x = as_array(tx, a)
        t = tx.type_of(x)
        out_shape = t.shape if shape is None else shape_arg(tx, shape)
        dt = t.dtype if dtype is None else dtype_arg(tx, dtype)
        if t.weak and dtype is None:
            dt = np.dtype(np.float64) if t.dtype.kind == "f" else np.dtype(np.int64)
        axes = _like_axes(tx, x, out_shape, order)
        return _laid_out(tx, lambda s: tx.op(name, shape=s, dtype=dt), out_shape, axes)

    return fn


TABLE.functions[np.zeros_like] = _like("zeros")
TABLE.functions[np.ones_like] = _like("ones")
TABLE.functions[np.empty_like] = _like("zeros")


@numpy(np.full_like)
def _full_like(tx: TraceContext, a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True,
               shape: Any = None, **kwargs: Any) -> Any:
    _creation_kwargs(tx, kwargs, "full_like")
    x = as_array(tx, a)
    t = tx.type_of(x)
    out_shape = t.shape if shape is None else shape_arg(tx, shape)
    return _full_node(tx, out_shape, fill_value, t.dtype if dtype is None else dtype_arg(tx, dtype),
                      _like_axes(tx, x, out_shape, order))


@numpy(np.arange)
def _arange(tx: TraceContext, start: Any, stop: Any = None, step: Any = None, dtype: Any = None,
            **kwargs: Any) -> Any:
    """NumPy's dtype for arange is the promotion of every bound (stop and step included) with at least intp:
    ``np.arange(3.)`` is float64, ``np.arange(np.int8(3))`` int64."""
    _creation_kwargs(tx, kwargs, "arange")
    size = tx.size_symbol(start) if stop is None and step is None and dtype is None else None
    if type(size) is Sym:  # ``np.arange(x.shape[0])`` of a symbolic size: 0, 1, ..., s0 - 1 (ir/symbols.py)
        return tx.fresh(tx.op("arange", start=0, stop=size, step=1, dtype=np.dtype(np.intp)))
    if contains_tarray([start, stop, step]):
        tx.graph_break("np.arange with bounds computed from array data")
    bounds = [v for v in (start, stop, step) if v is not None]
    if not all(isinstance(v, bool | int | float | complex | np.number | np.bool_) for v in bounds):
        tx.graph_break("np.arange with bounds that are not numbers")
    try:
        dt = np.result_type(np.intp, *(np.asarray(v).dtype for v in bounds)) if dtype is None else np.dtype(dtype)
    except Exception as exc:  # noqa: BLE001
        tx.graph_break(f"np.arange: {exc}", exc)
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    return tx.fresh(tx.op("arange", start=start, stop=stop, step=step, dtype=dt))


@numpy(np.eye)
def _eye(tx: TraceContext, N: Any, M: Any = None, k: Any = 0, dtype: Any = float, order: str = "C",
         **kwargs: Any) -> Any:
    _creation_kwargs(tx, kwargs, "eye")
    n = _int_arg(tx, N, "eye")
    m = n if M is None else _int_arg(tx, M, "eye")
    diag, dt = _int_arg(tx, k, "eye", allow_bool=True), dtype_arg(tx, dtype)
    if _creation_order(tx, order, "eye") == "C":
        return tx.fresh(tx.op("eye", n=n, m=m, k=diag, dtype=dt))
    return _laid_out(tx, lambda s: tx.op("eye", n=m, m=n, k=-diag, dtype=dt), (n, m), (1, 0))  # eye(n, m, k).T


@numpy(np.identity)
def _identity(tx: TraceContext, n: Any, dtype: Any = None, **kwargs: Any) -> Any:
    return _eye(tx, n, dtype=float if dtype is None else dtype, **kwargs)


@numpy(np.copy)
def _np_copy(tx: TraceContext, a: Any, order: str = "K", subok: bool = False) -> Any:
    return tx.fresh(tx.op("copy", tx.node(a)), "array")


@method("copy")
def _m_copy(tx: TraceContext, a: TArray, order: str = "C") -> Any:
    return tx.fresh(tx.op("copy", tx.read(a)), a.kind)


@numpy(np.array)
def _np_array(tx: TraceContext, obj: Any, dtype: Any = None, *, copy: bool = True, **kwargs: Any) -> Any:
    value = obj if isinstance(obj, TArray) else (tx.stack_values(obj) if contains_tarray(obj) else None)
    if value is None:
        try:
            return tx.fresh(tx.builder.const(np.array(obj, dtype=dtype)), "array")
        except Exception as exc:  # noqa: BLE001
            tx.graph_break(f"np.array: {exc}", exc)
    node = tx.read(value)
    if dtype is not None:
        node = tx.op("astype", node, dtype=dtype_arg(tx, dtype))
    elif node.tensor_type.weak:
        node = tx.op("astype", node, dtype=node.tensor_type.dtype)
    if copy is False and node is tx.read(value):
        return value if value.kind == "array" else tx.fresh(node, "array")
    return tx.fresh(tx.op("copy", node), "array")


@numpy(np.asarray, np.asanyarray)
def _asarray(tx: TraceContext, a: Any, dtype: Any = None, order: Any = None, **kwargs: Any) -> Any:
    if isinstance(a, TArray) and a.kind == "array" and (dtype is None or dtype_arg(tx, dtype) == tx.type_of(a).dtype):
        return a
    return _np_array(tx, a, dtype=dtype, copy=False)


@numpy(np.ascontiguousarray)
def _ascontiguousarray(tx: TraceContext, a: Any, dtype: Any = None, **kwargs: Any) -> Any:
    if isinstance(a, TArray) and a.kind == "array" and tx.layout(a) == "C" and dtype is None:
        return a
    return _np_array(tx, a, dtype=dtype)


@method("astype")
def _astype(tx: TraceContext, a: TArray, dtype: Any, order: str = "K", casting: str = "unsafe",
            subok: bool = True, copy: bool = True) -> Any:
    dt = dtype_arg(tx, dtype)
    if casting != "unsafe" and not np.can_cast(tx.type_of(a).dtype, dt, casting=casting):
        err = TypeError(f"Cannot cast array data from {tx.type_of(a).dtype} to {dt} according to the rule "
                        f"'{casting}'")
        tx.graph_break(str(err), err)
    if not copy and dt == tx.type_of(a).dtype:
        return a
    return tx.fresh(tx.op("astype", tx.read(a), dtype=dt), a.kind)


@method("fill")
def _fill_method(tx: TraceContext, a: TArray, value: Any) -> None:
    """``a.fill(v)`` is ``a[...] = v``: the same store, and the same OverflowError for an int that does not fit."""
    array_setitem(tx, a, Ellipsis, value)


@method("item")
def _item(tx: TraceContext, a: TArray, *args: Any) -> Any:
    """``a.item()`` of a one-element float or int array: a Python number of the graph, as ``float(a)``/``int(a)``
    (a branch on it is a data-dependent cut, tracer/resume.py)."""
    t = tx.type_of(a)
    if args or t.size != 1 or t.dtype.kind not in "fiu" or (t.dtype.kind == "u" and t.dtype.itemsize == 8):
        _needs_data(tx, a)
    node = tx.read(a)
    if t.shape != ():
        node = tx.op("reshape", node, shape=())
    return conversion(tx, float if t.dtype.kind == "f" else int, tx.fresh(node, "scalar"))


@method("nonzero")
def _nonzero_method(tx: TraceContext, a: TArray) -> Any:
    """``a.nonzero()`` is ``np.nonzero(a)``: its size depends on the data, so the trace resumes after it
    (tracer/resume.py), or breaks where it cannot."""
    value = resume.data_call(tx, np.nonzero, [a], {})
    if value is NOT_CUT:
        _needs_data(tx, a)
    return value


@method("tolist", "tobytes", "__array__")
def _needs_data(tx: TraceContext, a: TArray, *args: Any, **kwargs: Any) -> Any:
    tx.graph_break("this array method needs the array's data at trace time (.item(), .tolist(), .nonzero())")


@numpy(np.shape)
def _np_shape(tx: TraceContext, a: Any) -> tuple[int, ...]:
    return tx.type_of(as_array(tx, a)).shape


@numpy(np.ndim)
def _np_ndim(tx: TraceContext, a: Any) -> int:
    return tx.type_of(as_array(tx, a)).ndim


@numpy(np.size)
def _np_size(tx: TraceContext, a: Any, axis: Any = None) -> int:
    t = tx.type_of(as_array(tx, a))
    return t.size if axis is None else t.shape[axis]


def _trace_time_helper(helper: Any) -> Lowering:
    """NumPy helpers about dtypes and shapes: fine on trace-time values, a break on traced ones."""

    def fn(tx: TraceContext, *args: Any, **kwargs: Any) -> Any:
        if contains_tarray(list(args)) or contains_tarray(list(kwargs.values())):
            tx.graph_break(f"np.{helper.__name__} on traced values")
        return helper(*args, **kwargs)

    return fn


for _helper in (np.dtype, np.result_type, np.promote_types, np.can_cast, np.finfo, np.iinfo):
    TABLE.functions[_helper] = _trace_time_helper(_helper)


def _scalar_type(dtype_type: type) -> Lowering:
    def fn(tx: TraceContext, value: Any = 0) -> Any:
        if isinstance(value, TArray):
            node = tx.op("astype", tx.read(value), dtype=np.dtype(dtype_type))
            return tx.fresh(node, "scalar" if node.tensor_type.shape == () else "array")
        if not is_plain(value):
            tx.graph_break(f"np.{dtype_type.__name__} of a non-constant")
        return dtype_type(value)

    return fn


for _t in (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
           np.uint32, np.uint64, np.bool_, np.complex64, np.complex128):
    TABLE.functions[_t] = _scalar_type(_t)




# ---- what the entries above do not support (docs/supported.md) --------------------------------------------------
TABLE.note("order other than 'C'/'F'; like=; a shape computed from array data", np.zeros, np.ones, np.empty, np.eye,
           np.identity)
TABLE.note("a non-scalar fill value; order other than 'C'/'F'; like=", np.full)
TABLE.note("order='A'/'K' of an array whose memory order the tracer does not know; a shape from array data",
           np.zeros_like, np.ones_like, np.empty_like, np.full_like)
TABLE.note("bounds computed from array data", np.arange)
TABLE.note("traced arguments (they answer questions about dtypes and shapes at trace time)",
           np.dtype, np.result_type, np.promote_types, np.can_cast, np.finfo, np.iinfo)
_needs_data.breaks = "needs the array's data at trace time"  # type: ignore[attr-defined]


@numpy(np.ndarray, unsupported="buffer=, offset=, strides= (views of existing memory)")
def _ndarray(tx: TraceContext, shape: Any, dtype: Any = float, buffer: Any = None, offset: int = 0,
             strides: Any = None, order: Any = None) -> Any:
    """``np.ndarray(shape)`` is uninitialised memory: zeros are a valid content (as for ``np.empty``)."""
    if buffer is not None or offset or strides is not None:
        tx.graph_break("np.ndarray(buffer=...) makes a view of existing memory")
    return TABLE.functions[np.empty](tx, shape, dtype, "C" if order is None else order)
