"""Small njit helpers that generated drivers call for array ops Numba would otherwise hand to SciPy's BLAS.

jitgraph's run-time dependencies do not include SciPy, and Numba's ``np.dot`` needs it, so the few linear-algebra
forms that appear inside loop bodies (a row times a vector, an outer product) are plain loops here.
"""

from __future__ import annotations

import importlib.util

import numba
import numpy as np
from numba.extending import overload


@numba.njit(cache=False, error_model="numpy")
def dot_vv(a, b):
    """1-D · 1-D; the caller casts both operands to the result dtype first (so do the other helpers)."""
    acc = a[:0].sum()
    for k in range(a.shape[0]):
        acc += a[k] * b[k]
    return acc


@numba.njit(cache=False, error_model="numpy", fastmath={"reassoc"}, nogil=True)
def dot_range_loop(a, b, lo, hi, acc):
    """``acc + sum(a[k] * b[k] for k in range(lo, hi))`` for 1-D ``a``, ``b``, summed in any order.

    np.dot leaves its summation order unspecified (BLAS blocks it), so these additions may be reassociated, which
    is what lets LLVM vectorise them; the flag applies to this function only (the driver keeps strict IEEE), and
    LLVM still inlines it. The caller proved ``0 <= lo`` and that ``hi`` is within both lengths: the loop runs in
    uint64, where Numba adds no negative-index wraparound (a signed index would block vectorisation).
    """
    if hi <= lo:
        return acc
    for k in range(np.uint64(lo), np.uint64(hi)):
        acc += a[k] * b[k]
    return acc


@numba.njit(cache=False, error_model="numpy", fastmath={"reassoc"}, nogil=True)
def dot_mv(a, b):
    """2-D · 1-D, as BLAS gemv walks it: rows of a C-ordered matrix as dot products (reassociated, like
    :func:`dot_range`, so they vectorise), a column-major one (``A.T``) column by column as axpy updates."""
    n, m = a.shape
    out = np.zeros(n, dtype=a.dtype)
    if a.strides[0] >= a.strides[1]:
        for r in range(n):
            acc = out[r]
            for k in range(m):
                acc += a[r, k] * b[k]
            out[r] = acc
    else:
        for k in range(m):
            bk = b[k]
            for r in range(n):
                out[r] += a[r, k] * bk
    return out


@numba.njit(cache=False, error_model="numpy", fastmath={"reassoc"}, nogil=True)
def dot_vm(a, b):
    """1-D · 2-D: ``out[c] = sum_k a[k] * b[k, c]``, which is :func:`dot_mv` of ``b.T`` and ``a``: a C-ordered
    ``b`` (``b.T`` column-major) row by row as axpy updates, a column-major one (``B.T``) column by column as dot
    products; the same loops and the same order of additions as written out."""
    return dot_mv(b.T, a)


@numba.njit(cache=False, error_model="numpy", fastmath={"reassoc"}, nogil=True)
def dot_mm(a, b):
    """2-D · 2-D for the small products of loop bodies (a 3x3 rotation, a 64x64 recurrent weight): i-k-j order,
    the inner loop along a row of ``b`` and of the result."""
    n, kk = a.shape
    m = b.shape[1]
    out = np.zeros((n, m), dtype=a.dtype)
    for i in range(n):
        for k in range(kk):
            aik = a[i, k]
            for j in range(m):
                out[i, j] += aik * b[k, j]
    return out


@numba.njit(cache=False, error_model="numpy")
def outer(a, b):
    out = np.empty((a.shape[0], b.shape[0]), dtype=a.dtype)
    for r in range(a.shape[0]):
        for c in range(b.shape[0]):
            out[r, c] = a[r] * b[c]
    return out


@numba.njit(cache=False, error_model="numpy")
def copy_into(dst, src):
    """dst[...] = src for the writeback of a mutated caller array (same shape)."""
    dst[...] = src


# With SciPy installed (Numba's np.dot calls its BLAS), products of more than BLAS_FROM elements of floats go to
# BLAS gemv/gemm, which runs them on several threads: a 300x300 float64 matvec took 29 us there against 40 us in
# the loops above. SciPy is no run-time dependency: without it the loops serve every size.
BLAS_FROM = 4096
HAVE_BLAS = importlib.util.find_spec("scipy") is not None

def _by_layout(blas_size, loops):
    """An njit function ``f(a, b)``: BLAS's ``np.dot`` when both operands are typed contiguous (C or F: ``A.T``
    is F) and ``blas_size(a, b)`` reaches BLAS_FROM, else ``loops``. Chosen per operand type at compile time, so a
    strided view never reaches np.dot (which would copy it, and warn)."""

    def stub(a, b):
        raise NotImplementedError

    @overload(stub)
    def _choose(a, b):
        if HAVE_BLAS and a.layout in "CF" and b.layout in "CF":
            def impl(a, b):
                if blas_size(a, b) >= BLAS_FROM:
                    return np.dot(a, b)
                return loops(a, b)
            return impl
        return lambda a, b: loops(a, b)

    @numba.njit(cache=False, error_model="numpy", nogil=True)
    def call(a, b):
        return stub(a, b)

    return call


_mv_size = numba.njit(lambda a, b: a.shape[0] * a.shape[1])
_vm_size = numba.njit(lambda a, b: b.shape[0] * b.shape[1])
_mm_size = numba.njit(lambda a, b: a.shape[0] * a.shape[1] * b.shape[1] // 8)
blas_mv = _by_layout(_mv_size, dot_mv)
blas_vm = _by_layout(_vm_size, dot_vm)
blas_mm = _by_layout(_mm_size, dot_mm)


# A long contiguous np.dot goes to BLAS's dot (with SciPy): from memory (an operand not in cache, as a fresh
# triangular matrix is) it streams faster than the vectorised loop, 0.9 against 1.3 ms for the 2000-row
# triangular solve; in cache the two are alike.
DOT_BLAS_FROM = 256


def _dot_range_stub(a, b, lo, hi, acc):
    raise NotImplementedError


@overload(_dot_range_stub)
def _choose_dot_range(a, b, lo, hi, acc):
    if HAVE_BLAS and a.layout in "CF" and b.layout in "CF" and a.dtype == b.dtype \
            and str(a.dtype) in ("float32", "float64"):
        def impl(a, b, lo, hi, acc):
            if hi - lo >= DOT_BLAS_FROM:
                return acc + np.dot(a[lo:hi], b[lo:hi])
            return dot_range_loop(a, b, lo, hi, acc)
        return impl
    return lambda a, b, lo, hi, acc: dot_range_loop(a, b, lo, hi, acc)


@numba.njit(cache=False, error_model="numpy", nogil=True)
def dot_range(a, b, lo, hi, acc):
    """:func:`dot_range_loop`, or BLAS's dot for a long range of contiguous float operands (chosen per type)."""
    return _dot_range_stub(a, b, lo, hi, acc)
