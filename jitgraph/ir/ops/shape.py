"""Shape ops: reshape, transpose, broadcast_to, concatenate, stack.

squeeze, expand_dims, swapaxes, ravel, ``.T`` and friends are lowered onto these by the tracer, so passes and
backends have a handful of shape ops to understand rather than a dozen. reshape/transpose/broadcast_to are views in
NumPy (``is_view``); the tracer uses that to send in-place updates of a view to its base.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import broadcast, normalize_axes, type_error
from jitgraph.ir.symbols import Sym, SymbolicSizeError, is_symbolic
from jitgraph.ir.types import TensorType


def _infer_reshape(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    (t,) = types
    if is_symbolic(t.shape) or is_symbolic(tuple(attrs["shape"])):
        return TensorType(symbolic_reshape(t.shape, tuple(attrs["shape"])), t.dtype,
                          layout="C" if t.layout == "C" else "S")
    shape = tuple(int(d) for d in attrs["shape"])
    unknown = [d for d in shape if d < 0]  # NumPy reads any negative entry as "the one unknown dimension"
    if len(unknown) > 1:
        err = ValueError("can only specify one unknown dimension")
        raise type_error(f"reshape: {err}", err)
    if unknown:
        known = 1
        for d in shape:
            if d >= 0:
                known *= d
        if known == 0 or t.size % known:
            err = ValueError(f"cannot reshape array of size {t.size} into shape {shape}")
            raise type_error(f"reshape: {err}", err)
        shape = tuple(t.size // known if d < 0 else d for d in shape)
    if int(np.prod(shape, dtype=np.int64)) != t.size:
        err = ValueError(f"cannot reshape array of size {t.size} into shape {shape}")
        raise type_error(f"reshape: {err}", err)
    layout = "C" if t.layout == "C" else "S"
    return TensorType(shape, t.dtype, layout=layout)


def symbolic_reshape(old: tuple[Any, ...], new: tuple[Any, ...]) -> tuple[Any, ...]:
    """The shape ``reshape`` gives where sizes are symbols: the same symbols on both sides (each once per side)
    and the same product of the fixed sizes; a ``-1`` stands for the one symbol, or the fixed factor, that is
    left. Anything else depends on the values (SymbolicSizeError)."""
    def split(shape: tuple[Any, ...]) -> tuple[list[Sym], int, int]:
        syms, fixed, unknown = [], 1, 0
        for d in shape:
            if type(d) is Sym:
                syms.append(d)
            elif d < 0:
                unknown += 1
            else:
                fixed *= d
        return syms, fixed, unknown

    old_syms, old_fixed, _ = split(old)
    new_syms, new_fixed, unknown = split(new)
    names = sorted(s.name for s in old_syms)
    rest = list(names)
    for s in new_syms:
        if s.name not in rest:
            raise SymbolicSizeError(f"reshape of {old} into {new} depends on the sizes")
        rest.remove(s.name)
    if len(set(names)) != len(names) or unknown > 1 or old_fixed == 0 or new_fixed == 0:
        raise SymbolicSizeError(f"reshape of {old} into {new} depends on the sizes")
    if not unknown:
        if rest or old_fixed != new_fixed:
            raise SymbolicSizeError(f"reshape of {old} into {new} depends on the sizes")
        return new
    if rest and old_fixed == new_fixed and len(rest) == 1:
        fill: Any = next(s for s in old_syms if s.name == rest[0])
    elif not rest and old_fixed % new_fixed == 0:
        fill = old_fixed // new_fixed
    else:
        raise SymbolicSizeError(f"reshape of {old} into {new} depends on the sizes")
    return tuple(fill if type(d) is not Sym and d < 0 else d for d in new)


def transpose_axes(axes: Any, ndim: int) -> tuple[int, ...]:
    """The permutation ``np.transpose(x, axes)`` applies: negatives wrapped, ``None`` reversing, errors NumPy's."""
    if axes is None:
        return tuple(reversed(range(ndim)))
    axes = tuple(int(a) for a in axes)
    if len(axes) != ndim:
        err = ValueError("axes don't match array")
        raise type_error(f"transpose: {err}", err)
    for a in axes:
        if not -ndim <= a < ndim:
            err = np.exceptions.AxisError(a, ndim)
            raise type_error(f"transpose: {err}", err)
    wrapped = tuple(a % ndim for a in axes)
    if len(set(wrapped)) != ndim:
        err = ValueError("repeated axis in transpose")
        raise type_error(f"transpose: {err}", err)
    return wrapped


def _infer_transpose(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    (t,) = types
    axes = transpose_axes(attrs.get("axes"), t.ndim)
    shape = tuple(t.shape[a] for a in axes)
    reversed_axes = axes == tuple(reversed(range(t.ndim)))
    if axes == tuple(range(t.ndim)):
        layout = t.layout
    elif reversed_axes and t.layout in ("C", "F"):
        layout = "F" if t.layout == "C" else "C"
    else:
        layout = "S"
    return TensorType(shape, t.dtype, layout=layout)


def _infer_broadcast_to(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    (t,) = types
    shape = tuple(attrs["shape"])
    if broadcast([t.shape, shape], "broadcast_to") != shape:
        err = ValueError(f"operands could not be broadcast together with remapped shapes {t.shape} -> {shape}")
        raise type_error(f"broadcast_to: {err}", err)
    return TensorType(shape, t.dtype, layout="C" if shape == t.shape and t.layout == "C" else "S")


def _join_dtype(types: tuple[TensorType, ...]) -> np.dtype:
    return np.result_type(*(t.proto() if t.weak else t.dtype for t in types))


def _infer_concatenate(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    first = types[0]
    if attrs.get("axis", 0) is None:  # np.concatenate(xs, axis=None) joins the flattened arrays
        return TensorType((sum(t.size for t in types),), _join_dtype(types))
    if first.ndim == 0:
        err = ValueError("zero-dimensional arrays cannot be concatenated")
        raise type_error(f"concatenate: {err}", err)
    (axis,) = normalize_axes(attrs["axis"], first.ndim, "concatenate")
    for t in types[1:]:
        if t.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != axis):
            err = ValueError("all the input array dimensions except for the concatenation axis must match exactly")
            raise type_error(f"concatenate: {err}", err)
    shape = list(first.shape)
    shape[axis] = sum(t.shape[axis] for t in types)
    return TensorType(tuple(shape), _join_dtype(types))


def _infer_stack(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    first = types[0]
    if any(t.shape != first.shape for t in types):
        err = ValueError("all input arrays must have the same shape")
        raise type_error(f"stack: {err}", err)
    (axis,) = normalize_axes(attrs["axis"], first.ndim + 1, "stack")
    shape = list(first.shape)
    shape.insert(axis, len(types))
    return TensorType(tuple(shape), _join_dtype(types))


def _reshape(x: Any, shape: tuple[int, ...]) -> Any:
    return np.reshape(x, shape)


def _transpose(x: Any, axes: tuple[int, ...] | None = None) -> Any:
    return np.transpose(x, axes)


def _broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    return np.broadcast_to(x, shape)


def _concatenate(*xs: Any, axis: int) -> Any:
    return np.concatenate(xs, axis=axis)


def _stack(*xs: Any, axis: int) -> Any:
    return np.stack(xs, axis=axis)


define(Op("reshape", OpKind.SHAPE, _infer_reshape, _reshape, is_view=True, doc="attrs: shape (may hold one -1)"))
define(Op("transpose", OpKind.SHAPE, _infer_transpose, _transpose, is_view=True, doc="attrs: axes (a permutation)"))
define(Op("broadcast_to", OpKind.SHAPE, _infer_broadcast_to, _broadcast_to, is_view=True, doc="attrs: shape"))
define(Op("concatenate", OpKind.SHAPE, _infer_concatenate, _concatenate, doc="varargs; attrs: axis"))
define(Op("stack", OpKind.SHAPE, _infer_stack, _stack, doc="varargs; attrs: axis"))
