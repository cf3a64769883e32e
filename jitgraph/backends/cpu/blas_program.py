"""A graph of small matrix-vector products and their elementwise epilogues, run as one Numba function calling BLAS.

Why: ``A.T @ (A @ x)`` or ``1.5 * (A @ x) + 1.2 * (B @ x)`` over a few hundred elements costs eager NumPy one
``matmul`` ufunc dispatch (~1 us) per product and one per elementwise op, and the compiled driver paid the same
calls plus the runner and NumPy's error state (~0.5 us to set and reset, needed because ``matmul`` warns on inf/nan).
Here the whole graph is one generated Numba function: each product a direct ``cblas_?gemv`` call into the BLAS NumPy
itself links (:mod:`jitgraph.backends.cpu.blas` finds it; Numba calls it by symbol name as a plain C call, no
marshalling), each fused epilogue one loop. One Python-to-Numba call per graph call, no ``errstate`` (no NumPy ufunc
runs, and a compiled graph reports no floating-point warnings anyway). The function checks the arrays' shapes and
strides itself, so a dispatch runner need not (jit/dispatch.py), and goes through the kernel disk cache (cache.py).

Results are NumPy's bit for bit, transcendental functions aside: NumPy's ``matmul`` of a matrix and a vector is the
same ``gemv`` (alpha 1, beta 0, the transpose as a flag), and the loop does NumPy's elementwise ops in NumPy's order
and dtypes (Python scalars converted to the array dtype as NEP 50 does; Numba contracts nothing into FMAs without
``fastmath``). ``exp``, ``log``, ``tanh``, ... use jitgraph's vector math, as the fused kernels do (libm for
``math="libm"``).

Taken only where every node is understood: float32/float64 inputs laid out C or F, 2-D transposes, matrix-vector
products (a float32 vector widened for a float64 product), and elementwise groups over one 1-D shape of arithmetic,
comparisons, casts and those math functions; no mutations. Anything else keeps the ordinary driver, which also runs
any call whose arrays the compiled function was not compiled for. Where NumPy's BLAS is not found, nothing changes.
"""

from __future__ import annotations

import ctypes
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

import llvmlite.binding as llvm
import numba
import numpy as np

from jitgraph import config
from jitgraph.backends.cpu import blas
from jitgraph.backends.cpu import cache as kcache
from jitgraph.backends.cpu.cache_safety import CacheRefused
from jitgraph.backends.cpu.mathlib import VECTOR_MATH
from jitgraph.backends.cpu.threads import parallel_threshold
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.types import TensorType

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_PRODUCTS = ("matmul", "dot")
_ARITHMETIC = {"add": "({} + {})", "subtract": "({} - {})", "multiply": "({} * {})", "divide": "({} / {})",
               "negative": "(-{})"}
_COMPARE = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=", "equal": "==", "not_equal": "!="}
# Unary math: jitgraph's vector math (mathlib.py, <= 4 ulp, as the fused kernels use) for math="fast", else libm.
_LIBM = {"exp": "exp", "log": "log", "expm1": "expm1", "log1p": "log1p", "sqrt": "sqrt", "tanh": "tanh",
         "sin": "sin", "cos": "cos"}
_MATH_COST = 20  # a transcendental function's cost per element for threads.parallel_threshold, in simple ops
_NO_TRANS, _TRANS = 111, 112
_log = logging.getLogger("jitgraph.perf")


@cache
def _cblas(dtype: np.dtype, routine: str = "gemv") -> Any:
    """The ctypes function ``cblas_?gemv`` (or ``?gemm``; ILP64) of NumPy's OpenBLAS (for its name and address), or
    None."""
    lib = blas._library()
    if lib is None or dtype not in _DTYPES:
        return None
    return getattr(lib, f"scipy_cblas_{'s' if dtype == np.float32 else 'd'}{routine}64_", None)


def _external(dtype: np.dtype, routine: str) -> Any:
    """``cblas_?gemv`` or ``cblas_?gemm`` as a Numba external function, called by symbol name, so a program that
    calls it can be cached on disk (a ctypes function pointer is an address Numba will not cache). The symbol is
    registered with LLVM from the library NumPy loaded. Pointers are passed as integers (``arr.ctypes.data``), as
    the C calling convention passes them; the CBLAS enums are C ints."""
    fn = _cblas(dtype, routine)
    if fn is None:
        return None
    llvm.add_symbol(fn.__name__, ctypes.cast(fn, ctypes.c_void_p).value)
    t = numba.types
    scalar, i32, i64, ptr = numba.from_dtype(dtype), t.int32, t.int64, t.uintp
    if routine == "gemv":  # order, trans, m, n, alpha, A, lda, x, incx, beta, y, incy
        return t.ExternalFunction(fn.__name__, t.void(i32, i32, i64, i64, scalar, ptr, i64, ptr, i64, scalar, ptr,
                                                      i64))
    # order, transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc
    return t.ExternalFunction(fn.__name__, t.void(i32, i32, i32, i64, i64, i64, scalar, ptr, i64, ptr, i64, scalar,
                                                  ptr, i64))


_COMPILING = threading.Lock()  # one compile at a time of a program module several graphs may share
# Imported by the generated programs.
GEMV_float32, GEMV_float64 = _external(_DTYPES[0], "gemv"), _external(_DTYPES[1], "gemv")
GEMM_float32, GEMM_float64 = _external(_DTYPES[0], "gemm"), _external(_DTYPES[1], "gemm")


class BlasProgram:
    """The generated source of a whole graph as one Numba function, compiled on first use for the arrays of that
    call: it checks that later arguments have exactly their shapes and strides (returning None otherwise) and runs
    the graph, returning its output or the tuple of its outputs.

    One compile per graph (~0.3 s; later processes load it from the kernel cache, cache.py), for the layouts the
    graph's types promise; arguments Numba types otherwise (a read-only array, another layout) raise TypeError, as
    the function compiles nothing more, and calls with other shapes or strides get None: either way
    :meth:`driver` then runs ``fallback``, the ordinary driver."""

    def __init__(self, writer: _Writer, graph: Graph, types: tuple[Any, ...], use_cache: bool,
                 fallback: Callable[[Any], list[Any]]) -> None:
        n_inputs, n_outputs = len(graph.inputs), len(graph.outputs)
        self.shapes = tuple(n.type.shape for n in graph.inputs)
        # (length, dtype) of each output: the caller allocates them (np.empty costs less than Numba boxing an array
        # it allocated, ~0.3 us) and passes them after the inputs.
        self.outputs = tuple((o.type.shape[0] if o.type.ndim == 1 else o.type.shape, o.type.dtype)
                             for o in graph.outputs)
        self.body = "\n".join(writer.lines) + "\n"
        self.header = "".join(line + "\n" for line in sorted(writer.imports)) + \
            "".join(f"{name} = {expr}\n" for name, expr in writer.header.items())
        self.n_inputs, self.n_outputs, self.types, self.use_cache = n_inputs, n_outputs, types, use_cache
        self.fallback = fallback
        self.source = self.body  # until compiled: then the whole module
        self.seconds = 0.0  # compiling or loading it, once done
        self._function: Any = None
        self._key: tuple | None = None
        self._failed = False
        self._lock = threading.Lock()

    def checked(self, leaves: Sequence[Any]) -> Any | None:
        """The compiled function for arrays laid out as ``leaves`` (compiling it on first use), or None where it was
        compiled for others or cannot be (arguments that are not arrays of the graph's types). It takes the inputs
        and then the outputs (``outputs``: fresh C-ordered arrays) and returns whether it ran (False: not arrays of
        these shapes and strides; TypeError: of other Numba types).

        Why the checks are in Numba: a dispatch runner checking each array's ``shape`` and ``strides`` in Python
        pays ~0.3 us an array (each access builds a tuple of new ints); Numba has them unboxed already."""
        if len(leaves) != self.n_inputs or not all(type(a) is np.ndarray for a in leaves):
            return None
        key = tuple((a.shape, a.strides) for a in leaves)
        if tuple(shape for shape, _ in key) != self.shapes:  # the sizes are constants of the program
            return None
        with self._lock:
            if self._function is None and not self._failed:
                self._compile(leaves, key)
        return self._function if key == self._key else None

    def _compile(self, leaves: Sequence[Any], key: tuple) -> None:
        types = tuple(numba.typeof(a) for a in leaves)
        if types != self.types:
            self._failed = True  # not the layouts the graph promises: keep the ordinary driver
            return
        types += tuple(numba.types.Array(numba.from_dtype(d), 1 if type(n) is int else len(n), "C")
                       for n, d in self.outputs)
        params = ", ".join([f"a{k}" for k in range(self.n_inputs)] + [f"o{k}" for k in range(self.n_outputs)])
        checks = " or ".join(f"a{k}.shape != {shape!r} or a{k}.strides != {strides!r}"
                             for k, (shape, strides) in enumerate(key))
        source = (f'"""A graph run as one Numba function calling BLAS (jitgraph/backends/cpu/blas_program.py)."""\n'
                  f"import numba\nimport numpy as np\n{self.header}\n\n"
                  f'@numba.njit(cache={self.use_cache}, error_model="numpy")\n'
                  f"def program({params}):\n    if {checks}:\n        return False  # not the arrays compiled for\n"
                  + self.body)
        started = time.perf_counter()
        try:
            try:
                module = kcache.load_module("blas_program", source, self.use_cache)
            except CacheRefused:  # the cache directory failed its checks: compiled in memory
                module = kcache.load_module("blas_program", source, False)
            function = module.program  # shared by every graph of the same source (one module per source)
            with _COMPILING:
                if types not in function.overloads:
                    with kcache.compile_lock(function):
                        function.compile(types)
                    kcache.record_dispatch(function)
                function.disable_compile()
        except Exception:  # noqa: BLE001 - a program Numba cannot compile keeps the ordinary driver
            self._failed = True
            return
        self.seconds = time.perf_counter() - started
        self.source, self._function, self._key = source, function, key

    def driver(self, args: Sequence[Any]) -> list[Any]:
        """The CpuCompiled driver protocol (``driver(args) -> list of outputs``): the program where it takes these
        arguments, else the ordinary driver."""
        function = self._function if self._function is not None or self._failed else self.checked(args)
        if function is not None:
            outs = [np.empty(n, dtype) for n, dtype in self.outputs]
            try:
                ran = function(*args, *outs)
            except TypeError:  # arrays Numba types otherwise (read-only, another layout)
                ran = False
            if ran:
                return outs
        return self.fallback(args)


class _Reject(Exception):
    """A node this module does not run: the graph keeps the ordinary driver."""


def _dtype_of(node: Node) -> np.dtype:
    t = node.type
    if not isinstance(t, TensorType) or t.weak or t.dtype not in _DTYPES:
        raise _Reject
    return t.dtype


def _dtype_of_any(node: Node) -> np.dtype:
    """The dtype of a strong array value (bool included), else reject."""
    t = node.type
    if not isinstance(t, TensorType) or t.weak:
        raise _Reject
    return t.dtype


def _is_elementwise(m: Node) -> bool:
    return m.op in _ARITHMETIC or m.op in _COMPARE or m.op in _LIBM or m.op == "astype"


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
    def __init__(self, math_option: str) -> None:
        self.math = math_option
        self.lines: list[str] = []
        # Module-level names of the generated source: name -> expression, and the imports they need.
        self.header: dict[str, str] = {}
        self.imports: set[str] = set()
        self.var: dict[Node, str] = {}
        self._n = 0

    def fresh(self) -> str:
        self._n += 1
        return f"t{self._n}"

    def product(self, node: Node, operands: list[str]) -> str:
        """``A @ x`` or ``x @ A`` (``A.T @ x``) as one gemv call into a fresh vector; returns its variable.

        The sizes are static, and the matrix's layout is what its type promises ("C", or "F" for a transpose), which
        the compiled function's argument types enforce: so the trans flag and leading dimension are constants. An
        empty inner axis gives zeros, as NumPy does (BLAS would leave ``y`` untouched)."""
        a, b = node.inputs
        dtype = _dtype_of(node)
        if _dtype_of(a) != dtype and a.type.ndim == 1:
            operands = [self.widen(operands[0], a, dtype), operands[1]]
        if _dtype_of(b) != dtype and b.type.ndim == 1:
            operands = [operands[0], self.widen(operands[1], b, dtype)]
        if _dtype_of(a) != dtype and a.type.ndim != 1 or _dtype_of(b) != dtype and b.type.ndim != 1 or node.attrs:
            raise _Reject
        if (a.type.ndim, b.type.ndim) == (2, 1):
            matrix, (m, k), layout, mat, vec = a, a.type.shape, a.type.layout, operands[0], operands[1]
        elif (a.type.ndim, b.type.ndim) == (1, 2):  # x @ A = A.T @ x: A read as its transpose
            matrix, layout, mat, vec = b, {"C": "F", "F": "C"}.get(b.type.layout, "S"), operands[1], operands[0]
            k, m = b.type.shape
        elif (a.type.ndim, b.type.ndim) == (2, 2):
            return self.matmat(node, operands)
        else:
            raise _Reject
        if layout not in ("C", "F") or matrix.type.shape == ():
            raise _Reject
        self.header[f"D{dtype.name}"] = f"np.dtype({dtype.name!r})"
        self.imports.add(f"from jitgraph.backends.cpu.blas_program import GEMV_{dtype.name}")
        y = self.fresh()
        if k == 0 or m == 0:
            self.lines.append(f"    {y} = np.zeros({m}, D{dtype.name})  # {node.op}: empty")
            return y
        # Row-major A (m x k) is gemv NoTrans with lda = k; column-major A is row-major A.T (k x m), so Trans, lda = m.
        trans, rows, cols = (_NO_TRANS, m, k) if layout == "C" else (_TRANS, k, m)
        self.lines.append(f"    {y} = np.empty({m}, D{dtype.name})")
        self.lines.append(f"    GEMV_{dtype.name}(101, {trans}, {rows}, {cols}, 1.0, {mat}.ctypes.data, {cols}, "
                          f"{vec}.ctypes.data, 1, 0.0, {y}.ctypes.data, 1)  # {node.op}")
        return y

    def matmat(self, node: Node, operands: list[str]) -> str:
        """``A @ B`` of two matrices as one gemm call, each operand's transpose a flag, as NumPy calls it; not
        ``A.T @ A`` (one array on both sides), which NumPy computes with syrk."""
        a, b = node.inputs
        dtype = _dtype_of(node)
        (m, k), (_, n) = a.type.shape, b.type.shape
        if _base(a) is _base(b) or a.type.layout not in ("C", "F") or b.type.layout not in ("C", "F"):
            raise _Reject
        self.header[f"D{dtype.name}"] = f"np.dtype({dtype.name!r})"
        self.imports.add(f"from jitgraph.backends.cpu.blas_program import GEMM_{dtype.name}")
        y = self.fresh()
        if 0 in (m, n, k):
            self.lines.append(f"    {y} = np.zeros(({m}, {n}), D{dtype.name})  # {node.op}: empty")
            return y
        ta, lda = (_NO_TRANS, k) if a.type.layout == "C" else (_TRANS, m)
        tb, ldb = (_NO_TRANS, n) if b.type.layout == "C" else (_TRANS, k)
        self.lines.append(f"    {y} = np.empty(({m}, {n}), D{dtype.name})")
        self.lines.append(f"    GEMM_{dtype.name}(101, {ta}, {tb}, {m}, {n}, {k}, 1.0, {operands[0]}.ctypes.data, "
                          f"{lda}, {operands[1]}.ctypes.data, {ldb}, 0.0, {y}.ctypes.data, {n})  # {node.op}")
        return y

    def widen(self, operand: str, node: Node, dtype: np.dtype) -> str:
        """A float32 vector cast to float64 for a float64 product, as NumPy casts a mixed ``matmul``'s operand
        (exactly: every float32 is a float64)."""
        if (_dtype_of(node), dtype) != _DTYPES:
            raise _Reject
        out = self.fresh()
        self.header["Dfloat64"], self.header["Tfloat64"] = "np.dtype('float64')", "np.float64"
        self.lines += [f"    {out} = np.empty({node.type.shape[0]}, Dfloat64)",
                       f"    for i in range({node.type.shape[0]}):", f"        {out}[i] = Tfloat64({operand}[i])"]
        return out

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
        for m in body.nodes:
            if m.op in ("input", "const"):
                continue
            if m.op in _PRODUCTS and all(i in local for i in m.inputs):
                local[m] = self.product(m, [local[i] for i in m.inputs])
            elif m.op == "transpose" and m.inputs[0] in local:
                local[m] = self.assign(self.transpose(m, local[m.inputs[0]]))
            elif _is_elementwise(m):
                loop.append(m)
            else:
                raise _Reject
        local.update(self.loop(loop, local, body.outputs, node.attrs.get("name", "group")))
        return [local[o] for o in body.outputs]

    def loop(self, members: list[Node], local: dict[Node, str], outputs: Sequence[Node], label: str
             ) -> dict[Node, str]:
        """One loop computing the elementwise ``members`` (in order, over one 1-D shape) element by element, each in
        its NumPy dtype; returns the arrays it stores (the members among ``outputs``)."""
        if not members:
            return {}
        shape = members[0].type.shape
        # The loop is serial: past the size from which a fused kernel runs on several threads, the ordinary driver.
        if math.prod(shape) >= parallel_threshold(_MATH_COST if any(m.op in _LIBM for m in members) else 1):
            raise _Reject
        element: dict[Node, str] = {}
        inner: list[str] = []
        for m in members:
            if not isinstance(m.type, TensorType) or m.type.shape != shape or len(shape) != 1:
                raise _Reject
            strong = {i.type.dtype for i in m.inputs if i.op != "const" and isinstance(i.type, TensorType)}
            if m.op == "astype":
                if strong - {np.dtype(bool), *_DTYPES} or len(strong) != 1 or set(m.attrs) - {"dtype"}:
                    raise _Reject
                operand_dtype = next(iter(strong))
            else:
                if len(strong) != 1 or strong - set(_DTYPES):
                    raise _Reject
                operand_dtype = next(iter(strong))
                result = np.dtype(bool) if m.op in _COMPARE else operand_dtype
                if m.attrs or _dtype_of_any(m) != result:
                    raise _Reject
            args = []
            for i in m.inputs:
                if i in element:
                    args.append(element[i])
                elif i.op == "const":
                    name = f"K{len(self.header)}"
                    value = float(_constant(i, operand_dtype))  # exact in a float64, written exactly in hex
                    self.header[name] = f"np.{operand_dtype.name}(float.fromhex({value.hex()!r}))"
                    args.append(name)
                elif i in local and isinstance(i.type, TensorType) and not i.type.weak and i.type.shape == shape:
                    args.append(f"{local[i]}[i]")
                else:
                    raise _Reject
            element[m] = self.fresh()
            inner.append(f"        {element[m]} = {self.element(m, args)}  # {m.op}")
        stored = {}
        for o in outputs:
            if o in element and o not in stored:
                stored[o] = out = self.fresh()
                dtype = _dtype_of_any(o)
                self.header[f"D{dtype.name}"] = f"np.dtype({dtype.name!r})"
                self.lines.append(f"    {out} = np.empty({shape[0]}, D{dtype.name})")
                inner.append(f"        {out}[i] = {element[o]}")
        self.lines.append(f"    for i in range({shape[0]}):  # {label}")
        self.lines += inner
        return stored

    def element(self, m: Node, args: list[str]) -> str:
        """The scalar expression of the elementwise ``m`` over the scalar expressions ``args``."""
        if m.op in _ARITHMETIC:
            return _ARITHMETIC[m.op].format(*args)
        if m.op in _COMPARE:
            return f"({args[0]} {_COMPARE[m.op]} {args[1]})"
        dtype = _dtype_of_any(m)
        cast = f"T{dtype.name}"
        self.header[cast] = f"np.{dtype.name}"  # np.float32(x) in Numba: NumPy's rounding cast
        if m.op == "astype":
            return f"{cast}({args[0]})"
        fn = VECTOR_MATH.get((m.op, dtype.name)) if self.math == "fast" else None
        if fn is not None:
            self.imports.add(f"from jitgraph.backends.cpu.mathlib import {fn.__name__}")
            return f"{cast}({fn.__name__}({args[0]}))"
        self.imports.add("import math")
        return f"{cast}(math.{_LIBM[m.op]}({args[0]}))"

    def assign(self, expr: str) -> str:
        name = self.fresh()
        self.lines.append(f"    {name} = {expr}")
        return name


def build(graph: Graph, options: Mapping[str, Any], fallback: Callable[[Any], list[Any]]) -> BlasProgram | None:
    """The :class:`BlasProgram` of ``graph`` (``fallback``: the ordinary driver, for arguments it does not take), or
    None where some node is not for it, or NumPy's BLAS is unknown."""
    if graph.mutations or not graph.outputs or not any(n.op in _PRODUCTS for n in _all_nodes(graph)):
        return None
    w = _Writer(config.option(options, "math"))
    try:
        for n in graph.inputs:
            # Inputs of a promised layout (C or F): the compiled argument types then fix every leading dimension.
            if n.type.ndim not in (1, 2) or _cblas(_dtype_of(n)) is None or n.type.layout not in ("C", "F"):
                raise _Reject
        w.var.update((n, f"a{k}") for k, n in enumerate(graph.inputs))
        for n in graph.nodes:
            if n.op == "input":
                continue
            if not all(i in w.var for i in n.inputs):
                raise _Reject
            operands = [w.var[i] for i in n.inputs]
            if n.op in _PRODUCTS:
                w.var[n] = w.product(n, operands)
            elif n.op == "transpose":
                w.var[n] = w.assign(w.transpose(n, operands[0]))
            elif n.op == "fused":
                outs = w.group(n, operands)
                w.var[n] = outs[0] if len(outs) == 1 else w.assign("(" + ", ".join(outs) + ",)")
            elif _is_elementwise(n):
                w.var[n] = w.loop([n], w.var, [n], n.op)[n]
            elif n.op == "tuple_get":
                w.var[n] = f"{operands[0]}[{n.attrs['index']}]"
            else:
                raise _Reject
        for o in graph.outputs:
            # Results must be fresh arrays: an input or a view of one would be returned as a new object here.
            if o.op in ("input", "transpose") or not isinstance(o.type, TensorType) or o.type.ndim not in (1, 2):
                raise _Reject
    except _Reject:
        return None
    except Exception:  # noqa: BLE001 - a case mishandled here must not cost the graph its backend
        _log.warning("blas_program: no program for this graph (the ordinary driver runs it)", exc_info=True)
        return None
    results = [w.var[o] for o in graph.outputs]
    if len(set(results)) != len(results):  # one array returned twice: the caller would allocate two
        return None
    for k, r in enumerate(results):  # each output computed straight into the caller's array, else copied there
        alloc = next((j for j, line in enumerate(w.lines) if line.startswith(f"    {r} = np.empty(")), None)
        if alloc is not None:
            w.lines[alloc] = f"    {r} = o{k}  # output {k}, allocated by the caller"
        else:
            w.lines.append(f"    o{k}[:] = {r}")
    w.lines.append("    return True")
    # The Numba types of arrays laid out as promised (a contiguous vector is "C" to Numba whatever the promise).
    use_cache = bool(config.option(options, "cache"))
    types = tuple(numba.types.Array(numba.from_dtype(n.type.dtype), n.type.ndim, n.type.layout if n.type.ndim == 2
                                    else "C") for n in graph.inputs)
    return BlasProgram(w, graph, types, use_cache, fallback)


def _base(node: Node) -> Node:
    """The value ``node`` views through transposes."""
    while node.op == "transpose":
        node = node.inputs[0]
    return node


def _all_nodes(graph: Graph) -> list[Node]:
    return [m for n in graph.nodes for m in [n, *(x for r in n.regions for x in r.nodes)]]
