"""What a compiled function tells about itself: its counters, recompile reasons, explain, graphs and stages (a mixin
of :class:`~jitgraph.jit.function.CompiledFunction`, reading its entries and the counters it keeps under its lock).
"""

from __future__ import annotations

import collections
import itertools
import threading
from typing import Any

from jitgraph.inspect.result import ExplainResult
from jitgraph.ir.graph import Graph
from jitgraph.jit import eager_mode, tiering
from jitgraph.jit.breaks import BreakReason
from jitgraph.jit.entries import CacheInfo, Entry
from jitgraph.jit.explain_builder import build_explain
from jitgraph.jit.stages import Compiled
from jitgraph.jit.threads import tally
from jitgraph.tracer.keys import alias_pattern, diff, make_key


class Inspection:
    """Mixin: the inspection API of a compiled function (module docstring)."""

    entries: list[Entry]
    _lock: threading.RLock
    _hits: itertools.count
    _fallbacks: itertools.count
    _eager_calls: itertools.count
    func: Any  # the partial's target: the call function (call_path.py)
    _misses: int
    _recompiles: int
    _variants: int
    _reasons: list[str]
    _sites: list[str]
    _fn: Any
    _failing: collections.Counter[str]
    _table: dict[tuple, tuple[Entry, ...]]

    def _counts(self) -> tuple[int, int]:
        """Hits and fallbacks so far; a call eager mode ran is an eager entry's hit and a fallback (eager_mode.py)."""
        skipped = eager_mode.skipped(self._eager_calls)
        return tally(self._hits) + skipped, tally(self._fallbacks) + skipped

    def cache_info(self) -> CacheInfo:
        with self._lock:
            hits, fallbacks = self._counts()
            return CacheInfo(hits=hits, misses=self._misses, recompiles=self._recompiles,
                             fallbacks=fallbacks, size_variants=self._variants,
                             entries=sum(e.instance_of is None for e in self.entries),
                             size_instances=sum(e.instance_of is not None for e in self.entries),
                             tiered_down=tiering.tiered_down(self.entries))

    def recompile_reasons(self, with_site: bool = False) -> list[str]:
        """Why each recompile happened (``x.shape[0]: 256 -> 128``); ``with_site`` appends `` @ file:line``."""
        with self._lock:
            if with_site:
                return [f"{r} @ {s}" for r, s in zip(self._reasons, self._sites)]
            return list(self._reasons)

    def explain(self, output: Any = None) -> ExplainResult:
        """An ExplainResult over every cache entry so far (recompiles and their reasons included); ``.show()``
        renders it."""
        return build_explain(self.entries, function=self._fn, recompile_reasons=self.recompile_reasons(True),
                             fallbacks=self.cache_info().fallbacks, output=output,
                             eager_mode=eager_mode.describe() if hasattr(self.func, "checked") else None)

    def break_reasons(self) -> list[BreakReason]:
        return [e.break_reason for e in self.entries if e.mode == "eager" and e.break_reason is not None]

    def graphs(self) -> list[Graph]:
        return [e.graph for e in self.entries if e.graph is not None]

    def stages(self) -> list[Compiled]:
        """The Compiled stage of every entry that runs a graph, in cache order."""
        return [e.stage for e in self.entries if e.stage is not None and e.mode == "graph"]

    def _why_missed(self, key: tuple, facts: dict[str, Any], args: tuple, kwargs: dict[str, Any]) -> str:
        same_key = self._table.get(key)
        if same_key:
            entry = same_key[-1]
            failed = entry.guards.first_failure(args, kwargs)
            if failed is not None:
                label = failed.text.split(" ")[0].rstrip(":")
                self._failing[label] += 1
                return f"guard failed: {failed.text} (now {entry.guards.describe_now(failed, args, kwargs)})"
            self._failing["aliasing"] += 1
            now = entry.alias_texts_for(alias_pattern(self._leaves_of(entry, args, kwargs)))
            return f"aliasing: {', '.join(entry.alias_texts_for(entry.alias))} -> {', '.join(now)}"
        changes = diff(self.entries[-1].facts, facts)
        for change in changes:
            self._failing[change.split(":")[0].split("[")[0] if ".shape[" in change else change.split(":")[0]] += 1
        return "; ".join(changes) if changes else "argument structure changed"

    @staticmethod
    def _leaves_of(entry: Entry, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        make_key(args, kwargs, leaves := [])
        extra = entry.check(args, kwargs) if entry.check is not None else []
        return leaves + (extra or [])
