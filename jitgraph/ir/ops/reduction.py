"""Reductions: sum, mean, max, min, prod, var, std, argmax, argmin, any, all.

Attrs are normalised by the tracer: ``axis`` is a sorted tuple of non-negative axes (all axes when the user wrote
``axis=None``), ``keepdims`` a bool, plus ``ddof`` (var/std) and ``dtype`` (sum/mean/prod, or None). argmax and
argmin reduce one axis, or the flattened array when ``axis`` is None, exactly as NumPy defines them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import normalize_axes, proto, type_error
from jitgraph.ir.types import TensorType

REDUCTIONS: dict[str, Callable[..., Any]] = {
    "sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod, "var": np.var,
    "std": np.std, "any": np.any, "all": np.all,
}
IDENTITY_FREE = {"max", "min", "argmax", "argmin"}  # these reject zero-size reductions, as NumPy does


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _infer_reduction(name: str, fn: Callable[..., Any]) -> Callable[..., TensorType]:
    def infer(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
        (t,) = types
        axes = normalize_axes(attrs.get("axis"), t.ndim, name)
        if name in IDENTITY_FREE and any(t.shape[a] == 0 for a in axes if a < t.ndim):
            err = ValueError(f"zero-size array to reduction operation {name} which has no identity")
            raise type_error(f"{name}: {err}", err)
        extra = {k: v for k, v in attrs.items() if k not in ("axis", "keepdims")}
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "degrees of freedom <= 0" on the 1-element prototype
                out = fn(proto(t, [1] * t.ndim), axis=axes, keepdims=bool(attrs.get("keepdims")), **extra)
        except Exception as exc:
            raise type_error(f"{name}: {exc}", exc) from exc
        return TensorType(reduced_shape(t.shape, axes, bool(attrs.get("keepdims"))), np.asarray(out).dtype)

    return infer


def _impl(fn: Callable[..., Any]) -> Callable[..., Any]:
    def impl(x: Any, axis: tuple[int, ...], keepdims: bool = False, **extra: Any) -> Any:
        return fn(x, axis=axis, keepdims=keepdims, **extra)

    return impl


for _name, _fn in REDUCTIONS.items():
    define(Op(_name, OpKind.REDUCTION, _infer_reduction(_name, _fn), _impl(_fn), doc=f"np.{_name}"))


def _infer_arg(name: str, fn: Callable[..., Any]) -> Callable[..., TensorType]:
    def infer(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
        (t,) = types
        axis = attrs.get("axis")
        keepdims = bool(attrs.get("keepdims"))
        if axis is None:
            if t.size == 0:
                err = ValueError(f"attempt to get {name} of an empty sequence")
                raise type_error(f"{name}: {err}", err)
            shape = (1,) * t.ndim if keepdims else ()
        else:
            (a,) = normalize_axes(axis, t.ndim, name)
            if t.ndim == 0:  # NumPy accepts axis 0/-1 on a 0-d array and returns a scalar
                return TensorType((), np.dtype(np.intp))
            if t.shape[a] == 0:
                err = ValueError(f"attempt to get {name} of an empty sequence")
                raise type_error(f"{name}: {err}", err)
            shape = reduced_shape(t.shape, (a,), keepdims)
        return TensorType(shape, np.dtype(np.intp))

    return infer


def _arg_impl(fn: Callable[..., Any]) -> Callable[..., Any]:
    def impl(x: Any, axis: int | None, keepdims: bool = False) -> Any:
        return fn(x, axis=axis, keepdims=keepdims)

    return impl


define(Op("argmax", OpKind.REDUCTION, _infer_arg("argmax", np.argmax), _arg_impl(np.argmax), doc="np.argmax"))
define(Op("argmin", OpKind.REDUCTION, _infer_arg("argmin", np.argmin), _arg_impl(np.argmin), doc="np.argmin"))
