"""The compiled loop driver: generate the source (:func:`generate`), compile it with Numba, run it.

:class:`RegionDriver` and :class:`EagerFallback` implement the backend protocol
(:class:`jitgraph.backends.base.CompiledGraph`), so ``explain`` asks them for the driver source, the region rows,
the compile times and the fallback reason instead of reading attributes. The generated source is registered in
``linecache`` under a readable name, so tracebacks and ``inspect`` show it.
"""

from __future__ import annotations

import itertools
import logging
import math
import re
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numba
import numpy as np
from numba import types as nbtypes

from jitgraph import config
from jitgraph.backends import eager
from jitgraph.backends.base import KernelSource
from jitgraph.backends.cpu import helpers
from jitgraph.backends.cpu.mathlib import VECTOR_MATH
from jitgraph.backends.cpu.scalar import numpy_calls, runtime, sizes
from jitgraph.backends.cpu.scalar.core import Emitter
from jitgraph.backends.cpu.scalar.scope import is_array
from jitgraph.backends.cpu.scalar.table import TABLE
from jitgraph.errors import RerunEagerly, UnsupportedError
from jitgraph.generated_source import run_source
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops.control import RegionInfo, describe_regions
from jitgraph.ir.types import TensorType, python_type
from jitgraph.progress import compiling

_counter = itertools.count()
# What generated drivers may call: NumPy, math, the shared scalar helpers (jg_*) and the loop-body runtime.
_NAMESPACE: dict[str, Any] = {
    "np": np, "numba": numba, "math": math, **{name: getattr(helpers, name) for name in helpers.__all__},
    "dot_vv": runtime.dot_vv, "dot_mv": runtime.dot_mv, "dot_vm": runtime.dot_vm, "dot_mm": runtime.dot_mm,
    "blas_mv": runtime.blas_mv, "blas_vm": runtime.blas_vm, "blas_mm": runtime.blas_mm, "dot_range": runtime.dot_range, "outer": runtime.outer,
    "copy_into": runtime.copy_into,
    "RerunEagerly": RerunEagerly,  # raised by run-time checks of values only Python represents (ops.emit_check)
    # The vector math library (core.DriverContext), as the fused kernels name it: VM_tanh_float32.
    **{f"VM_{op}_{dtype}": fn for (op, dtype), fn in VECTOR_MATH.items()},
    **numpy_calls.REFERENCE,  # NumPy's own linalg, sorting, histogram and quantiles, called in object mode
}


_COMMENT = re.compile(r"  # .*$", re.MULTILINE)  # generated comments (trip counts, reasons): not part of the code
_COMPILED: dict[tuple, Any] = {}
"""Compiled drivers by (source without comments, signature, flags), most recently used last: graphs that differ
only in run-time extents (:mod:`.sizes`) generate the same source, and share one Numba compile."""
_COMPILED_LIMIT = 256


_SEEN: dict[tuple, str] = {}
"""Per run-time-extent source (and signature): the literal source compiled first for it (automatic dynamic)."""


def _remember(key: tuple, dispatcher: Any) -> None:
    _COMPILED[key] = dispatcher
    while len(_COMPILED) > _COMPILED_LIMIT:
        del _COMPILED[next(iter(_COMPILED))]


def _text(em: Emitter) -> str:
    """The code of a generated driver, without its comments (trip counts and reasons): what a compile depends on."""
    return _COMMENT.sub("", "\n".join(em.lines))


def _signature(em: Emitter) -> tuple:
    return tuple(numba_type(n.tensor_type) for n in em.graph.inputs) + tuple(numba.typeof(c)
                                                                            for c in em.globals.values())


def _choose(graph: Graph, options: dict[str, Any]) -> Emitter:
    """The driver to compile (:mod:`.sizes`): with literal sizes the first time a source is met, with the loop
    bounds' extents at run time once a graph differing only in those sizes comes (then compiled once for all of
    them), or at run time from the start under ``dynamic_dims="all"``."""
    if options.get("dynamic_dims") == "all":
        return generate(graph, options)
    dynamic = generate(graph, {**options, "dynamic_dims": "loops"})
    if not dynamic.sizes:
        return dynamic  # no run-time extents: the one source
    static = generate(graph, {**options, "dynamic_dims": None})
    key, literal = (_text(dynamic), _signature(dynamic)), _text(static)
    first = _SEEN.setdefault(key, literal)
    while len(_SEEN) > _COMPILED_LIMIT:
        del _SEEN[next(iter(_SEEN))]
    return static if first == literal else dynamic


def numba_type(t: TensorType) -> Any:
    if t.shape == ():
        if t.weak:
            return {bool: nbtypes.boolean, int: nbtypes.int64, float: nbtypes.float64,
                    complex: nbtypes.complex128}[python_type(t.dtype)]
        return numba.from_dtype(t.dtype)
    return nbtypes.Array(numba.from_dtype(t.dtype), t.ndim, {"C": "C", "F": "F", "S": "A"}[t.layout])


def _param(name: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", name) or "arg"
    if base[0].isdigit() or base in ("np", "numba", "math") or base.startswith("v") and base[1:].isdigit() \
            or base in _NAMESPACE or re.fullmatch(r"n\d+_\d+", base):
        base = "a_" + base
    candidate, k = base, 1
    while candidate in taken:
        candidate, k = f"{base}_{k}", k + 1
    taken.add(candidate)
    return candidate


def generate(graph: Graph, options: Mapping[str, Any] | None = None) -> Emitter:
    """Emit the driver's source for ``graph`` (no compilation); the Emitter holds source lines and decisions."""
    options = dict(options or {})
    em = Emitter(graph, options, TABLE)
    taken: set[str] = set()
    params = [_param(graph.input_names[k] if graph.input_names else f"arg{k}", taken)
              for k in range(len(graph.inputs))]
    for node, p in zip(graph.inputs, params):
        em.var[node] = p
    mutated = {graph.inputs[i] for i, _ in graph.mutations}
    name = _param(config.option(options, "name"), set())
    em.write(0, f"def loops_{name}({', '.join(params)}):")
    for value, variable, expr in sizes.plan(graph, params, options):
        em.write(1, f"{variable} = {expr}  # a run-time extent (sizes.py)")
        em.sizes[value] = variable
    outs, scope = em.emit_graph(graph, 1, mutated)
    results = []
    final = {value for _, value in graph.mutations}
    for k, (node, expr) in enumerate(zip(graph.outputs, outs)):
        if is_array(node) and node not in final and scope.roots.get(node, frozenset()) & mutated:
            em.write(1, f"out{k} = {expr}.copy()")  # detach from a caller buffer written below
            expr = f"out{k}"
        results.append(expr)
    for index, value in graph.mutations:
        target = graph.inputs[index]
        if scope.roots.get(value) == frozenset({target}) and value not in scope.view:
            continue  # already updated in place
        src = em.var[value]
        if scope.roots.get(value, frozenset()) & mutated:
            src += ".copy()"
        _write_back(em, em.var[target], src, target.tensor_type.shape)
    em.write(1, f"return ({''.join(r + ', ' for r in results)})")
    # Constant arrays are passed as trailing arguments: as Numba globals they would be frozen into the machine
    # code, which makes compiles slow for big ones (a folded np.zeros(100_000), say).
    em.lines[0] = f"def loops_{name}({', '.join(params + list(em.globals))}):"
    em.params = params
    em.function_name = f"loops_{name}"
    return em


def _write_back(em: Emitter, target: str, src: str, shape: tuple[int, ...]) -> None:
    """``target[...] = src`` for a mutated caller array, as a loop nest: Numba's own ``[...] =`` assignment (the
    runtime's ``copy_into``) took seconds to compile per signature (9 of the n-body driver's 10 s)."""
    if not shape:
        em.write(1, f"copy_into({target}, {src})")
        return
    if src.endswith(".copy()") or not src.isidentifier():
        em.write(1, f"w_{target} = {src}")
        src = f"w_{target}"
    loop_vars = [f"f{d}" for d in range(len(shape))]
    for d, extent in enumerate(shape):
        em.write(1 + d, f"for {loop_vars[d]} in range({em.size(extent)}):")
    index = ", ".join(loop_vars)
    em.write(1 + len(shape), f"{target}[{index}] = {src}[{index}]")


class RegionDriver:
    """A compiled graph: ``driver(args) -> outputs``, mutated caller arrays written, as the backend contract says.

    ``source`` is the generated function, ``parallel`` the loop nodes that run as ``prange`` and ``loop_reasons``
    why each loop is serial or parallel.
    """

    def __init__(self, graph: Graph, options: Mapping[str, Any] | None = None) -> None:
        self.graph = graph
        started = time.perf_counter()
        em = _choose(graph, dict(options or {}))
        self.source = "\n".join(em.lines) + "\n"
        self.parallel: list[Node] = list(em.parallel)
        self.loop_reasons = dict(em.serial_reasons)
        self.region_rows: list[RegionInfo] = describe_regions(graph, self.parallel)
        self.filename = f"<jitgraph-loops-{next(_counter)}-{em.function_name}>"
        namespace = run_source(self.source, self.filename, dict(_NAMESPACE))
        self.python_function = namespace[em.function_name]
        opts = dict(options or {})
        flags = {"error_model": "numpy", "boundscheck": config.option(opts, "boundscheck"), "nogil": True,
                 "parallel": bool(self.parallel)}
        self.const_args = tuple(em.globals.values())
        signature = _signature(em)
        logging.getLogger("jitgraph.kernels").debug("jitgraph: loop driver %s:\n%s", self.filename, self.source)
        self.codegen_seconds = time.perf_counter() - started
        started = time.perf_counter()
        key = (_text(em), signature, tuple(sorted(flags.items())))
        self.shared = key in _COMPILED  # the same source for another graph (other sizes): compiled once
        if self.shared:
            self.dispatcher = _COMPILED[key]
        else:
            try:
                with compiling(f"loop driver {em.function_name}"), warnings.catch_warnings():
                    # An objmode block (numpy_calls.py) holds the GIL by design; its loops are never prange.
                    warnings.filterwarnings("ignore", message=".*object mode won't allow parallel execution")
                    self.dispatcher = numba.njit(**flags)(self.python_function)
                    self.dispatcher.compile(signature)
            except Exception as exc:  # Numba rejected the source: report which part, run eagerly
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise UnsupportedError(f"Numba could not compile the loop driver: {first}",
                                       hint="the graph runs on the eager backend; see .source for the generated code"
                                       ) from exc
            self.dispatcher.disable_compile()
            _remember(key, self.dispatcher)
        self.compile_seconds = time.perf_counter() - started
        self._out_types = [o.type for o in graph.outputs]
        self._mutated = [i for i, _ in graph.mutations]
        # Inputs typed as scalars may arrive as 0-d arrays (``range(n)`` with ``n = np.array(3)``): the driver's
        # signature takes the scalar.
        self._scalars = [k for k, n in enumerate(graph.inputs) if n.tensor_type.shape == () and k not in self._mutated]

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        if self._mutated and _aliased(args, self._mutated):
            return eager.run(self.graph, args)
        if any(isinstance(args[k], np.ndarray) for k in self._scalars):
            args = [a[()] if k in self._scalars and isinstance(a, np.ndarray) else a for k, a in enumerate(args)]
        raw = self.dispatcher(*args, *self.const_args)
        return [_convert(v, t) for v, t in zip(raw, self._out_types)]

    def kernel_sources(self) -> list[KernelSource]:
        note = "no Numba compile: an earlier graph that differs only in run-time extents compiled this source" \
            if self.shared else ""
        return [KernelSource(f"loop driver {self.filename}", self.source, note)]

    def explain(self) -> str:
        return "\n".join(str(r) for r in self.region_rows)

    def regions(self) -> list[RegionInfo]:
        return list(self.region_rows)

    def compile_times(self) -> dict[str, float]:
        return {"codegen": self.codegen_seconds, "numba": self.compile_seconds}

    def fallback_reason(self) -> str | None:
        return None


def _aliased(args: Sequence[Any], mutated: list[int]) -> bool:
    arrays = [(k, a) for k, a in enumerate(args) if isinstance(a, np.ndarray)]
    for k in mutated:
        for j, other in arrays:
            if j != k and np.may_share_memory(args[k], other):
                return True
    return False


def _convert(value: Any, t: Any) -> Any:
    if isinstance(t, TensorType) and t.shape == ():
        return python_type(t.dtype)(value) if t.weak else t.dtype.type(value)
    return value


def compile_regions(graph: Graph, options: Mapping[str, Any] | None = None) -> RegionDriver:
    return RegionDriver(graph, options)


class EagerFallback:
    """What :func:`compile_or_eager` returns when the driver cannot be built: the reference interpreter + why."""

    def __init__(self, graph: Graph, reason: str) -> None:
        self.graph, self.reason = graph, reason
        self.parallel: list[Node] = []
        self.region_rows = describe_regions(graph)

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        return eager.run(self.graph, args)

    def kernel_sources(self) -> list[KernelSource]:
        return []

    def explain(self) -> str:
        return f"interpreted with NumPy: {self.reason}"

    def regions(self) -> list[RegionInfo]:
        return list(self.region_rows)

    def compile_times(self) -> dict[str, float]:
        return {"codegen": 0.0, "numba": 0.0}

    def fallback_reason(self) -> str | None:
        return self.reason


def compile_or_eager(graph: Graph, options: Mapping[str, Any] | None = None) -> RegionDriver | EagerFallback:
    try:
        return RegionDriver(graph, options)
    except UnsupportedError as exc:
        logging.getLogger("jitgraph.breaks").info("jitgraph: the CPU backend runs a graph in the reference "
                                                  "interpreter: %s", exc.message)
        return EagerFallback(graph, exc.message)
