"""``np.histogram`` over uniform bins (an int ``bins``; a finite ``range``, or the data's) counted in one pass.

Why: NumPy's own routine is a Python function of some twenty array calls (a block loop, a keep mask, the bin index
arithmetic, two corrections against the edges, ``bincount``): 45 us for 36 values, where the counting itself is
nanoseconds per value. Histogram equalisation of a small image spent 90% of its time there. With the bins fixed by
the graph's attrs, the edges are a constant (NumPy's ``linspace``, computed once), and a Numba loop does NumPy's
arithmetic per value in the same order and dtype:

* values outside ``[first, last]`` (and NaN) are skipped;
* ``i = int((x - first) / (last - first) * bins)``, then ``bins`` -> ``bins - 1``;
* ``i -= 1`` where ``x < edges[i]``; ``i += 1`` where ``x >= edges[i + 1]`` and ``i`` is not the last bin;

so the counts are NumPy's exactly (the tests compare them on values at and around every edge). A range of ``None``
follows the data: its minimum and maximum (a NaN or infinity there runs NumPy's routine, which raises), and NumPy's
``linspace`` of edges, per call. Only float64 data and integers of 32 bits or fewer (NumPy computes both in float64,
and those integers convert to it exactly, so comparing them as floats is comparing them as NumPy does); other dtypes,
weights and fixed edge arrays keep NumPy's routine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.backends.cpu import cache as kcache
from jitgraph.ir.graph import Node

_EXACT_INT = 2 ** 53  # a range bound beyond this converts to float64 inexactly (NumPy subtracts ints exactly)


# The counting loop, loaded through the kernel cache like a generated kernel (cache.py: its directory checks, and
# Numba's compiled code beside the module), so that a new process loads it instead of compiling it (0.4 s a dtype).
_SOURCE = """\
import numpy as np
from numba import njit


@njit(cache={cache}, nogil=True, error_model="numpy")
def jg_uniform_histogram(a, first, last, denom, nbins, edges, out):
    for j in range(a.shape[0]):
        x = np.float64(a[j])
        if not (x >= first and x <= last):  # also NaN
            continue
        i = int((x - first) / denom * nbins)
        if i == nbins:
            i -= 1
        if x < edges[i]:
            i -= 1
        if x >= edges[i + 1] and i != nbins - 1:
            i += 1
        out[i] += 1
"""
_LOADED: dict[bool, Any] = {}


def _counting_loop(use_cache: bool) -> Any:
    loop = _LOADED.get(use_cache)
    if loop is None:
        try:
            module = kcache.load_module("jg_uniform_histogram", _SOURCE.format(cache=use_cache), use_cache)
        except kcache.CacheRefused:  # an unsafe cache directory (warned once): compiled in memory
            module = kcache.load_module("jg_uniform_histogram", _SOURCE.format(cache=False), False)
        loop = _LOADED[use_cache] = module.jg_uniform_histogram
    return loop


class UniformHistogram:
    """``np.histogram(a, bins, range, density)`` for one op's attrs: call it with the data. ``edges`` None: the range
    follows the data (its minimum and maximum), and so do the edges, made per call with NumPy's own ``linspace``."""

    __slots__ = ("count", "density", "edges", "first", "last", "nbins")

    def __init__(self, first: float, last: float, nbins: int, edges: np.ndarray | None, density: bool,
                 use_cache: bool) -> None:
        self.first, self.last, self.nbins, self.edges, self.density = first, last, nbins, edges, density
        self.count = _counting_loop(use_cache)

    def __call__(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        flat = a.ravel()
        if self.edges is None:
            limits = _data_edges(flat, self.nbins)
            if limits is None:  # a NaN or infinity, or too many bins for the range: NumPy raises its own error
                return np.histogram(a, self.nbins, density=self.density)
            first, last, edges = limits
        else:
            first, last, edges = self.first, self.last, self.edges.copy()
        n = np.zeros(self.nbins, np.intp)
        self.count(flat, first, last, last - first, self.nbins, edges, n)
        if self.density:  # NumPy's own expression
            db = np.array(np.diff(edges), float)
            return n / db / n.sum(), edges
        return n, edges


def _data_edges(flat: np.ndarray, nbins: int) -> tuple[float, float, np.ndarray] | None:
    """NumPy's outer edges from the data (``_get_outer_edges``) and its bin edges (``linspace`` over them, in
    float64: the data is float64 or a small integer), or None where NumPy raises."""
    if flat.size == 0:
        first, last = 0, 1
    else:
        first, last = flat.min(), flat.max()
        if not (np.isfinite(first) and np.isfinite(last)):
            return None
    if first == last:
        first, last = first - 0.5, last + 0.5
    edges = np.linspace(first, last, nbins + 1, endpoint=True, dtype=np.float64)
    if np.any(edges[:-1] >= edges[1:]):
        return None
    return float(first), float(last), edges


def uniform_histogram(node: Node, use_cache: bool) -> UniformHistogram | None:
    """The one-pass histogram for the ``histogram`` node, or None where NumPy's routine must run (see the module
    docstring; also a range NumPy rejects, or one whose bins would not all be finite-sized, so that it raises)."""
    attrs = node.attrs
    bins, bounds = attrs.get("bins"), attrs.get("range")
    data = node.inputs[0].type
    if node.op != "histogram" or attrs.get("weighted") or type(bins) is not int or bins < 1:
        return None
    if data.weak or data.ndim < 1 or not (data.dtype == np.float64 or (data.dtype.kind in "iu" and
                                                                        data.dtype.itemsize <= 4)):
        return None
    density = bool(attrs.get("density"))
    if bounds is None:
        return UniformHistogram(0.0, 1.0, bins, None, density, use_cache)
    first, last = bounds
    if not all(type(v) in (int, float) and abs(v) < _EXACT_INT for v in (first, last)) or not first <= last:
        return None
    if first == last:  # NumPy widens an empty range
        first, last = first - 0.5, last + 0.5
    edges = np.linspace(first, last, bins + 1, endpoint=True, dtype=np.float64)
    if np.any(edges[:-1] >= edges[1:]):
        return None
    return UniformHistogram(float(first), float(last), bins, edges, density, use_cache)
