"""Mean and variance across chunks from partial moments, with compiled chunk and combine steps.

A variance cannot be averaged across chunks, and summing squares then subtracting the squared mean loses every
digit when the mean is large next to the spread. Each chunk gives instead its count ``n``, its mean and ``m2``
(the sum of squared deviations from its own mean, in float64), and pairs combine exactly (Chan, Golub and
LeVeque's update, the one ``dask.array.var`` uses)::

    n = n_a + n_b      mean = (n_a mean_a + n_b mean_b) / n      m2 = m2_a + m2_b + n_a n_b (mean_a - mean_b)^2 / n

written here for many partials at once: ``m2 = sum m2_i + sum n_i (mean_i - mean)^2``. ``da.reduction`` runs the
chunk step per block and the combine step in a tree (``split_every`` partials per task), so no task holds more
than a few partials. The chunk and combine steps are module-level compiled functions: workers import them.
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
from dask.array.core import _concatenate2
from dask.utils import deepmap

from jitgraph.api import compile as jit_compile

__all__ = ["mean", "mean_var", "var"]


@jit_compile(cache_limit=64)  # one entry per (block shape, axis); edge blocks add shapes
def chunk_moments(x: np.ndarray, axis: tuple[int, ...]) -> dict[str, np.ndarray]:
    """One block's count, mean and m2 over ``axis`` (kept as length-1 dimensions), accumulated in float64."""
    xf = x.astype(np.float64)
    total = xf.sum(axis=axis, keepdims=True)
    n = total * 0.0 + xf.size / total.size
    mu = total / n
    d = xf - mu
    return {"n": n, "mean": mu, "m2": (d * d).sum(axis=axis, keepdims=True)}


@jit_compile(cache_limit=64)  # one entry per (block shape, axis); edge blocks add shapes
def combine_moments(n: np.ndarray, mu: np.ndarray, m2: np.ndarray, axis: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Partials laid side by side along ``axis`` combined into one (empty partials, ``n == 0``, count for nothing)."""
    total = n.sum(axis=axis, keepdims=True)
    safe = np.maximum(total, 1.0)
    new_mu = (n * mu).sum(axis=axis, keepdims=True) / safe
    d = mu - new_mu
    return {"n": total, "mean": new_mu, "m2": m2.sum(axis=axis, keepdims=True) + (n * d * d).sum(axis=axis,
                                                                                                  keepdims=True)}


def _chunk(x: np.ndarray, axis: tuple[int, ...], keepdims: bool, computing_meta: bool = False, **_: Any) -> Any:
    if computing_meta:
        return x
    if x.size == 0:
        shape = tuple(1 if d in axis else s for d, s in enumerate(x.shape))
        zero = np.zeros(shape)
        return {"n": zero, "mean": zero, "m2": zero}
    return chunk_moments(x, tuple(axis))


def _gather(pairs: Any, axis: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nested list of partials ``da.reduction`` hands over (``concatenate=False``), as three arrays."""
    def part(key: str) -> np.ndarray:
        return _concatenate2(deepmap(lambda p: p[key], pairs), axes=axis)
    return part("n"), part("mean"), part("m2")


def _combine(pairs: Any, axis: tuple[int, ...], keepdims: bool, **_: Any) -> dict[str, np.ndarray]:
    return combine_moments(*_gather(pairs, axis), tuple(axis))


def _aggregate(pairs: Any, axis: tuple[int, ...], keepdims: bool, what: str = "var", ddof: int = 0,
               computing_meta: bool = False, **_: Any) -> np.ndarray:
    if computing_meta:
        return np.empty((0,) * 0)
    m = combine_moments(*_gather(pairs, axis), tuple(axis))
    out = m["mean"] if what == "mean" else m["m2"] / np.maximum(m["n"] - ddof, 0)
    return out if keepdims else out.squeeze(axis=axis)


def _reduce(x: da.Array, what: str, axis: Any, ddof: int, keepdims: bool, split_every: int | None) -> da.Array:
    axes = range(x.ndim) if axis is None else [axis] if isinstance(axis, int) else axis
    out_ndim = x.ndim if keepdims else x.ndim - len({a % x.ndim for a in axes})

    def aggregate(pairs: Any, axis: tuple[int, ...], keepdims: bool, **kw: Any) -> np.ndarray:
        return _aggregate(pairs, axis, keepdims, what=what, ddof=ddof, **kw)

    return da.reduction(x, _chunk, aggregate, combine=_combine, axis=axis, keepdims=keepdims, dtype=np.float64,
                        split_every=split_every, concatenate=False, name=f"jitgraph-{what}",
                        meta=np.empty((0,) * out_ndim, np.float64))


def mean(x: da.Array, axis: Any = None, keepdims: bool = False, split_every: int | None = None) -> da.Array:
    """``x.mean(axis)`` from partial moments (float64), compiled per chunk."""
    return _reduce(x, "mean", axis, 0, keepdims, split_every)


def var(x: da.Array, axis: Any = None, ddof: int = 0, keepdims: bool = False,
        split_every: int | None = None) -> da.Array:
    """``x.var(axis, ddof=ddof)`` from partial moments (float64), compiled per chunk."""
    return _reduce(x, "var", axis, ddof, keepdims, split_every)


def mean_var(x: da.Array, axis: Any = None, ddof: int = 0, split_every: int | None = None
             ) -> tuple[da.Array, da.Array]:
    """Both, as two lazy arrays (compute them together: ``dask.compute(*mean_var(x))``)."""
    return mean(x, axis, split_every=split_every), var(x, axis, ddof, split_every=split_every)
