"""Shared shape and dtype rules.

The dtype rule is "ask NumPy": run the op's reference implementation on tiny prototype values of the input types
(weak scalars as real Python scalars). That reproduces NEP 50 promotion, integer-division result types and every
ufunc loop-table quirk exactly, because it *is* NumPy deciding. Shape rules are written out, since running the
reference at full size would cost as much as the computation.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jitgraph.errors import TypeInferenceError
from jitgraph.ir.symbols import broadcast_dims, is_size_symbol, is_symbolic
from jitgraph.ir.types import TensorType


def proto(t: TensorType, shape: Sequence[int] | None = None) -> Any:
    """A prototype value of type ``t``; array dims are clipped to 0 or 1 unless ``shape`` is given."""
    if t.weak:
        return t.proto()
    dims = tuple(min(d, 1) for d in t.shape) if shape is None else tuple(shape)
    return np.ones(dims, dtype=t.dtype)


def ask_numpy(fn: Callable[..., Any], types: Sequence[TensorType], what: str, **kwargs: Any) -> np.dtype:
    """Result dtype of ``fn`` on prototypes of ``types``; NumPy's own error becomes a TypeInferenceError."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fn(*(proto(t) for t in types), **kwargs)
    except Exception as exc:  # NumPy rejected these types; keep its exception for the fallback path
        raise type_error(f"{what}: {exc}", exc) from exc
    return np.asarray(result).dtype


def type_error(message: str, original: BaseException | None = None) -> TypeInferenceError:
    err = TypeInferenceError(message, hint="NumPy rejects these operands too; the call runs eagerly to show "
                                          "NumPy's own error")
    err.original = original  # type: ignore[attr-defined]
    return err


def broadcast(shapes: Sequence[tuple[int, ...]], what: str) -> tuple[int, ...]:
    try:
        if any(is_symbolic(s) for s in shapes):
            return _broadcast_symbolic(shapes)
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError as exc:
        raise type_error(f"{what}: operands could not be broadcast together with shapes "
                         + " ".join(str(s) for s in shapes), exc) from exc


def _broadcast_symbolic(shapes: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
    """NumPy's broadcasting, position by position from the right, where some sizes are symbols."""
    ndim = max(len(s) for s in shapes)
    out: list[Any] = []
    for k in range(1, ndim + 1):
        dims = [s[-k] for s in shapes if len(s) >= k]
        size = dims[0]
        for d in dims[1:]:
            if is_size_symbol(size) or is_size_symbol(d):
                size = broadcast_dims(size, d)
            elif size == 1 or d == size:
                size = d
            elif d != 1:
                raise ValueError(f"sizes {size} and {d} cannot be broadcast together")
        out.append(size)
    return tuple(reversed(out))


def normalize_axes(axis: int | Sequence[int] | None, ndim: int, what: str) -> tuple[int, ...]:
    """Axes as a sorted tuple of non-negative ints; ``None`` means all axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        valid = a in (0, -1) if ndim == 0 else -ndim <= a < ndim  # NumPy lets a 0-d array reduce over axis 0/-1
        if not valid:
            err = np.exceptions.AxisError(a, ndim)
            raise type_error(f"{what}: {err}", err)
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise type_error(f"{what}: duplicate value in 'axis'", ValueError("duplicate value in 'axis'"))
    return tuple(sorted(out))
