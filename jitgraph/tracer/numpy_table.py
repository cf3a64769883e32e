"""The one table from NumPy callables (functions, ufuncs, scalar types, array methods) to IR ops.

Each entry is a *lowering*: ``lowering(tx, *args, **kwargs)`` with NumPy's own signature, which records IR ops and
returns the traced result. Python's argument binding checks the call shape for us; a callable missing from the
table is a graph break naming it. squeeze/expand_dims/swapaxes/ravel/``.T`` lower onto reshape/transpose, the
``*_like`` creators onto zeros/ones/full with the argument's shape and dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.errors import TypeInferenceError
from jitgraph.ir.ops.elementwise import BINARY_UFUNCS, UNARY_UFUNCS
from jitgraph.ir.ops.rules import normalize_axes
from jitgraph.ir.types import TensorType
from jitgraph.tracer.arrays import inplace_update, store_into
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.values import TArray, contains_tarray, is_plain

Lowering = Callable[..., Any]
NUMPY: dict[Any, Lowering] = {}
ARRAY_METHODS: dict[str, Lowering] = {}
UFUNC_METHODS: dict[str, Lowering] = {}


def numpy(*fns: Any) -> Callable[[Lowering], Lowering]:
    def deco(lowering: Lowering) -> Lowering:
        for fn in fns:
            NUMPY[fn] = lowering
        return lowering

    return deco


def method(*names: str) -> Callable[[Lowering], Lowering]:
    def deco(lowering: Lowering) -> Lowering:
        for name in names:
            ARRAY_METHODS[name] = lowering
        return lowering

    return deco


# ---- helpers --------------------------------------------------------------------------------------------------
def _array(tx: TraceContext, value: Any) -> TArray:
    """An operand as a tracked array (constants become constant nodes)."""
    if isinstance(value, TArray):
        return value
    return tx.fresh(tx.node(value), "array")


def _axes(tx: TraceContext, axis: Any, ndim: int, what: str) -> tuple[int, ...]:
    if isinstance(axis, TArray):
        tx.graph_break(f"{what}: axis computed from array data")
    try:
        return normalize_axes(axis, ndim, what)
    except TypeInferenceError as exc:
        tx.graph_break(exc.message, getattr(exc, "original", None))


def _shape_arg(tx: TraceContext, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    if isinstance(shape, tuple | list) and all(isinstance(d, int | np.integer) for d in shape):
        return tuple(int(d) for d in shape)
    tx.graph_break("a shape that is not a tuple of trace-time integers")


def _dtype(tx: TraceContext, dtype: Any) -> np.dtype:
    if isinstance(dtype, TArray):
        tx.graph_break("a dtype computed from array data")
    try:
        return np.dtype(dtype)
    except TypeError as exc:
        tx.graph_break(str(exc), exc)


def _no_out(tx: TraceContext, out: Any, what: str) -> None:
    if out is not None:
        tx.graph_break(f"{what}(out=...) is not supported by the tracer")


# ---- elementwise ----------------------------------------------------------------------------------------------
def _ufunc_lowering(name: str, nin: int) -> Lowering:
    def lowering(tx: TraceContext, *args: Any, out: Any = None, dtype: Any = None, **kwargs: Any) -> Any:
        if kwargs:
            tx.graph_break(f"np.{name} with {sorted(kwargs)} is not supported by the tracer")
        if len(args) == nin + 1 and out is None:
            *args, out = args
        if len(args) != nin:
            err = TypeError(f"{name}() takes from {nin} to {nin + 1} positional arguments but {len(args)} were given")
            tx.graph_break(str(err), err)
        if dtype is not None:
            tx.graph_break(f"np.{name}(dtype=...) is not supported by the tracer")
        if isinstance(out, tuple) and len(out) == 1:
            out = out[0]
        node = tx.op(name, *(tx.node(a) for a in args))
        if out is not None:
            if not isinstance(out, TArray) or out.kind != "array":
                tx.graph_break(f"np.{name}(out=...) into a non-array")
            store_into(tx, out, node, name, args[-1])
            return out
        return tx.result(node)

    return lowering


for _name in UNARY_UFUNCS:
    NUMPY[getattr(np, _name)] = _ufunc_lowering(_name, 1)
for _name in BINARY_UFUNCS:
    NUMPY[getattr(np, _name)] = _ufunc_lowering(_name, 2)


@numpy(np.where)
def _where(tx: TraceContext, condition: Any, *xy: Any) -> Any:
    if len(xy) != 2:
        tx.graph_break("np.where with one argument returns data-dependent indices")
    node = tx.op("where", tx.node(condition), tx.node(xy[0]), tx.node(xy[1]))
    return tx.result(node, scalar_if_0d=False)


def _clip_impl(tx: TraceContext, a: Any, lo: Any, hi: Any) -> Any:
    x = tx.node(a)
    if lo is None and hi is None:
        err = ValueError("One of max or min must be given")
        tx.graph_break(str(err), err)
    if lo is None:
        return tx.result(tx.op("minimum", x, tx.node(hi)))
    if hi is None:
        return tx.result(tx.op("maximum", x, tx.node(lo)))
    return tx.result(tx.op("clip", x, tx.node(lo), tx.node(hi)))


@numpy(np.clip)
def _clip(tx: TraceContext, a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, *,
          min: Any = None, max: Any = None) -> Any:  # noqa: A002 - NumPy's names
    _no_out(tx, out, "clip")
    return _clip_impl(tx, a, a_min if a_min is not None else min, a_max if a_max is not None else max)


@method("clip")
def _m_clip(tx: TraceContext, a: Any, min: Any = None, max: Any = None, out: Any = None) -> Any:  # noqa: A002
    _no_out(tx, out, "clip")
    return _clip_impl(tx, a, min, max)


# ---- reductions -----------------------------------------------------------------------------------------------
def _reduce(tx: TraceContext, name: str, a: Any, axis: Any, keepdims: bool, **extra: Any) -> Any:
    x = _array(tx, a)
    t = tx.type_of(x)
    attrs: dict[str, Any] = {"axis": _axes(tx, axis, t.ndim, name), "keepdims": bool(keepdims)}
    for key, value in extra.items():
        if value is not None:
            attrs[key] = _dtype(tx, value) if key == "dtype" else value
    return tx.result(tx.op(name, tx.read(x), **attrs))


def _reduction(name: str, with_dtype: bool = False, with_ddof: bool = False) -> tuple[Lowering, Lowering]:
    def fn(tx: TraceContext, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False, ddof: int = 0, **kwargs: Any) -> Any:
        if kwargs:
            tx.graph_break(f"np.{name} with {sorted(kwargs)} is not supported by the tracer")
        _no_out(tx, out, name)
        extra: dict[str, Any] = {}
        if with_dtype:
            extra["dtype"] = dtype
        elif dtype is not None:
            tx.graph_break(f"{name}(dtype=...) is not supported")
        if with_ddof:
            extra["ddof"] = ddof
        return _reduce(tx, name, a, axis, keepdims, **extra)

    def np_fn(tx: TraceContext, a: Any, axis: Any = None, *rest: Any, **kwargs: Any) -> Any:
        names = (["dtype", "out"] if with_dtype else ["out"]) + ["keepdims"] + (["ddof"] if with_ddof else [])
        if with_ddof:
            names = ["dtype", "out", "ddof", "keepdims"]
        kwargs.update(zip(names, rest))
        return fn(tx, a, axis, **kwargs)

    return np_fn, np_fn


for _name, _np_fns, _dt, _dd in (
        ("sum", (np.sum,), True, False), ("mean", (np.mean,), True, False), ("prod", (np.prod,), True, False),
        ("max", (np.max, np.amax), False, False), ("min", (np.min, np.amin), False, False),
        ("any", (np.any,), False, False), ("all", (np.all,), False, False),
        ("var", (np.var,), True, True), ("std", (np.std,), True, True)):
    _lowering, _ = _reduction(_name, _dt, _dd)
    for _f in _np_fns:
        NUMPY[_f] = _lowering
    ARRAY_METHODS[_name] = _lowering


def _arg_reduction(name: str) -> Lowering:
    def fn(tx: TraceContext, a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        _no_out(tx, out, name)
        x = _array(tx, a)
        t = tx.type_of(x)
        ax = None if axis is None else _axes(tx, axis, t.ndim, name)[0]
        return tx.result(tx.op(name, tx.read(x), axis=ax, keepdims=bool(keepdims)))

    return fn


for _name in ("argmax", "argmin"):
    NUMPY[getattr(np, _name)] = ARRAY_METHODS[_name] = _arg_reduction(_name)


# ---- shape ----------------------------------------------------------------------------------------------------
def _reshape_to(tx: TraceContext, a: Any, shape: tuple[int, ...]) -> TArray:
    x = _array(tx, a)
    if tx.type_of(x).layout == "C":
        return tx.view(x, "reshape", shape=shape)
    return tx.fresh(tx.op("reshape", tx.read(x), shape=shape))  # NumPy copies a non-contiguous reshape


@numpy(np.reshape)
def _np_reshape(tx: TraceContext, a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None) -> Any:
    if order != "C":
        tx.graph_break("reshape with order other than 'C'")
    return _reshape_to(tx, a, _shape_arg(tx, shape if shape is not None else newshape))


@method("reshape")
def _m_reshape(tx: TraceContext, a: Any, *shape: Any, order: str = "C") -> Any:
    if order != "C":
        tx.graph_break("reshape with order other than 'C'")
    if len(shape) == 1:
        shape = shape[0]
    return _reshape_to(tx, a, _shape_arg(tx, shape))


@numpy(np.ravel)
@method("ravel")
def _ravel(tx: TraceContext, a: Any, order: str = "C") -> Any:
    return _reshape_to(tx, a, (-1,))


@method("flatten")
def _flatten(tx: TraceContext, a: Any, order: str = "C") -> Any:
    return tx.fresh(tx.op("copy", tx.op("reshape", tx.read(_array(tx, a)), shape=(-1,))))


def _transpose_to(tx: TraceContext, a: Any, axes: Any) -> TArray:
    x = _array(tx, a)
    ndim = tx.type_of(x).ndim
    if axes is None or axes == ():
        perm = tuple(reversed(range(ndim)))
    else:
        perm = tuple(_axes(tx, (ax,), ndim, "transpose")[0] for ax in axes)
        if sorted(perm) != list(range(ndim)):
            err = ValueError("axes don't match array")
            tx.graph_break(str(err), err)
    return tx.view(x, "transpose", axes=perm)


@numpy(np.transpose)
def _np_transpose(tx: TraceContext, a: Any, axes: Any = None) -> Any:
    return _transpose_to(tx, a, axes)


@method("transpose")
def _m_transpose(tx: TraceContext, a: Any, *axes: Any) -> Any:
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], tuple | list)):
        axes = axes[0]
    return _transpose_to(tx, a, axes)


@numpy(np.swapaxes)
@method("swapaxes")
def _swapaxes(tx: TraceContext, a: Any, axis1: int, axis2: int) -> Any:
    ndim = tx.type_of(_array(tx, a)).ndim
    (i,), (j,) = _axes(tx, axis1, ndim, "swapaxes"), _axes(tx, axis2, ndim, "swapaxes")
    perm = list(range(ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return _transpose_to(tx, a, tuple(perm))


@numpy(np.moveaxis)
def _moveaxis(tx: TraceContext, a: Any, source: Any, destination: Any) -> Any:
    ndim = tx.type_of(_array(tx, a)).ndim
    src = [_axes(tx, s, ndim, "moveaxis")[0] for s in (source if isinstance(source, tuple | list) else [source])]
    dst = [_axes(tx, d, ndim, "moveaxis")[0]
           for d in (destination if isinstance(destination, tuple | list) else [destination])]
    order = [n for n in range(ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _transpose_to(tx, a, tuple(order))


@numpy(np.squeeze)
@method("squeeze")
def _squeeze(tx: TraceContext, a: Any, axis: Any = None) -> Any:
    t = tx.type_of(_array(tx, a))
    if axis is None:
        drop = {i for i, d in enumerate(t.shape) if d == 1}
    else:
        drop = set(_axes(tx, axis, t.ndim, "squeeze"))
        if any(t.shape[i] != 1 for i in drop):
            err = ValueError("cannot select an axis to squeeze out which has size not equal to one")
            tx.graph_break(str(err), err)
    return _reshape_to(tx, a, tuple(d for i, d in enumerate(t.shape) if i not in drop))


@numpy(np.expand_dims)
def _expand_dims(tx: TraceContext, a: Any, axis: Any) -> Any:
    t = tx.type_of(_array(tx, a))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    new = _axes(tx, axes, t.ndim + len(axes), "expand_dims")
    dims = iter(t.shape)
    return _reshape_to(tx, a, tuple(1 if i in new else next(dims) for i in range(t.ndim + len(axes))))


@numpy(np.broadcast_to)
def _broadcast_to(tx: TraceContext, a: Any, shape: Any) -> Any:
    return tx.view(_array(tx, a), "broadcast_to", shape=_shape_arg(tx, shape))


def _sequence(tx: TraceContext, arrays: Any, what: str) -> list[Any]:
    if isinstance(arrays, TArray):
        tx.graph_break(f"{what} of one array (iterates its rows); pass a list")
    if not isinstance(arrays, list | tuple) or not arrays:
        err = ValueError("need at least one array to concatenate")
        tx.graph_break(str(err), err)
    return [tx.node(a) for a in arrays]


@numpy(np.concatenate)
def _concatenate(tx: TraceContext, arrays: Any, axis: int = 0, out: Any = None, **kwargs: Any) -> Any:
    _no_out(tx, out, "concatenate")
    if axis is None:
        return tx.fresh(tx.op("concatenate", *(tx.op("reshape", n, shape=(-1,)) for n in
                                                 _sequence(tx, arrays, "concatenate")), axis=0))
    return tx.fresh(tx.op("concatenate", *_sequence(tx, arrays, "concatenate"), axis=axis))


@numpy(np.stack)
def _stack(tx: TraceContext, arrays: Any, axis: int = 0, out: Any = None, **kwargs: Any) -> Any:
    _no_out(tx, out, "stack")
    return tx.fresh(tx.op("stack", *_sequence(tx, arrays, "stack"), axis=axis))


@numpy(np.vstack)
def _vstack(tx: TraceContext, tup: Any, **kwargs: Any) -> Any:
    nodes = [n if n.tensor_type.ndim >= 2 else tx.op("reshape", n, shape=(1, -1) if n.tensor_type.ndim else (1, 1))
             for n in _sequence(tx, tup, "vstack")]
    return tx.fresh(tx.op("concatenate", *nodes, axis=0))


@numpy(np.hstack)
def _hstack(tx: TraceContext, tup: Any, **kwargs: Any) -> Any:
    nodes = [n if n.tensor_type.ndim else tx.op("reshape", n, shape=(1,)) for n in _sequence(tx, tup, "hstack")]
    return tx.fresh(tx.op("concatenate", *nodes, axis=0 if nodes[0].tensor_type.ndim == 1 else 1))


# ---- linear algebra -------------------------------------------------------------------------------------------
@numpy(np.matmul)
def _matmul(tx: TraceContext, a: Any, b: Any, out: Any = None, **kwargs: Any) -> Any:
    _no_out(tx, out, "matmul")
    return tx.result(tx.op("matmul", tx.node(a), tx.node(b)))


@numpy(np.dot)
@method("dot")
def _dot(tx: TraceContext, a: Any, b: Any, out: Any = None) -> Any:
    _no_out(tx, out, "dot")
    return tx.result(tx.op("dot", tx.node(a), tx.node(b)))


@numpy(np.outer)
def _outer(tx: TraceContext, a: Any, b: Any, out: Any = None) -> Any:
    _no_out(tx, out, "outer")
    return tx.fresh(tx.op("outer", tx.node(a), tx.node(b)))


@numpy(np.einsum)
def _einsum(tx: TraceContext, subscripts: Any, *operands: Any, out: Any = None, optimize: Any = False,
            **kwargs: Any) -> Any:
    _no_out(tx, out, "einsum")
    if not isinstance(subscripts, str) or kwargs:
        tx.graph_break("einsum in interleaved form or with extra options")
    return tx.result(tx.op("einsum", *(tx.node(o) for o in operands), subscripts=subscripts))


# ---- creation -------------------------------------------------------------------------------------------------
def _fill(name: str) -> Lowering:
    def fn(tx: TraceContext, shape: Any, dtype: Any = float, order: str = "C", **kwargs: Any) -> Any:
        return tx.fresh(tx.op(name, shape=_shape_arg(tx, shape), dtype=_dtype(tx, dtype)))

    return fn


NUMPY[np.zeros] = _fill("zeros")
NUMPY[np.ones] = _fill("ones")
NUMPY[np.empty] = _fill("zeros")  # contents unspecified: zeros is a valid choice and keeps outputs deterministic


def _full_node(tx: TraceContext, shape: tuple[int, ...], value: Any, dtype: np.dtype | None) -> TArray:
    if isinstance(value, TArray):
        node = tx.read(value)
        dt = dtype if dtype is not None else (np.dtype(np.float64) if node.tensor_type.weak else
                                               node.tensor_type.dtype)
        node = tx.op("astype", node, dtype=dt)
        return tx.fresh(tx.op("copy", tx.op("broadcast_to", node, shape=shape)))
    if not is_plain(value):
        tx.graph_break("np.full with a non-scalar fill value")
    dt = dtype if dtype is not None else np.asarray(value).dtype
    return tx.fresh(tx.op("full", shape=shape, dtype=dt, value=value))


@numpy(np.full)
def _full(tx: TraceContext, shape: Any, fill_value: Any, dtype: Any = None, order: str = "C") -> Any:
    return _full_node(tx, _shape_arg(tx, shape), fill_value, None if dtype is None else _dtype(tx, dtype))


def _like(name: str) -> Lowering:
    def fn(tx: TraceContext, a: Any, dtype: Any = None, order: str = "K", subok: bool = True,
           shape: Any = None) -> Any:
        t = tx.type_of(_array(tx, a))
        out_shape = t.shape if shape is None else _shape_arg(tx, shape)
        dt = t.dtype if dtype is None else _dtype(tx, dtype)
        if t.weak and dtype is None:
            dt = np.dtype(np.float64) if t.dtype.kind == "f" else np.dtype(np.int64)
        return tx.fresh(tx.op(name, shape=out_shape, dtype=dt))

    return fn


NUMPY[np.zeros_like] = _like("zeros")
NUMPY[np.ones_like] = _like("ones")
NUMPY[np.empty_like] = _like("zeros")


@numpy(np.full_like)
def _full_like(tx: TraceContext, a: Any, fill_value: Any, dtype: Any = None, **kwargs: Any) -> Any:
    t = tx.type_of(_array(tx, a))
    return _full_node(tx, t.shape, fill_value, t.dtype if dtype is None else _dtype(tx, dtype))


@numpy(np.arange)
def _arange(tx: TraceContext, start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> Any:
    if contains_tarray([start, stop, step]):
        tx.graph_break("np.arange with bounds computed from array data")
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    try:
        dt = np.arange(start, start + step, step, dtype=dtype).dtype
    except Exception as exc:  # noqa: BLE001
        tx.graph_break(f"np.arange: {exc}", exc)
    return tx.fresh(tx.op("arange", start=start, stop=stop, step=step, dtype=dt))


@numpy(np.eye)
def _eye(tx: TraceContext, N: int, M: int | None = None, k: int = 0, dtype: Any = float, **kwargs: Any) -> Any:
    return tx.fresh(tx.op("eye", n=int(N), m=int(N if M is None else M), k=int(k), dtype=_dtype(tx, dtype)))


@numpy(np.identity)
def _identity(tx: TraceContext, n: int, dtype: Any = None) -> Any:
    return _eye(tx, n, dtype=float if dtype is None else dtype)


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
        node = tx.op("astype", node, dtype=_dtype(tx, dtype))
    elif node.tensor_type.weak:
        node = tx.op("astype", node, dtype=node.tensor_type.dtype)
    if copy is False and node is tx.read(value):
        return value if value.kind == "array" else tx.fresh(node, "array")
    return tx.fresh(tx.op("copy", node), "array")


@numpy(np.asarray, np.asanyarray)
def _asarray(tx: TraceContext, a: Any, dtype: Any = None, order: Any = None, **kwargs: Any) -> Any:
    if isinstance(a, TArray) and a.kind == "array" and (dtype is None or _dtype(tx, dtype) == tx.type_of(a).dtype):
        return a
    return _np_array(tx, a, dtype=dtype, copy=False)


@numpy(np.ascontiguousarray)
def _ascontiguousarray(tx: TraceContext, a: Any, dtype: Any = None, **kwargs: Any) -> Any:
    if isinstance(a, TArray) and tx.type_of(a).layout == "C" and dtype is None:
        return a
    return _np_array(tx, a, dtype=dtype)


@method("astype")
def _astype(tx: TraceContext, a: TArray, dtype: Any, order: str = "K", casting: str = "unsafe",
            subok: bool = True, copy: bool = True) -> Any:
    dt = _dtype(tx, dtype)
    if casting != "unsafe" and not np.can_cast(tx.type_of(a).dtype, dt, casting=casting):
        err = TypeError(f"Cannot cast array data from {tx.type_of(a).dtype} to {dt} according to the rule "
                        f"'{casting}'")
        tx.graph_break(str(err), err)
    if not copy and dt == tx.type_of(a).dtype:
        return a
    return tx.fresh(tx.op("astype", tx.read(a), dtype=dt), a.kind)


@method("fill")
def _fill_method(tx: TraceContext, a: TArray, value: Any) -> None:
    t = tx.type_of(a)
    node = tx.op("astype", tx.op("broadcast_to", tx.node(value), shape=t.shape), dtype=t.dtype)
    tx.write(a, node)


@method("item", "tolist", "nonzero", "tobytes", "__array__")
def _needs_data(tx: TraceContext, a: TArray, *args: Any, **kwargs: Any) -> Any:
    tx.graph_break("this array method needs the array's data at trace time (.item(), .tolist(), .nonzero())")


@numpy(np.shape)
def _np_shape(tx: TraceContext, a: Any) -> tuple[int, ...]:
    return tx.type_of(_array(tx, a)).shape


@numpy(np.ndim)
def _np_ndim(tx: TraceContext, a: Any) -> int:
    return tx.type_of(_array(tx, a)).ndim


@numpy(np.size)
def _np_size(tx: TraceContext, a: Any, axis: Any = None) -> int:
    t = tx.type_of(_array(tx, a))
    return t.size if axis is None else t.shape[axis]


@numpy(np.dtype, np.result_type, np.promote_types, np.can_cast, np.finfo, np.iinfo)
def _plain_numpy(tx: TraceContext, *args: Any, **kwargs: Any) -> Any:
    tx.graph_break("this NumPy helper is only supported on trace-time values")


for _helper in (np.dtype, np.result_type, np.promote_types, np.can_cast, np.finfo, np.iinfo):
    def _make(helper: Any) -> Lowering:
        def fn(tx: TraceContext, *args: Any, **kwargs: Any) -> Any:
            if contains_tarray(list(args)) or contains_tarray(list(kwargs.values())):
                tx.graph_break(f"np.{helper.__name__} on traced values")
            return helper(*args, **kwargs)

        return fn

    NUMPY[_helper] = _make(_helper)


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
    NUMPY[_t] = _scalar_type(_t)


# ---- ufunc methods --------------------------------------------------------------------------------------------
def _ufunc_at(tx: TraceContext, ufunc: np.ufunc, a: Any, indices: Any, b: Any = None) -> None:
    from jitgraph.tracer.arrays import parse_index

    if ufunc is not np.add or not isinstance(a, TArray):
        tx.graph_break(f"np.{ufunc.__name__}.at is not supported (only np.add.at)")
    spec, operands = parse_index(tx, indices)
    t = tx.type_of(a)
    value = tx.node(b)
    if not np.can_cast(value.tensor_type.dtype, t.dtype, casting="same_kind") and not value.tensor_type.weak:
        tx.graph_break("np.add.at would need an unsafe cast", TypeError("Cannot cast ufunc 'add' output"))
    tx.write(a, tx.op("scatter_add", tx.read(a), value, *operands, spec=spec))


def _ufunc_reduce(tx: TraceContext, ufunc: np.ufunc, a: Any, axis: Any = 0, dtype: Any = None, out: Any = None,
                  keepdims: bool = False) -> Any:
    name = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min",
            np.logical_and: "all", np.logical_or: "any"}.get(ufunc)
    if name is None or dtype is not None:
        tx.graph_break(f"np.{ufunc.__name__}.reduce is not supported")
    _no_out(tx, out, "reduce")
    return _reduce(tx, name, a, axis, keepdims)


UFUNC_METHODS["at"] = _ufunc_at
UFUNC_METHODS["reduce"] = _ufunc_reduce

_ = (inplace_update, TensorType)
