"""NumPy table entries for shape functions: all lower onto reshape, transpose, broadcast_to, concatenate and
stack (views stay views of their base, so writes through them reach the caller's array)."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.numpy_table import _array, _axes, _no_out, _shape_arg, method, numpy
from jitgraph.tracer.values import TArray


# ---- shape ----------------------------------------------------------------------------------------------------
def _reshape_to(tx: TraceContext, a: Any, shape: tuple[int, ...]) -> TArray:
    """A reshape is a view of a C-contiguous array; of anything else NumPy may copy, so writes through such a
    reshape break the trace (``TraceContext.write``) rather than guess."""
    return tx.view(_array(tx, a), "reshape", shape=shape)


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


