"""A graph of small matrix-vector products and their linear epilogues, run as one Numba function that calls BLAS.

Why: ``A.T @ (A @ x)`` or ``1.5 * (A @ x) + 1.2 * (B @ x)`` over a few hundred elements costs eager NumPy one
``matmul`` ufunc dispatch (~1.5 us) per product and one per elementwise op, and the compiled driver paid the same
calls plus the runner and NumPy's error state (~0.5 us to set and reset, needed because ``matmul`` warns on inf/nan).
Here the whole graph is one generated Numba function: each product is a direct ``cblas_?gemv`` call into the BLAS
NumPy itself links (:mod:`jitgraph.backends.cpu.blas` finds it; Numba calls the ctypes symbol as a plain C call, no
marshalling), each fused epilogue one loop. One Python-to-Numba call per graph call, no ``errstate`` (no NumPy ufunc
runs, and a compiled graph reports no floating-point warnings anyway).

Results are NumPy's bit for bit: NumPy's ``matmul`` of a matrix and a vector is the same ``gemv`` (alpha 1, beta 0,
the transpose as a flag), and the epilogue loop does NumPy's elementwise ops in NumPy's order and dtype (Python
scalars converted to the array dtype as NEP 50 does; Numba contracts nothing into FMAs without ``fastmath``).

Taken only where every node is understood: float32/float64 inputs, 2-D transposes, matrix-vector products of one
dtype, fused groups of add/subtract/multiply/divide/negative over one 1-D shape, no mutations; anything else keeps
the ordinary driver. Where NumPy's BLAS is not found (:func:`blas.available`) nothing changes.
"""

from __future__ import annotations

import ctypes
import itertools
import linecache
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numba
import numpy as np

from jitgraph.backends.cpu import blas
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.types import TensorType

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_PRODUCTS = ("matmul", "dot")
_ELEMENTWISE = {"add": "({} + {})", "subtract": "({} - {})", "multiply": "({} * {})", "divide": "({} / {})",
                "negative": "(-{})"}
_ids = itertools.count()


@cache
def _gemv(dtype: np.dtype) -> Any:
    """The ctypes function ``cblas_?gemv`` (ILP64) of NumPy's OpenBLAS, or None."""
    lib = blas._library()
    if lib is None or dtype not in _DTYPES:
        return None
    fn = getattr(lib, "scipy_cblas_sgemv64_" if dtype == np.float32 else "scipy_cblas_dgemv64_", None)
    if fn is None:
        return None
    scalar = ctypes.c_float if dtype == np.float32 else ctypes.c_double
    i64, c_int, ptr = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p
    fn.argtypes = [c_int, c_int, i64, i64, scalar, ptr, i64, ptr, i64, scalar, ptr, i64]
    fn.restype = None
    return fn


@cache
def _matvec(dtype: np.dtype) -> Any:
    """A Numba function ``mv(A, x) -> A @ x`` for a 2-D ``A`` of any strides: BLAS reads ``A`` in place when one
    axis is unit-stride (row-major, or its transpose with the trans flag, as NumPy passes it), else a contiguous
    copy; ``x`` with its positive stride, else a copy. An empty inner axis gives zeros, as NumPy does (BLAS would
    leave ``y`` untouched)."""
    gemv = _gemv(dtype)
    row_major, no_trans, trans = 101, 111, 112

    def mv(a, x):  # compiled by Numba
        m, k = a.shape
        y = np.empty(m, a.dtype)
        if m == 0:
            return y
        if k == 0:
            y[:] = 0
            return y
        item = a.itemsize
        s0, s1 = a.strides
        xs = x.strides[0]
        xc = x if xs > 0 and xs % item == 0 else np.ascontiguousarray(x)
        incx = xc.strides[0] // item
        if s1 == item and s0 % item == 0 and s0 // item >= k:
            gemv(row_major, no_trans, m, k, 1.0, a.ctypes.data, s0 // item, xc.ctypes.data, incx, 0.0,
                 y.ctypes.data, 1)
        elif s0 == item and s1 % item == 0 and s1 // item >= m:
            gemv(row_major, trans, k, m, 1.0, a.ctypes.data, s1 // item, xc.ctypes.data, incx, 0.0,
                 y.ctypes.data, 1)
        else:
            ac = np.ascontiguousarray(a)
            gemv(row_major, no_trans, m, k, 1.0, ac.ctypes.data, k, xc.ctypes.data, incx, 0.0, y.ctypes.data, 1)
        return y

    return numba.njit(mv, error_model="numpy")


@dataclass
class BlasProgram:
    """The generated Numba function of a whole graph, and the driver that calls it with the flat argument list."""

    source: str
    function: Any  # the Numba dispatcher
    driver: Callable[[Any], list[Any]]


class _Reject(Exception):
    """A node this module does not run: the graph keeps the ordinary driver."""


def _dtype_of(node: Node) -> np.dtype:
    t = node.type
    if not isinstance(t, TensorType) or t.weak or t.dtype not in _DTYPES:
        raise _Reject
    return t.dtype


def _constant(node: Node, dtype: np.dtype) -> Any:
    """A weak Python scalar constant as NumPy converts it to ``dtype`` (NEP 50), where that is exact or a rounding
    NumPy makes the same way (a finite float within range); else reject."""
    value = node.attrs.get("value")
    if not (isinstance(node.type, TensorType) and node.type.weak):
        raise _Reject
    if type(value) is int and abs(value) <= 2 ** (np.finfo(dtype).nmant + 1):
        return dtype.type(value)
    if type(value) is float and math.isfinite(value) and abs(value) <= float(np.finfo(dtype).max):
        return dtype.type(value)
    raise _Reject


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {"np": np}
        self.var: dict[Node, str] = {}
        self._n = 0

    def fresh(self) -> str:
        self._n += 1
        return f"t{self._n}"

    def product(self, node: Node, operands: list[str]) -> str:
        """``A @ x`` or ``x @ A`` (``A.T @ x``) as one gemv call."""
        a, b = node.inputs
        dtype = _dtype_of(node)
        if _dtype_of(a) != dtype or _dtype_of(b) != dtype or node.attrs:
            raise _Reject
        shapes = (a.type.ndim, b.type.ndim)
        self.ns[f"MV{dtype.char}"] = _matvec(dtype)
        if shapes == (2, 1):
            return f"MV{dtype.char}({operands[0]}, {operands[1]})"
        if shapes == (1, 2):
            return f"MV{dtype.char}({operands[1]}.T, {operands[0]})"
        raise _Reject

    def transpose(self, node: Node, operand: str) -> str:
        if node.type.ndim != 2 or node.attrs.get("axes") not in ((1, 0), None):
            raise _Reject
        return f"{operand}.T"

    def group(self, node: Node, operands: list[str]) -> list[str]:
        """A fused group: its products (a matmul epilogue's head) first, then one loop over its elementwise ops;
        returns the variables of the group's outputs."""
        body = node.regions[0]
        local = dict(zip(body.inputs, operands))
        loop: list[Node] = []
        shape: tuple[int, ...] | None = None
        for m in body.nodes:
            if m.op in ("input", "const"):
                continue
            if m.op in _PRODUCTS and all(i in local for i in m.inputs):
                local[m] = self.assign(self.product(m, [local[i] for i in m.inputs]))
            elif m.op == "transpose" and m.inputs[0] in local:
                local[m] = self.assign(self.transpose(m, local[m.inputs[0]]))
            elif m.op in _ELEMENTWISE and not m.attrs:
                loop.append(m)
                shape = shape or m.type.shape
                if m.type.ndim != 1 or m.type.shape != shape:
                    raise _Reject
            else:
                raise _Reject
        if not loop:
            return [local[o] for o in body.outputs]
        dtype = _dtype_of(loop[0])
        element: dict[Node, str] = {}
        inner: list[str] = []
        for m in loop:
            args = []
            for i in m.inputs:
                if i in element:
                    args.append(element[i])
                elif i.op == "const":
                    name = f"K{len(self.ns)}"
                    self.ns[name] = _constant(i, dtype)
                    args.append(name)
                elif i in local and isinstance(i.type, TensorType) and i.type.shape == shape:
                    if _dtype_of(i) != dtype:
                        raise _Reject
                    args.append(f"{local[i]}[i]")
                else:
                    raise _Reject
            if _dtype_of(m) != dtype:
                raise _Reject
            element[m] = self.fresh()
            inner.append(f"        {element[m]} = {_ELEMENTWISE[m.op].format(*args)}  # {m.op}")
        outs = []
        for o in body.outputs:
            if o not in element:
                outs.append(local[o])
                continue
            out = self.fresh()
            self.ns[f"D{dtype.char}"] = dtype
            self.lines.append(f"    {out} = np.empty({shape[0]}, D{dtype.char})")
            inner.append(f"        {out}[i] = {element[o]}")
            outs.append(out)
        self.lines.append(f"    for i in range({shape[0]}):  # {node.attrs.get('name', 'group')}")
        self.lines += inner
        return outs

    def assign(self, expr: str) -> str:
        name = self.fresh()
        self.lines.append(f"    {name} = {expr}")
        return name


def build(graph: Graph) -> BlasProgram | None:
    """The :class:`BlasProgram` of ``graph``, or None where some node is not for it (or NumPy's BLAS is unknown)."""
    if graph.mutations or not graph.outputs or not any(n.op in _PRODUCTS for n in _all_nodes(graph)):
        return None
    w = _Writer()
    try:
        for n in graph.inputs:
            if n.type.ndim not in (1, 2) or _gemv(_dtype_of(n)) is None:
                raise _Reject
        params = [f"a{k}" for k in range(len(graph.inputs))]
        w.var.update(zip(graph.inputs, params))
        for n in graph.nodes:
            if n.op == "input":
                continue
            operands = [w.var[i] for i in n.inputs] if all(i in w.var for i in n.inputs) else None
            if operands is None:
                raise _Reject
            if n.op in _PRODUCTS:
                w.var[n] = w.assign(w.product(n, operands))
            elif n.op == "transpose":
                w.var[n] = w.assign(w.transpose(n, operands[0]))
            elif n.op == "fused":
                outs = w.group(n, operands)
                if len(outs) == 1:
                    w.var[n] = outs[0]
                else:
                    w.var[n] = w.assign("(" + ", ".join(outs) + ",)")
            elif n.op == "tuple_get":
                w.var[n] = f"{operands[0]}[{n.attrs['index']}]"
            else:
                raise _Reject
        for o in graph.outputs:
            # Results must be fresh arrays: an input or a view of one would be returned as a new object here.
            if o.op in ("input", "transpose") or not isinstance(o.type, TensorType) or o.type.ndim != 1:
                raise _Reject
    except _Reject:
        return None
    results = [w.var[o] for o in graph.outputs]
    w.lines.append(f"    return {results[0]}" if len(results) == 1 else f"    return ({', '.join(results)},)")
    source = f"def program({', '.join(params)}):\n" + "\n".join(w.lines) + "\n"
    filename = f"<jitgraph blas program #{next(_ids)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), w.ns)  # noqa: S102 - our own generated source
    function = numba.njit(w.ns["program"], error_model="numpy")
    try:
        function.compile(tuple(_numba_type(n.type) for n in graph.inputs))
    except Exception:  # noqa: BLE001 - a program Numba cannot type keeps the ordinary driver
        return None
    return BlasProgram(source, function, _driver(function, len(results)))


def _numba_type(t: TensorType) -> Any:
    layout = {"C": "C", "F": "F"}.get(t.layout, "A") if t.ndim == 2 else ("C" if t.layout == "C" else "A")
    return numba.types.Array(numba.from_dtype(t.dtype), t.ndim, layout)


def _driver(function: Any, n_outputs: int) -> Callable[[Any], list[Any]]:
    """``driver(args) -> list of outputs``, the CpuCompiled driver protocol, around the Numba call."""
    body = "[PROGRAM(*args)]" if n_outputs == 1 else "list(PROGRAM(*args))"
    source = f"def driver(args):\n    return {body}\n"
    ns: dict[str, Any] = {"PROGRAM": function}
    exec(compile(source, "<jitgraph blas driver>", "exec"), ns)  # noqa: S102 - our own generated source
    return ns["driver"]


def _all_nodes(graph: Graph) -> list[Node]:
    return [m for n in graph.nodes for m in [n, *(x for r in n.regions for x in r.nodes)]]
