"""``C += alpha * (A @ B)`` as one BLAS ``gemm`` call with ``beta = 1``, for updates written in place.

An optimizer step ``w -= lr * (x.T @ d)`` or a gradient accumulation ``g += x.T @ d`` otherwise costs a GEMM that
writes the product to a buffer and a kernel pass that reads it back with ``C`` and writes ``C``. BLAS can fold the
update into the GEMM's own store phase (``beta = 1``): on the MLP step of ``benchmarks/workloads.py`` (784x512
float32 weights) that saved ~0.15 ms of ~1.8 ms per update. NumPy does not expose ``beta``, so this calls the BLAS
NumPy itself links: the wheels' ``scipy_openblas64_`` library, whose ILP64 symbols carry a ``64_`` suffix, so the
integer width is never guessed. Where that library is not found (NumPy built against MKL, Accelerate, a system
BLAS) :func:`gemm_update` returns False and the caller runs the product and its epilogue kernel as before.

The result differs from NumPy's only in rounding: NumPy rounds the product, then ``alpha`` times it, then the sum;
``gemm`` adds ``alpha`` times its unrounded accumulator to ``C``. ``math="libm"`` (bit-for-bit NumPy) turns it off.
"""

from __future__ import annotations

import ctypes
import glob
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from jitgraph.ir.graph import Graph, Node

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_SYMBOLS = {np.dtype(np.float32): ("scipy_cblas_sgemm64_", ctypes.c_float),
            np.dtype(np.float64): ("scipy_cblas_dgemm64_", ctypes.c_double)}
_PATTERNS = ("libscipy_openblas64_*.so*", "libscipy_openblas64_*.dylib", "libscipy_openblas64_*.dll")
# Elements of C from which the BLAS path pays: its ctypes call costs ~12 us (three ``.ctypes.data`` alone ~9 us),
# the product-plus-kernel path ~1 ns per element more than the gemm alone. Shapes are static, so update_form
# decides this once per kernel.
MIN_ELEMENTS = 1 << 16


@cache
def _library() -> ctypes.CDLL | None:
    """NumPy's own OpenBLAS (already loaded by NumPy; opening it again returns the same handle)."""
    root = os.path.dirname(os.path.dirname(np.__file__))
    dirs = [os.path.join(root, "numpy.libs"), os.path.join(os.path.dirname(np.__file__), ".dylibs")]
    for d in dirs:
        for pattern in _PATTERNS:
            for path in sorted(glob.glob(os.path.join(d, pattern))):
                try:
                    return ctypes.CDLL(path)
                except OSError:
                    continue
    return None


@cache
def _gemm(dtype: np.dtype) -> Any:
    lib = _library()
    entry = _SYMBOLS.get(dtype)
    if lib is None or entry is None:
        return None
    name, scalar = entry
    fn = getattr(lib, name, None)
    if fn is None:
        return None
    i64, c_int, ptr = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p
    fn.argtypes = [c_int, c_int, c_int, i64, i64, i64, scalar, ptr, i64, ptr, i64, scalar, ptr, i64]
    fn.restype = None
    return fn


def available(dtype: Any) -> bool:
    return _gemm(np.dtype(dtype)) is not None


def _operand(a: np.ndarray, rows: int, cols: int) -> tuple[int, int] | None:
    """(trans flag, leading dimension) of a row-major view of ``a``, or None when BLAS cannot read it as is."""
    item = a.itemsize
    s0, s1 = a.strides
    if s1 == item and s0 % item == 0 and s0 // item >= max(cols, 1):
        return _NO_TRANS, s0 // item
    if s0 == item and s1 % item == 0 and s1 // item >= max(rows, 1):
        return _TRANS, s1 // item
    return None


def gemm_update(a: Any, b: Any, c: Any, alpha: float) -> bool:
    """``c += alpha * (a @ b)`` in place through BLAS; False (``c`` untouched) when this case is not for BLAS."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and isinstance(c, np.ndarray)):
        return False
    if a.ndim != 2 or b.ndim != 2 or c.ndim != 2 or not (a.dtype == b.dtype == c.dtype):
        return False
    (m, k), (k2, n) = a.shape, b.shape
    # alpha == 0 would let BLAS skip the product, and with it the nan/inf of a @ b that NumPy propagates.
    if k != k2 or c.shape != (m, n) or 0 in (m, n, k) or alpha == 0 or not np.isfinite(alpha):
        return False
    fn = _gemm(c.dtype)
    if fn is None or not c.flags.writeable or np.may_share_memory(c, a) or np.may_share_memory(c, b):
        return False
    ta, tb = _operand(a, m, k), _operand(b, k, n)
    tc = _operand(c, m, n)
    if ta is None or tb is None or tc is None or tc[0] != _NO_TRANS:
        return False
    fn(_ROW_MAJOR, ta[0], tb[0], m, n, k, alpha, a.ctypes.data, ta[1], b.ctypes.data, tb[1], 1.0,
       c.ctypes.data, tc[1])
    return True


@dataclass(frozen=True)
class UpdateForm:
    """A group body ``C (+|-) [s *] (A @ B)``: operand indices of A, B and C, and where the scale comes from."""

    a: int
    b: int
    c: int
    sign: int  # +1 for add, -1 for subtract
    scale: float = 1.0  # a constant factor (1 without a multiply)
    scale_operand: int | None = None  # operand index of a runtime scalar factor, which replaces ``scale``

    def alpha(self, operands: Sequence[Any], dtype: np.dtype) -> float:
        """``sign * s`` with ``s`` rounded to the product's dtype first, as NumPy casts a Python scalar (NEP 50)."""
        s = self.scale if self.scale_operand is None else np.asarray(operands[self.scale_operand]).item()
        return float(self.sign * dtype.type(s))


def update_form(body: Graph, head: Node | None) -> UpdateForm | None:
    """The :class:`UpdateForm` of a matmul-epilogue body, or None when the body computes anything else."""
    if head is None or head.op != "matmul" or len(body.outputs) != 1 or head.type.dtype not in _SYMBOLS:
        return None
    if math.prod(head.type.shape) < MIN_ELEMENTS:
        return None
    (out,) = body.outputs
    index = {n: k for k, n in enumerate(body.inputs)}
    work = [n for n in body.nodes if n.op not in ("input", "const")]
    same = (head.type.shape, head.type.dtype)
    if out.op not in ("add", "subtract") or (out.type.shape, out.type.dtype) != same or len(same[0]) != 2:
        return None
    first, second = out.inputs
    c, term = (first, second) if first in index else (second, first)
    if out.op == "subtract" and c is not first:
        return None
    if c not in index or (c.type.shape, c.type.dtype) != same:
        return None
    scale, scale_operand = 1.0, None
    if term is not head:
        if term.op != "multiply" or head not in term.inputs or (term.type.shape, term.type.dtype) != same:
            return None
        (s,) = [i for i in term.inputs if i is not head] or [head]
        if s is head or s.type.shape != () or not (s.type.weak or s.type.dtype == head.type.dtype):
            return None
        if s.op == "const":
            scale = float(np.asarray(s.attrs["value"]).item())
        elif s in index:
            scale_operand = index[s]
        else:
            return None
    a, b = head.inputs
    if a not in index or b not in index or c in (a, b) or len(work) != 2 + (term is not head):
        return None
    return UpdateForm(index[a], index[b], index[c], -1 if out.op == "subtract" else 1, scale, scale_operand)
