"""The loop driver's emitter core: one Numba "driver" function, as Python source, for a whole graph with regions.

Each node becomes one statement ``v12 = ...`` named after its printed name ``%12``, so the source reads side by side
with the IR dump. Regions become real ``for``/``while``/``if`` statements (:mod:`.regions`), whole-array ops inside
bodies become explicit loop nests (:mod:`.loopnest`) that Numba compiles into the same function.

What an op computes is not decided here: every scalar expression comes from the CPU backend's emitter table
(:mod:`jitgraph.backends.cpu.emitters`, the shared :mod:`jitgraph.backends.emitter_table`), which casts operands to
NumPy's loop dtypes, so Numba's own promotion rules never decide a result type. The driver's context tells the
table how to spell a float function (``np.exp``) and which int64 results its bounds analysis proved cannot
overflow. Every scalar statement is then wrapped in its exact dtype constructor (``np.float32(...)``).

The construct emitters (:mod:`.ops`, :mod:`.indexing`, :mod:`.regions`) are looked up in a :class:`Table` that the
driver builds (:mod:`.table`); this module imports none of them, so each imports the core and nothing circles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitgraph import config
from jitgraph.backends import emitter_table as shared
from jitgraph.backends.cpu import emitters as cpu_emitters
from jitgraph.backends.cpu.mathlib import VECTOR_MATH
from jitgraph.backends.cpu.scalar import bounds
from jitgraph.backends.cpu.scalar.scope import Scope, is_array
from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.printer import node_names
from jitgraph.ir.types import TensorType

dtype_ctor = shared.np_name  # np.float32, np.bool_: the scalar constructors every statement is wrapped in


def wrap(expr: str, dtype: np.dtype) -> str:
    """``expr`` in ``dtype``'s constructor, unless it already is exactly one such call."""
    ctor = dtype_ctor(dtype)
    if expr.startswith(ctor + "(") and _closing(expr, len(ctor)) == len(expr) - 1:
        return expr
    return f"{ctor}({expr})"


def _closing(text: str, open_at: int) -> int:
    depth = 0
    for k in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return k
    return -1


def cast_text(expr: str, src: np.dtype, dtype: np.dtype) -> str:
    """A scalar ``expr`` of dtype ``src`` as ``dtype`` (NumPy's unsafe casting: integers wrap)."""
    return expr if src == dtype else f"{dtype_ctor(dtype)}({expr})"


def reduction_step(op: str, acc: str, value: str, acc_dtype: np.dtype) -> str:
    """``value`` combined into the accumulator ``acc`` of a driver's reduction loop (loop nests and group sweeps).

    Float ``max``/``min`` go through ``jg_max_step``/``jg_min_step`` (LLVM's NaN-propagating ``llvm.maximum``), which
    LLVM's loop vectoriser reorders by itself, as the row kernels do (:mod:`jitgraph.backends.cpu.reduction_lanes`):
    through ``jg_max_acc``'s two selects the loop stayed scalar, and the float32 Newton ``while`` loop of
    ``benchmarks/floor.py`` (an elementwise update and ``np.max(np.abs(...))`` per step over 10,000 elements) ran
    91 us against NumPy's 65 us; vectorised, 11 us. The values are NumPy's under ``==`` and NaN propagates; only the
    sign of a zero result may differ, as NumPy's own does between its scalar and SIMD paths (see ``helpers``).
    Everything else is the CPU emitters' combine step."""
    if op in ("max", "min") and acc_dtype.kind == "f":
        return f"jg_{op}_step({acc}, {value})"
    return cpu_emitters.reduction_combine(op, acc, value)


@dataclass
class DriverContext(shared.EmitContext):
    """The shared context as the loop driver answers it: float functions as NumPy's scalar ufuncs (Numba compiles
    them inline), and int64 arithmetic plain where the bounds analysis proved it cannot overflow."""

    fits: bool = False
    vector: bool = False
    backend = "loop driver"

    def _vector_math(self, name: str) -> str | None:
        """The vector library's function (``VM_tanh_float32``, bound in the driver's namespace) for an element of an
        array loop nest under ``math="fast"``: as in the fused kernels, so the nest vectorises (a libm call per
        element kept an RNN's tanh 3-5x slower than NumPy's). Scalar statements keep NumPy's scalar functions."""
        key = (name, self.out_dtype.name)
        return f"VM_{name}_{self.out_dtype.name}" if self.vector and key in VECTOR_MATH else None

    def function(self, name: str) -> str:
        return self._vector_math(name) or f"np.{name}"

    def float_power(self, a: str, b: str) -> str:
        vector = self._vector_math("power")
        return f"{vector}({a}, {b})" if vector else f"({a} ** {b})"

    def proven_in_range(self) -> bool:
        return self.fits


Handler = Callable[["Emitter", Node, int], "str | None"]


@dataclass
class Table:
    """The construct emitters: by op name first, then by op kind."""

    by_op: dict[str, Handler] = field(default_factory=dict)
    by_kind: dict[OpKind, Handler] = field(default_factory=dict)

    def lookup(self, node: Node) -> Handler | None:
        return self.by_op.get(node.op) or self.by_kind.get(OPS[node.op].kind)


class Emitter:
    """Writes the driver's source. ``var`` names each emitted value; ``parallel`` collects the loops that became
    ``prange`` and ``serial_reasons`` why the others did not; ``globals`` holds constant arrays passed as trailing
    arguments. The bounds facts (``nonneg``, ``upper``) and the prange state grow and shrink as regions nest."""

    def __init__(self, graph: Graph, options: dict[str, Any], table: Table) -> None:
        self.graph = graph
        self.table = table
        self.names = node_names(graph)
        self.options = options
        self.parallel_choice = config.option(options, "parallel")
        self.parallel_min_trips = int(config.option(options, "parallel_min_trips"))
        self.fast_math = config.option(options, "math") == "fast"
        self.var: dict[Node, str] = {}
        self.results: dict[Node, list[str]] = {}
        # Per region node and result: (outer roots it may alias, "same" | "owned" | "shared"). "same": the result
        # is the outer buffer itself, updated in place; "owned": a buffer the region made; "shared": may alias.
        self.result_roots: dict[Node, list[tuple[frozenset[Node], str]]] = {}
        self.lines: list[str] = []
        self.globals: dict[str, Any] = {}
        self.parallel: list[Node] = []
        self.serial_reasons: dict[Node, str] = {}
        self.scope: Scope = Scope(graph, set())  # replaced by emit_graph for each graph it emits
        self.in_prange = False
        self.loop_depth = 0  # enclosing loop/while regions of the node being emitted
        self.nonneg: set[Node] = set()  # integer scalars proven >= 0 (for the dependence test)
        self.upper: dict[Node, int] = {}  # exclusive upper bounds of integer scalars (induction variables)
        self.magnitude: dict[Node, int] = {}  # exclusive bounds of |value| of region inputs (int64 overflow proofs)
        self.floor: dict[Node, int] = {}  # inclusive lower bounds of integer scalars (a while slot after its loop)
        # (while node, slot) -> (exclusive upper bound, inclusive lower bound) of the slot's value after the loop
        self.after_while: dict[tuple[Node, int], tuple[int | None, int | None]] = {}
        self.prange_flag: str | None = None  # the error flag of the prange body being emitted
        self.flag_used = False  # whether that flag was set anywhere (else its line is removed)
        self.params: list[str] = []
        self.function_name = ""
        # Run-time extents (:mod:`.sizes`): an extent value -> the driver variable that holds it (``n0_1 =
        # xs.shape[1]``); extents not in it are written as literals.
        self.sizes: dict[int, str] = {}

    # ------------------------------------------------------------------ helpers
    def size(self, value: int) -> str:
        """An extent as the driver writes it: the run-time variable holding it, or the literal."""
        return self.sizes.get(int(value), str(int(value)))

    def shape_text(self, shape: Sequence[int]) -> str:
        """A shape tuple for ``np.empty`` and friends, its extents as :meth:`size` writes them."""
        parts = [self.size(s) for s in shape]
        return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"

    def bound(self, node: Node) -> str:
        """A loop bound: a constant that is a run-time extent is read from it (the trip count is an argument)."""
        value = node.attrs.get("value") if node.op == "const" else None
        if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
            return self.size(int(value))
        return self.var[node]

    def vname(self, node: Node) -> str:
        return "v" + self.names[node][1:]

    def write(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def cast(self, node: Node, dtype: np.dtype) -> str:
        expr = self.var[node]
        t = node.tensor_type
        if t.dtype == dtype:
            return expr
        return f"{dtype_ctor(dtype)}({expr})" if t.shape == () else f"{expr}.astype({dtype_ctor(dtype)})"

    def op_text(self, node: Node, operands: Sequence[str]) -> str:
        """The scalar expression of elementwise ``node`` on scalar operand texts, from the shared emitter table
        (uncast: the caller wraps it in the node's dtype). An array node's expression is one element of a loop
        nest: under ``math="fast"`` its transcendental functions come from the vector library."""
        emitter = cpu_emitters.EMITTERS.get(node.op)
        if emitter is None:
            raise UnsupportedError(f"the loop code generator has no emitter for {node.op!r}",
                                   hint="the graph runs on the eager backend instead")
        t = node.tensor_type
        fits = t.shape == () and t.dtype == np.dtype(np.int64) and bounds.fits_int64(node, self.nonneg, self.upper,
                                                                                        self.magnitude)
        vector = self.fast_math and t.shape != ()
        ctx = DriverContext(node, tuple(i.tensor_type.dtype for i in node.inputs), t.dtype, fits, vector)
        return emitter(list(operands), ctx)

    # ------------------------------------------------------------------ graphs
    def emit_graph(self, graph: Graph, indent: int, owned_inputs: set[Node]) -> tuple[list[str], Scope]:
        """Emit ``graph``'s nodes (inputs already named in ``var``); return its outputs' expressions and the scope
        its buffers were tracked in."""
        outer, self.scope = self.scope, Scope(graph, owned_inputs)
        for node in graph.nodes:
            if node.op != "input":
                self.emit_node(node, indent)
        outputs = [self.var[o] for o in graph.outputs]
        scope, self.scope = self.scope, outer
        return outputs, scope

    def emit_node(self, node: Node, indent: int) -> None:
        handler = self.table.lookup(node)
        if handler is None:
            raise UnsupportedError(f"the loop code generator has no emitter for {node.op!r}",
                                   hint="the graph runs on the eager backend instead")
        expr = handler(self, node, indent)
        if expr is not None:
            name = self.vname(node)
            t = node.type
            if isinstance(t, TensorType) and t.shape == () and node.op != "const":
                expr = wrap(expr, t.dtype)
            self.write(indent, f"{name} = {expr}")
            self.var[node] = name
            if is_array(node) and node not in self.scope.roots:
                self.scope.fresh(node, owned=True)
