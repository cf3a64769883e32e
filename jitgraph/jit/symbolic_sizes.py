"""One trace for every size of the dynamic dimensions: an entry's symbolic form and its instances.

When a recompile makes dimensions dynamic (dynamic_policy.py), the call is traced once more with those dimensions
as symbols (``f32[s0,784]``, ir/symbols.py). That trace is kept as the entry's :class:`SymbolicForm` when

* it is one whole graph (no break, no split, no eager call inside), and
* instantiated at the sizes of every entry it claims to cover (this call's, and the earlier entries' that differ
  from it only in those dimensions), it is *the same graph* their own traces recorded (``ir.instantiate.same_graph``):
  a check, at two sizes or more, that nothing in the trace depended on the size where the symbols were silent.

A later call that differs from the entry only in those sizes, each at least 2, with equal sizes where the trace
gave dimensions one symbol (duck sizing), and passes the entry's guards, is then served without tracing: the
symbolic graph is instantiated at its sizes (a copy with the symbols replaced) and lowered and compiled as a trace
would be (the passes and the backend's code generation run, milliseconds; the fused kernels, which take their
extents as arguments, come from the kernel cache). Such an *instance* is its own cache entry (its own key, runner
and statistics) but no recompile and no new trace: ``cache_info().size_instances`` counts them, ``entries`` does
not.

Arguments' dimensions are the symbols. An array read from an object (``self.x``, stored by a layer's forward at the
batch size) keeps its exact shape, unless the trace with symbols for the arguments alone fails: a second attempt
then gives each of its dimensions that equals a symbol's size that symbol, guarded to equal it
(``TraceContext._outside_symbols``).

Everything the trace could not do with a symbol (``x.reshape(n * 2)``, ``if x.shape[0] > 100``, ``x[:n // 2]``)
raised or produced another graph, and left the dimension static: the calls are then traced per size as before
(size variants), so the worst case is what it was without symbols. Sizes flow into the graph as constants
(``const(s0)``, and ``const(s0-1)`` for linear arithmetic on them, ``ir/symbols.SymExpr``).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

from jitgraph.ir.graph import Graph
from jitgraph.ir.instantiate import expression_dims, instantiate, same_graph, symbols_of
from jitgraph.ir.symbols import Sym, SymExpr
from jitgraph.tracer.trace import TraceResult, trace
from jitgraph.tracer.values import ViewStep

log = logging.getLogger("jitgraph.recompiles")

MAX_INSTANCES = 64
"""Instances kept per function. Past it, new sizes are traced as size variants (with their own limit): a function
whose sizes never repeat keeps a bounded cache."""


@dataclass(frozen=True)
class SymbolicDim:
    """One dimension traced as a symbol: ``xs.shape[0]`` is ``s0``."""

    name: str  # the argument, as keys.describe and the tracer's sources name it (``xs``, ``batch['x']``)
    axis: int
    symbol: str

    @property
    def label(self) -> str:
        return f"{self.name}.shape[{self.axis}]"


@dataclass
class SymbolicForm:
    """An entry's trace with symbolic sizes (module docstring)."""

    result: TraceResult  # one whole graph (``_refusal`` says None)
    dims: tuple[SymbolicDim, ...]
    alias: tuple | None  # the traced call's aliasing of its arrays: the graph holds for it only

    def __post_init__(self) -> None:
        self.check = self.result.guards.compile()  # the guards of the symbolic trace (never on sizes)
        self.expressions = expression_dims(self.graph)  # ``s0-2``: at least 2 at an instance's sizes

    @property
    def graph(self) -> Graph:
        assert self.result.graph is not None
        return self.result.graph

    @property
    def labels(self) -> frozenset[str]:
        return frozenset(d.label for d in self.dims)

    def describe(self) -> str:
        """``xs.shape[0] = s0, ys.shape[0] = s0``."""
        return ", ".join(f"{d.label} = {d.symbol}" for d in self.dims)

    def sizes_of(self, facts: dict[str, Any]) -> dict[str, int] | None:
        """Each symbol's size in a call with these facts (keys.describe), or None when the call is not one of this
        form's: a size below 2, or dimensions of one symbol with different sizes."""
        sizes: dict[str, int] = {}
        for d in self.dims:
            shape = facts.get(f"{d.name}.shape")
            if type(shape) is not tuple or len(shape) <= d.axis or shape[d.axis] < 2:
                return None
            if sizes.setdefault(d.symbol, shape[d.axis]) != shape[d.axis]:
                return None  # dimensions that share a symbol differ now (the trace relied on their equality)
        if any(e.value(sizes[e.sym.name]) < 2 for e in self.expressions):
            return None  # ``x[1:-1]`` of 3 elements has 1: it broadcasts, so another graph (traced on its own)
        return sizes

    def instance(self, sizes: dict[str, int]) -> TraceResult:
        """The trace result a trace at ``sizes`` would give: the symbolic graph instantiated (no tracing)."""
        return dataclasses.replace(self.result, graph=instantiate(self.graph, sizes), extra=dict(self.result.extra),
                                   seconds=0.0)


def symbolic_dims(labels: frozenset[str] | set[str], facts: dict[str, Any]) -> tuple[SymbolicDim, ...]:
    """The dimensions among ``labels`` (``xs.shape[0]``) that this call can trace as symbols: of arrays that are C
    or F ordered (a strided view's strides are not a function of its shape), with sizes of at least 2. Equal sizes
    share a symbol (duck sizing), numbered in argument order."""
    names: dict[int, str] = {}
    dims = []
    for label in sorted(labels, key=lambda lb: (_order(lb, facts), lb)):
        name, _, rest = label.rpartition(".shape[")
        shape = facts.get(f"{name}.shape")
        if not rest.endswith("]") or not rest[:-1].isdigit() or type(shape) is not tuple:
            continue
        axis = int(rest[:-1])
        if axis >= len(shape) or shape[axis] < 2 or facts.get(f"{name}.layout") not in ("C", "F") or \
                facts.get(f"{name}.device"):
            continue
        symbol = names.setdefault(shape[axis], f"s{len(names)}")
        dims.append(SymbolicDim(name, axis, symbol))
    return tuple(dims)


def _order(label: str, facts: dict[str, Any]) -> int:
    keys = list(facts)
    name = label.rpartition(".shape[")[0]
    key = f"{name}.shape"
    return keys.index(key) if key in keys else len(keys)


def trace_symbolic(fn: Any, args: tuple, kwargs: dict[str, Any], facts: dict[str, Any], alias: tuple | None,
                   dims: tuple[SymbolicDim, ...], checks: list[tuple[Graph, dict[str, Any]]]) -> SymbolicForm | None:
    """Trace the call (whose arrays alias as ``alias``) with ``dims`` as symbols; the form when it is one whole graph
    that, instantiated at the sizes of each ``(graph, facts)`` in ``checks`` (traces of the same function at other
    sizes with the same aliasing, this call's first), is the graph traced there. None otherwise (the reason is
    logged at DEBUG)."""
    if not dims:
        return None
    by_name: dict[str, dict[int, Sym]] = {}
    for d in dims:
        shape = facts[f"{d.name}.shape"]
        by_name.setdefault(d.name, {})[d.axis] = Sym(d.symbol, shape[d.axis])
    for duck_outside in (False, True):  # a layer's backward reads ``self.x`` its forward stored: try that too
        form = _attempt(fn, args, kwargs, by_name, alias, dims, checks, duck_outside)
        if form is not None:
            return form
    return None


def _attempt(fn: Any, args: tuple, kwargs: dict[str, Any], by_name: dict[str, dict[int, Sym]], alias: tuple | None,
             dims: tuple[SymbolicDim, ...], checks: list[tuple[Graph, dict[str, Any]]], duck_outside: bool
             ) -> SymbolicForm | None:
    try:  # anything the trace needed a size's value for raises somewhere: the dimensions stay static
        result = trace(fn, args, kwargs, symbolic_dims=by_name, duck_outside=duck_outside)
    except Exception as exc:  # noqa: BLE001
        log.debug("jitgraph: symbolic trace of %s failed (%s: %s)", getattr(fn, "__qualname__", fn),
                  type(exc).__name__, exc)
        return None
    why = _refusal(result)
    form = SymbolicForm(result, dims, alias) if why is None else None
    if form is not None:
        for graph, their_facts in checks:
            sizes = form.sizes_of(their_facts)
            if sizes is None:
                continue
            if not same_graph(instantiate(form.graph, sizes), graph):
                why = f"instantiated at {sizes} it is not the graph traced at those sizes"
                break
    if why is not None:
        log.debug("jitgraph: no symbolic sizes for %s: %s", getattr(fn, "__qualname__", fn), why)
        return None
    return form


def _refusal(result: TraceResult) -> str | None:
    if result.breaks is not None:
        return f"the trace broke ({result.breaks})"
    if result.graph is None or "split" in result.extra or "pending" in result.extra:
        return "the trace is not one graph"
    if not symbols_of(result.graph):
        return "no symbol reached the graph"
    if _holds_symbol((result.out_spec, result.extra.get("side_effects"))):
        return "a symbol reached the return value or a stored value outside the graph"
    return None


def _holds_symbol(value: Any, depth: int = 0) -> bool:
    """Whether a symbol sits in an output spec (nested tuples and lists, and the attributes of the view steps of a
    returned view: ``x.reshape(B, T, 2, 4)``): only the graph is instantiated. A spec too deep to search is taken
    to hold one."""
    if type(value) is Sym or type(value) is SymExpr:
        return True
    if depth >= 32:
        return isinstance(value, tuple | list | dict | ViewStep)
    if isinstance(value, ViewStep):
        return _holds_symbol(value.attrs, depth + 1)
    if isinstance(value, tuple | list):
        return any(_holds_symbol(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_holds_symbol(v, depth + 1) for v in value.values())
    return False
