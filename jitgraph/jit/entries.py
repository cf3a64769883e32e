"""What the cache of a compiled function holds: one :class:`Entry` per guard set and the hit/miss counters
(:class:`CacheInfo`).

An entry keeps the stage objects it was made from (``Traced`` -> ``Lowered`` -> ``Compiled``), so inspection
reads the very graph, pass report and backend artifact that the dispatch loop runs, not a second compile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from jitgraph.backends.base import CompiledGraph
from jitgraph.ir.graph import Graph
from jitgraph.jit.breaks import BreakReason
from jitgraph.jit.effects import FAST, raise_policy, runs_fast
from jitgraph.jit.stages import Compiled, Lowered, Traced, alias_texts
from jitgraph.tracer.guards import GuardSet

# What ``Entry.go`` is made of: setting any of them recomputes it.
_GO_PARTS = frozenset({"fast", "compiled", "build", "stage"})


@dataclass
class Entry:
    """One cache entry, made from the :class:`Traced` of its first call: found by ``key`` and ``check`` (the
    compiled guards, None when the key says it all) and the aliasing pattern ``alias``. ``mode`` is "graph" (run
    ``compiled``, rebuild the result with ``build``) or "eager" (call the user's function; ``break_reason`` says
    why)."""

    traced: Traced
    mode: str = "eager"
    lowered: Lowered | None = None
    stage: Compiled | None = None
    break_reason: BreakReason | None = None
    times: dict[str, float] = field(default_factory=dict)
    # The dispatch loop reads these on every call: plain attributes, copied from the stages.
    key: tuple = field(init=False)
    check: Any = field(init=False)
    alias: tuple | None = field(init=False)
    compiled: CompiledGraph | None = None
    build: Any = None
    # ``fast``: the dispatch loop runs ``compiled`` directly (a graph entry whose raise needs no care, effects.py);
    # otherwise ``on_raise`` says what a raise needs (effects.RERUN or effects.SNAPSHOT of ``mutated`` leaves).
    fast: bool = False
    on_raise: str = FAST
    mutated: tuple[int, ...] = ()
    # The generated function that recognises and runs a call of this entry (dispatch.py; None: the generic path
    # only), and the top-level positions where the traced call had a plain int (unreachable once one is dynamic).
    runner: Any = None
    plain_ints: tuple[int | str, ...] = ()
    # A size variant (dynamic_policy.py): the same graph as another entry at other sizes of dynamic dimensions; it
    # does not count towards ``cache_limit``.
    variant: bool = False
    # Symbolic sizes (symbolic_sizes.py): the entry's trace with its dynamic dimensions as symbols, which serves
    # later sizes without tracing (``symbolic``); on such an *instance*, the entry whose symbolic trace it is.
    symbolic: Any = None
    instance_of: Entry | None = None
    # Measured tier-down (tiering.py): the probe timing the entry's first calls (``fast`` stays False meanwhile),
    # and its decision in words once taken ("measured: compiled 10.8 us, eager 3.1 us per call ...").
    probe: Any = None
    measured: str | None = None
    # Replaced by an eager entry that takes every call it would (hot_recompiles.py): out of the dispatch table and
    # the runners, kept in ``entries`` for inspection.
    retired: bool = False
    # ``compiled`` while the entry runs it directly with its published builder (``fast``, and ``build`` the stage's),
    # else None: what a dispatch runner's hit checks, one read instead of three (``__setattr__`` keeps it).
    go: CompiledGraph | None = field(init=False, default=None)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name in _GO_PARTS:
            stage = self.stage
            ready = self.fast and stage is not None and self.build is stage.build
            object.__setattr__(self, "go", self.compiled if ready else None)

    def __post_init__(self) -> None:
        self.key, self.check, self.alias = self.traced.key, self.traced.check, self.traced.alias
        self.break_reason = self.break_reason or self.traced.break_reason
        self.times.setdefault("trace", self.traced.seconds)

    def use(self, lowered: Lowered, stage: Compiled | None) -> None:
        """Record the lowering (and the backend's artifact, when it compiled): the entry now runs the graph."""
        self.lowered, self.stage = lowered, stage
        self.times.update(lowered.times)
        if stage is not None:
            self.times["backend"] = stage.seconds
            self.compiled, self.build, self.mode = stage.artifact, stage.build, "graph"
            self.mutated = tuple(i for i, _ in lowered.graph.mutations)
            self.on_raise = raise_policy(lowered.graph, self.traced.result.extra.get("may_raise"),
                                         bool(self.traced.object_effects))
            self.fast = runs_fast(self.on_raise)

    def demote(self, reason: BreakReason) -> None:
        """Run eagerly from now on (``fast`` first: a thread already past the check still runs the graph)."""
        self.fast = False
        self.mode, self.break_reason = "eager", reason

    @property
    def guards(self) -> GuardSet:
        return self.traced.guards

    @property
    def facts(self) -> dict[str, Any]:
        return self.traced.facts

    @property
    def leaf_names(self) -> list[str]:
        return self.traced.leaf_names

    @property
    def device(self) -> bool:
        """Some leaf is a GPU array: no eager fallback (NumPy cannot run on device memory)."""
        return bool(self.traced.device)

    @property
    def traced_graph(self) -> Graph | None:
        """The graph as traced (source locations, no passes run), when the trace captured one."""
        return self.traced.graph

    @property
    def graph(self) -> Graph | None:
        """The pipeline's output graph that the backend compiled (None when lowering failed or never ran)."""
        return self.lowered.graph if self.lowered is not None and self.stage is not None else None

    @property
    def pass_report(self) -> Any:
        return self.lowered.report if self.lowered is not None else None

    @property
    def guard_texts(self) -> list[str]:
        return self.traced.guard_texts

    def alias_texts_for(self, alias: tuple | None) -> list[str]:
        """Another aliasing pattern of this entry's leaves in words (why a call with the same key missed)."""
        return alias_texts(alias, self.leaf_names, self.traced.n_arrays)


_SHAPE = re.compile(r"(: \w+)\[([\d,]*)\]")


def _rank(match: re.Match[str]) -> str:
    dims = match.group(2)
    return f"{match.group(1)}[rank {dims.count(',') + 1 if dims else 0}]"


_CONST_INT = re.compile(r"const\((\d+)\)")


def sizes_aside(graph: Graph | None) -> str | None:
    """The traced graph's text with every value's shape replaced by its rank: two calls that differ only in array
    sizes give the same text, so a backend failure on one is remembered for the other (a failing graph is not
    compiled again for each new size). Integer constants equal to an input's extent (2 or more) are sizes too: the
    bound of ``for t in range(xs.shape[0])`` (the loop driver reads it at run time, backends/cpu/scalar/sizes.py).
    Attributes (reshape targets, slice bounds) stay: they may matter."""
    if graph is None:
        return None
    extents = {str(s) for n in graph.inputs for s in getattr(n.type, "shape", ()) if s >= 2}
    text = _SHAPE.sub(_rank, str(graph))
    return _CONST_INT.sub(lambda m: "const(size)" if m.group(1) in extents else m.group(0), text) if extents else text


def same_but_sizes(a: Graph | None, b: Graph | None) -> bool:
    """Whether two traced graphs are the same apart from sizes (a *size variant*, dynamic_policy.py): the same text
    with shapes replaced by ranks, and every integer constant either equal in both or, pairwise, the extents of one
    input dimension in each (the bound of ``for t in range(xs.shape[0])``: 5 at length 5, 9 at length 9). Pairwise,
    not by value: a ``** 2`` stays a 2 when an input happens to have an extent of 2. Only the variant-or-recompile
    decision reads this: a variant is traced at its own sizes, so its graph is right whatever this says."""
    if a is None or b is None:
        return a is None and b is None
    text_a, text_b = _SHAPE.sub(_rank, str(a)), _SHAPE.sub(_rank, str(b))
    if _CONST_INT.sub("const(int)", text_a) != _CONST_INT.sub("const(int)", text_b):
        return False
    extents = {(x, y) for na, nb in zip(a.inputs, b.inputs)
               for x, y in zip(getattr(na.type, "shape", ()), getattr(nb.type, "shape", ())) if x >= 2 and y >= 2}
    return all(x == y or (int(x), int(y)) in extents
               for x, y in zip(_CONST_INT.findall(text_a), _CONST_INT.findall(text_b)))


@dataclass
class CacheInfo:
    """A snapshot of a compiled function's counters (``CompiledFunction.cache_info()``)."""

    hits: int = 0
    misses: int = 0
    recompiles: int = 0
    fallbacks: int = 0
    entries: int = 0  # traced entries, size variants included (instances are not traced: size_instances)
    size_variants: int = 0  # entries traced for new sizes of dynamic dimensions (not recompiles)
    size_instances: int = 0  # entries that instantiate a symbolic entry at new sizes, with no trace (not recompiles)
    tiered_down: int = 0  # graph entries measured slower than the plain function: they run it (tiering.py)
