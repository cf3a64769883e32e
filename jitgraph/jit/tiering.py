"""Measured tier-down: a graph entry that is not faster than the user's own function runs that function instead.

Why: "never slower than eager" (issue 21). At small sizes a call's fixed costs (checking the arguments, launching
kernels, building the result) can outweigh anything the compiled graph saves, and no cost model predicts that
exactly on every machine. The eager function is the reference, so running it is always exact: the cheapest
honest answer is to time both on the calls the user makes and keep the faster.

How: when a graph entry is published (``CompiledFunction._publish``, after its first run, where kernels compile)
it gets a :class:`Probe` and ``fast=False``, so every call of it goes to ``CompiledFunction._run_slow``, which
hands it to the probe. The probe alternates between the compiled graph and the plain function in blocks of
:data:`BLOCK` calls, timing each call with ``perf_counter`` but the first :data:`DISCARD` of a block: those pay for
the switch (worker threads the other side left spinning -- OpenBLAS's after a matrix product -- compete with the
next parallel kernel for milliseconds; caches hold the other side's data), which a program calling one of them
again and again does not pay; alternating call by call charged it to every sample. What is timed is what a call would cost either way: for an entry whose graph
runs on the fast path (``effects.runs_fast``), a runner of its own (dispatch.build_runner over a copy of the entry)
that runs the fast path as published (the inline driver call, a BLAS program that checks its own arrays) after
the entry's checks, against the user's function called alone: once demoted, a function whose every call runs
eagerly skips the checks (eager mode, eager_mode.py), so what the graph competes with is the function itself.
(Timing the eager side with the layout checks a demoted entry used to make on every call kept graphs that were
10-20% slower than the function: the checks hid the difference.) Timing the slow path's ``compiled(leaves)``
instead made a BLAS program look microseconds slower than it is. An entry that is never
fast (it mutates arguments and may raise: effects.py) runs the slow path either way, with its ``on_raise`` care:
its runner's checks and that slow path are timed (timing the slow path alone left out ~4 us of checks over 15
arrays and three dicts, and kept a train step 20% slower than the function). After :data:`PROBE_RUNS` timed runs of each the entry is decided: demoted (``Entry.demote``, the reason giving both
times) when eager wins by :data:`MARGIN` on the median, on the minimum and in most sample pairs
(:func:`eager_wins`: a graph that wins is not tiered down by a busy machine; where only the medians say so, the
probe goes on up to :data:`MAX_RUNS` runs each before it keeps the graph), else ``fast`` goes back
to what ``on_raise`` allows. A graph clearly faster after :data:`EARLY_RUNS` runs each (a block; every sample
:data:`EARLY_FACTOR` times faster) is kept at once, so a large call whose graph is much faster pays for few eager
runs; a demotion always waits for :data:`PROBE_RUNS` (one block can fall in a stall of a loaded machine: a block of
matrix products that each waited 12 ms for OpenBLAS's threads once demoted a 40 us product). The decision is per entry: entries are per argument sizes and layouts, so a later, larger
call gets its own entry and is measured on its own (once every entry of the function runs eagerly, the function is
in eager mode, eager_mode.py, and checks one call in ``CHECK_EVERY``: such a call compiles within that many).

Not measured (``why_not`` says why): tier-down switched off (``tier_down=False``, or ``JITGRAPH_TIER_DOWN=0`` when
the option is not given); ``fullgraph=True`` (the user asked for the graph, never eager NumPy); device arrays (NumPy
cannot run on them); a backend other than ``cpu`` (``cuda`` with host arrays is the user's explicit choice of the
GPU, and ``eager`` is the graph interpreter, asked for to debug graphs); functions whose graph has no eager twin
(``GradFunction``: its ``_fn`` computes a gradient the slow way, it sets ``tiers_down = False``).

A graph resumed after data-dependent breaks (jit/resume.py) is measured like any other, but a call that traced and
compiled a new part of it (its ``retraces`` grew) is not timed. Its calls take different paths with different
data; the decision is made on the calls the user made, like every other (``early_none``, a function whose graph
and resumed part took 8 us against the function's 4, stayed compiled before).

Threads: the sample lists and counters may race (a lost sample only lengthens the probe); the decision is taken
once, by the thread that draws the first ticket of ``decided`` (``itertools.count``: one C call, atomic under the
GIL). Probe runs of the eager function do not count as fallbacks (``cache_info().fallbacks``): the entry is still a
graph entry; once demoted, its calls do.
"""

from __future__ import annotations

import copy
import itertools
import logging
import statistics
import time
from collections.abc import Callable
from typing import Any

from jitgraph.config import env_flag, option
from jitgraph.jit.breaks import BreakReason
from jitgraph.jit.dispatch import MISS, build_runner
from jitgraph.jit.effects import runs_fast
from jitgraph.jit.entries import Entry

log_perf = logging.getLogger("jitgraph.perf")

BLOCK = 5  # calls of one side before the probe switches to the other
DISCARD = 2  # leading calls of a block not timed: the switch's cost (module docstring)
PROBE_RUNS = 3 * (BLOCK - DISCARD)  # timed runs of each side before the decision
EARLY_RUNS = BLOCK - DISCARD  # timed runs of each side (a block each) after which a clear win of the graph is kept
EARLY_FACTOR = 2.0  # "clear": every sample of one side at least this many times every sample of the other
# Demote only where eager takes less than MARGIN x the compiled time (median, minimum, ...). At 0.95 a graph
# measured 4.5% slower stayed compiled, and ran 8-10% slower than the function in steady state (one_hot:
# 2.2 vs 2.1 us in the probe, 3.4 vs 3.1 us in benchmarks/realworld.py); the pairs still keep a tie compiled.
MARGIN = 0.98
CONSISTENT = 0.7  # ... and in this share of the (eager, compiled) sample pairs
MAX_RUNS = 2 * PROBE_RUNS  # where the medians say eager but the pairs are not clear: measured up to this, then kept
PROBE_CALLS = 2 * BLOCK * -(-MAX_RUNS // (BLOCK - DISCARD))  # calls after the first run until every entry is decided


def eager_wins(compiled: list[float], eager: list[float]) -> bool:
    """Whether the samples say eager is faster by :data:`MARGIN`: on the median, on the minimum, and in at least
    :data:`CONSISTENT` of all (eager, compiled) pairs. The pairs are what a stalled machine cannot fake: when every
    run of both sides waits for the scheduler (milliseconds where the work is microseconds), the medians and minimums
    fall by chance on either side, and the pairs come out near even."""
    if not _medians_say_eager(compiled, eager) or min(eager) >= MARGIN * min(compiled):
        return False
    won = sum(1 for e in eager for c in compiled if e < MARGIN * c)
    return won >= CONSISTENT * len(eager) * len(compiled)


def _medians_say_eager(compiled: list[float], eager: list[float]) -> bool:
    return statistics.median(eager) < MARGIN * statistics.median(compiled)


def enabled(options: dict[str, Any]) -> bool:
    """Whether a function compiled with ``options`` measures its graph entries (the option wins over the env)."""
    chosen = option(options, "tier_down")
    return env_flag("JITGRAPH_TIER_DOWN") if chosen is None else bool(chosen)


def why_not(owner: Any, entry: Entry) -> str | None:
    """Why ``entry`` of the compiled function ``owner`` is not measured (None: it is)."""
    if entry.mode != "graph" or entry.compiled is None:
        return "not a graph entry"
    if not getattr(owner, "tiers_down", True):
        return "its graph has no eager twin"
    if owner.fullgraph:
        return "fullgraph=True"
    if not enabled(owner.options):
        return "tier-down is off"
    if entry.device:
        return "device arrays"
    if entry.traced.backend != "cpu":
        return f"backend {entry.traced.backend!r}"
    return None


def start(owner: Any, entry: Entry, index: int) -> None:
    """Give a graph entry about to be published its probe (and ``fast=False``) where it is measured."""
    if why_not(owner, entry) is not None:
        return
    code = getattr(owner.fn, "__code__", None)  # a demotion points at the function's definition
    probe = Probe(owner.name, index, getattr(code, "co_filename", None), getattr(code, "co_firstlineno", None))
    probe.on_demote = getattr(owner, "_measured_eager", None)
    probe.graph_run = _runner(entry, owner.name, index, owner._run_slow, fast=entry.fast)
    probe.eager_run = owner.fn
    if probe.on_demote is not None:  # built now: the traced call's arguments are released once it is published
        probe.demoted = owner._build_runner(entry, index, every_call=True)
    entry.probe = probe
    entry.fast = False


def _runner(entry: Entry, name: str, index: int, slow: Callable[..., Any], fast: bool) -> Any:
    """A dispatch runner over a copy of ``entry`` as it runs once measured, with the entry's checks (its graph side
    as a call pays it): on the fast path, or (``fast`` False: the entry mutates arguments and may raise) ending in
    ``slow``, the owner's slow path, which runs the copy's graph with its effects care (the copy has no probe).
    None where the entry has no runner (the generic path)."""
    twin = copy.copy(entry)
    twin.fast, twin.probe = fast, None
    runner, _ = build_runner(twin, f"{name} (measured)", index, itertools.count(), slow)
    return runner


class Probe:
    """The measurement of one entry's first calls (module docstring)."""

    def __init__(self, name: str, index: int, filename: str | None = None, lineno: int | None = None) -> None:
        self.name, self.index, self.where = name, index, (filename, lineno)
        self.calls = itertools.count()
        self.decided = itertools.count()
        self.compiled: list[float] = []
        self.eager: list[float] = []
        self.graph_run: Any = None  # the runners timed: the entry's checks and its graph (module docstring)
        # The eager side: the user's function itself, called as the user calls it. (Through a wrapper taking the
        # runners' ``(args, kwargs)``, its frame and the ``*``/``**`` unpacking added ~0.3 us to a 2 us function:
        # one_hot measured 2.1 against 2.0 us and stayed compiled, 1.97 against 1.63 us in steady state.) Once
        # demoted, a call where every call runs eagerly costs that and ~0.1 us (eager mode, eager_mode.py); with
        # graph entries also taking calls, a demoted call still checks the layout (~0.3-0.6 us), but that graph
        # entry's own checks are no cheaper.
        self.eager_run: Callable[..., Any] | None = None
        # The owner's hook on a demotion, and the runner it then gives the entry (checking the layout alone).
        self.on_demote: Callable[[Entry, Any], None] | None = None
        self.demoted: Any = None

    def run(self, entry: Entry, graph: Callable[[], Any], eager: Callable[[], Any], user_args: tuple,
            user_kwargs: dict[str, Any]) -> Any:
        """One call of ``entry`` while it is measured: ``graph()`` runs the compiled graph (the slow path with its
        effects care), ``eager()`` the user's function; in alternate blocks, timed (through the runners, where the
        entry is on the fast path)."""
        k = next(self.calls)
        if k >= PROBE_CALLS:  # samples lost to raising calls or racing threads: decide on those there are
            self._maybe_decide(entry, final=True)
            return graph()
        block, position = divmod(k, BLOCK)
        use_eager = block % 2 == 1
        runner = self.eager_run if use_eager else self.graph_run
        traced = getattr(entry.compiled, "retraces", 0)  # a graph resumed after a data-dependent break
        t = time.perf_counter()
        if runner is None:
            result = eager() if use_eager else graph()
        elif use_eager:
            result = runner(*user_args, **user_kwargs) if user_kwargs else runner(*user_args)
        else:
            result = runner(user_args, user_kwargs)
        elapsed = time.perf_counter() - t
        if result is MISS:  # a guard read a global another thread changed meanwhile: not timed
            return eager() if use_eager else graph()
        if getattr(entry.compiled, "retraces", 0) != traced:  # it traced and compiled a new part: not timed
            return result
        if position >= DISCARD and entry.mode == "graph":
            (self.eager if use_eager else self.compiled).append(elapsed)
            self._maybe_decide(entry)
        return result

    def _maybe_decide(self, entry: Entry, final: bool = False) -> None:
        c, e = list(self.compiled), list(self.eager)
        n = min(len(c), len(e))
        if n >= PROBE_RUNS or (final and n):
            demote = eager_wins(c, e)
            if not demote and n < MAX_RUNS and not final and _medians_say_eager(c, e):
                return  # not clear on a busy machine: more samples
        elif n >= EARLY_RUNS and max(c) * EARLY_FACTOR <= min(e):
            demote = False  # (never demoted this early: one block each can be one stall of the machine's)
        elif final:
            demote = False  # no sample of one side at all: the graph, as without measuring
        else:
            return
        if next(self.decided) == 0:
            self._decide(entry, demote, c, e)

    def _decide(self, entry: Entry, demote: bool, compiled: list[float], eager: list[float]) -> None:
        if entry.mode != "graph":  # demoted meanwhile (the backend failed on a run): nothing to restore
            entry.probe = None
            return
        if not compiled or not eager:
            entry.fast = runs_fast(entry.on_raise)
            entry.probe = None
            return
        c, e = statistics.median(compiled), statistics.median(eager)
        counts = f"{len(compiled)}+{len(eager)} calls"
        if demote:
            text = (f"measured: compiled {c * 1e6:.1f} us, eager {e * 1e6:.1f} us per call over {counts}; "
                    "runs eagerly (tier_down=False keeps the graph)")
            entry.measured = text
            entry.demote(BreakReason(text, *self.where))
            if self.on_demote is not None:
                entry.probe = None
                self.on_demote(entry, self.demoted)
        else:
            text = f"measured: compiled {c * 1e6:.1f} us, eager {e * 1e6:.1f} us per call over {counts}; runs compiled"
            entry.measured = text
            entry.fast = runs_fast(entry.on_raise)
            if entry.mode != "graph":  # a failed run demoted it meanwhile (CompiledFunction._demote)
                entry.fast = False
        entry.probe = None
        log_perf.info("jitgraph: %s entry %d: %s", self.name, self.index, text)


def tiered_down(entries: list[Entry]) -> int:
    """How many of ``entries`` the measurement demoted (``CacheInfo.tiered_down``)."""
    return sum(1 for e in entries if e.mode == "eager" and e.measured is not None)
