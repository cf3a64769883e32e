"""NumPy table entries for shape functions: all lower onto reshape, transpose, broadcast_to, concatenate and
stack (views stay views of their base, so writes through them reach the caller's array)."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.ops.indexing import build_index
from jitgraph.ir.symbols import is_symbolic
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.numpy_base import LoweringTable, as_array, axes_arg, no_out, shape_arg
from jitgraph.tracer.values import TArray

TABLE = LoweringTable("numpy_shapes")
numpy, method = TABLE.numpy, TABLE.method

# ---- memory layout ------------------------------------------------------------------------------------------
# NumPy decides view-or-copy from strides, so the tracer replays a value's view path on a *stride prototype*: an
# array with the value's exact shape and strides over a one-element buffer (``as_strided``). Only view operations
# (basic getitem, transpose, broadcast_to, reshape with copy=False) ever touch it, and they never read the data.
_CREATED_C = frozenset({"input", "const", "zeros", "ones", "full", "empty", "arange", "eye"})
_ORDERS = ("C", "F", "A", "K")


def _contiguous_strides(shape: tuple[int, ...], itemsize: int, order: str) -> tuple[int, ...]:
    strides, step = [0] * len(shape), itemsize
    for i in (reversed(range(len(shape))) if order == "C" else range(len(shape))):
        strides[i], step = step, step * max(shape[i], 1)
    return tuple(strides)


def stride_proto(tx: TraceContext, x: TArray) -> np.ndarray | None:
    """A stand-in with ``x``'s shape and NumPy strides, or None when the tracer cannot know them (a strided array
    that is not a caller's array, e.g. a branch result)."""
    if x.kind != "array":
        return None
    origin = x.buffer.origin
    t = origin.tensor_type
    if is_symbolic(t.shape) or any(is_symbolic(dict(step.attrs).get("shape", ())) for step in x.path):
        return None  # symbolic sizes (ir/symbols.py): decided from the layout class, as for an unknown array
    caller = tx.caller_array(x.buffer)
    strides = getattr(caller, "strides", None)
    if strides is None or len(strides) != t.ndim:
        if t.layout == "S":
            return None
        strides = _contiguous_strides(t.shape, t.dtype.itemsize, t.layout)
    proto = np.lib.stride_tricks.as_strided(np.empty(1, t.dtype), t.shape, strides, writeable=False)
    try:
        for step in x.path:
            kw = step.kwargs
            if step.op == "getitem":
                proto = proto[build_index(kw["spec"], ())]
            elif step.op == "transpose":
                proto = proto.transpose(kw["axes"])
            elif step.op == "broadcast_to":
                proto = np.broadcast_to(proto, kw["shape"])
            elif step.op == "reshape":
                proto = np.reshape(proto, kw["shape"], copy=False)
            else:
                return None
    except (ValueError, IndexError, TypeError):
        return None
    return proto


def _order(tx: TraceContext, order: Any, what: str) -> str:
    if order is None:
        return "C"
    if isinstance(order, str) and order.upper() in _ORDERS:
        return order.upper()
    err = ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    tx.graph_break(f"{what}: {err}", err if isinstance(order, str) else None)


def _memory_order(tx: TraceContext, x: TArray, order: str, what: str) -> tuple[str, np.ndarray | None]:
    """Resolve 'A' and 'K' as NumPy does: 'C', 'F' or 'K' (a non-contiguous array in its memory order)."""
    proto = stride_proto(tx, x)
    if order in "CF":
        return order, proto
    if tx.type_of(x).ndim <= 1:
        return "C", proto  # one axis: every order is C order (and 'K' keeps a reversed axis reversed)
    if proto is None or x.buffer.origin.op not in _CREATED_C:
        # a computed array (x.T + 1, np.copy(x.T)) is laid out by NumPy's order='K' rules, which the IR's types
        # do not follow: its memory order is unknown here
        tx.graph_break(f"{what}(order={order!r}) of an array whose memory order the tracer does not know")
    if order == "A":
        return ("F" if proto.flags.f_contiguous and not proto.flags.c_contiguous else "C"), proto
    if proto.flags.c_contiguous:
        return "C", proto
    return ("F" if proto.flags.f_contiguous else "K"), proto


def memory_axes(proto: np.ndarray) -> tuple[int, ...]:
    """The axes by descending absolute stride (ties in C order): NumPy's order='K' traversal."""
    return tuple(sorted(range(proto.ndim), key=lambda i: (-abs(proto.strides[i]), i)))


def _keep_order_axes(tx: TraceContext, proto: np.ndarray, what: str) -> tuple[int, ...]:
    if any(s == 0 and d > 1 for s, d in zip(proto.strides, proto.shape)):
        tx.graph_break(f"{what}(order='K') of a broadcast view")
    return memory_axes(proto)


def _flat_copy(tx: TraceContext, x: TArray, axes: tuple[int, ...] | None) -> TArray:
    node = tx.read(x)
    if axes is not None and axes != tuple(range(len(axes))):
        node = tx.op("transpose", node, axes=axes)
    return tx.fresh(tx.op("copy", tx.op("reshape", node, shape=(-1,))))


# ---- shape ----------------------------------------------------------------------------------------------------
def _reshape_to(tx: TraceContext, a: Any, shape: tuple[int, ...]) -> TArray:
    """NumPy's reshape (copy=None): a view when the new shape fits the old strides, otherwise a copy, so a later
    write to the base reaches a view and never a copy. Unknown strides break unless every layout gives a view."""
    x = as_array(tx, a)
    view = tx.view(x, "reshape", shape=shape)  # type-checks now: NumPy's shape errors come first
    if x.kind != "array":
        return view  # a scalar's reshape is a new array already
    proto = stride_proto(tx, x)
    if proto is not None:
        try:
            np.reshape(proto, shape, copy=False)
        except ValueError:
            return tx.fresh(tx.op("copy", tx.read(view)))
    elif tx.layout(x) != "C" and _non_unit(tx.type_of(x).shape) != _non_unit(tx.type_of(view).shape):
        tx.graph_break("reshape of an array whose strides the tracer does not know (NumPy may copy)")
    return view


def _non_unit(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1) if 0 not in shape else (0,)


@numpy(np.reshape)
def _np_reshape(tx: TraceContext, a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None) -> Any:
    if _order(tx, order, "reshape") != "C":
        tx.graph_break("reshape with order other than 'C'")
    return _reshape_to(tx, a, shape_arg(tx, shape if shape is not None else newshape))


@method("reshape")
def _m_reshape(tx: TraceContext, a: Any, *shape: Any, order: str = "C") -> Any:
    if _order(tx, order, "reshape") != "C":
        tx.graph_break("reshape with order other than 'C'")
    if len(shape) == 1:
        shape = shape[0]
    return _reshape_to(tx, a, shape_arg(tx, shape))


@numpy(np.ravel)
@method("ravel")
def _ravel(tx: TraceContext, a: Any, order: str = "C") -> Any:
    """NumPy's ravel: a view only of an array already contiguous in the requested order (or, for 'K', in its own
    memory order); anything else is a copy, even where a reshape could have been a view (``x[::2].ravel()``)."""
    x = as_array(tx, a)
    order, proto = _memory_order(tx, x, _order(tx, order, "ravel"), "ravel")
    if proto is None:
        if x.kind == "array" and tx.type_of(x).size > 1 and (order != "C" or tx.layout(x) != "C"):
            tx.graph_break("ravel of an array whose strides the tracer does not know (NumPy may copy)")
        return _reshape_to(tx, x, (-1,))
    axes = (tuple(range(proto.ndim)) if order == "C" else _reversed(tx, x) if order == "F"
            else _keep_order_axes(tx, proto, "ravel"))
    if proto.transpose(axes).flags.c_contiguous:
        return _reshape_to(tx, x if axes == tuple(range(proto.ndim)) else _transpose_to(tx, x, axes), (-1,))
    return _flat_copy(tx, x, axes)


@method("flatten")
def _flatten(tx: TraceContext, a: Any, order: str = "C") -> Any:
    x = as_array(tx, a)
    order, proto = _memory_order(tx, x, _order(tx, order, "flatten"), "flatten")
    if order == "C":
        return _flat_copy(tx, x, None)
    return _flat_copy(tx, x, _reversed(tx, x) if order == "F" else _keep_order_axes(tx, proto, "flatten"))


def _reversed(tx: TraceContext, x: TArray) -> tuple[int, ...]:
    return tuple(reversed(range(tx.type_of(x).ndim)))


def _transpose_to(tx: TraceContext, a: Any, axes: Any) -> TArray:
    x = as_array(tx, a)
    ndim = tx.type_of(x).ndim
    if axes is None or axes == ():
        perm = tuple(reversed(range(ndim)))
    else:
        perm = tuple(axes_arg(tx, (ax,), ndim, "transpose")[0] for ax in axes)
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
    ndim = tx.type_of(as_array(tx, a)).ndim
    (i,), (j,) = axes_arg(tx, axis1, ndim, "swapaxes"), axes_arg(tx, axis2, ndim, "swapaxes")
    perm = list(range(ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return _transpose_to(tx, a, tuple(perm))


@numpy(np.moveaxis)
def _moveaxis(tx: TraceContext, a: Any, source: Any, destination: Any) -> Any:
    ndim = tx.type_of(as_array(tx, a)).ndim
    src = [axes_arg(tx, s, ndim, "moveaxis")[0] for s in (source if isinstance(source, tuple | list) else [source])]
    dst = [axes_arg(tx, d, ndim, "moveaxis")[0]
           for d in (destination if isinstance(destination, tuple | list) else [destination])]
    order = [n for n in range(ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _transpose_to(tx, a, tuple(order))


@numpy(np.squeeze)
@method("squeeze")
def _squeeze(tx: TraceContext, a: Any, axis: Any = None) -> Any:
    t = tx.type_of(as_array(tx, a))
    if axis is None:
        drop = {i for i, d in enumerate(t.shape) if d == 1}
    else:
        drop = set(axes_arg(tx, axis, t.ndim, "squeeze"))
        if any(t.shape[i] != 1 for i in drop):
            err = ValueError("cannot select an axis to squeeze out which has size not equal to one")
            tx.graph_break(str(err), err)
    return _reshape_to(tx, a, tuple(d for i, d in enumerate(t.shape) if i not in drop))


@numpy(np.expand_dims)
def _expand_dims(tx: TraceContext, a: Any, axis: Any) -> Any:
    t = tx.type_of(as_array(tx, a))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    new = axes_arg(tx, axes, t.ndim + len(axes), "expand_dims")
    dims = iter(t.shape)
    return _reshape_to(tx, a, tuple(1 if i in new else next(dims) for i in range(t.ndim + len(axes))))


@numpy(np.broadcast_to)
def _broadcast_to(tx: TraceContext, a: Any, shape: Any) -> Any:
    return tx.view(as_array(tx, a), "broadcast_to", shape=shape_arg(tx, shape))


def _sequence(tx: TraceContext, arrays: Any, what: str) -> list[Any]:
    if isinstance(arrays, TArray):
        tx.graph_break(f"{what} of one array (iterates its rows); pass a list")
    if not isinstance(arrays, list | tuple) or not arrays:
        err = ValueError("need at least one array to concatenate")
        tx.graph_break(str(err), err)
    return [tx.node(a) for a in arrays]


@numpy(np.concatenate)
def _concatenate(tx: TraceContext, arrays: Any, axis: int = 0, out: Any = None, **kwargs: Any) -> Any:
    no_out(tx, out, "concatenate")
    if axis is None:
        return tx.fresh(tx.op("concatenate", *(tx.op("reshape", n, shape=(-1,)) for n in
                                                 _sequence(tx, arrays, "concatenate")), axis=0))
    return tx.fresh(tx.op("concatenate", *_sequence(tx, arrays, "concatenate"), axis=axis))


@numpy(np.stack)
def _stack(tx: TraceContext, arrays: Any, axis: int = 0, out: Any = None, **kwargs: Any) -> Any:
    no_out(tx, out, "stack")
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




# ---- what the entries above do not support (docs/supported.md) --------------------------------------------------
TABLE.note("order other than 'C'; an array whose strides the tracer does not know when NumPy may copy",
           np.reshape, ".reshape")
TABLE.note("an array whose strides or memory order the tracer does not know (a branch result) when NumPy may copy",
           np.ravel, ".ravel", ".flatten")
TABLE.note("out=; one array (iterating its rows) instead of a sequence", np.concatenate, np.stack, np.vstack,
           np.hstack)
