"""Running a function resumed after data-dependent breaks (``tracer/resume.py``): the trace stops at ``x[x > 0]``,
``np.unique(x)`` or ``if loss < best:``, the graph up to there runs, the instruction runs eagerly on its output,
and the rest of the function runs as the graph of a trace resumed with what the instruction gave.

The resumed graphs form a tree. Each :class:`_Variant` is one trace of the whole function: the first stops at the
first data-dependent cut (``pending``); a variant resumed with observations ``o0 .. ok`` is the same trace up to
cut ``k`` (node for node: the driver checks) and either stops at cut ``k + 1`` or returns. A call runs the root's
segments up to its pending cut, runs the instruction, and goes on in the child for the value seen, tracing it on
first sight. A child is specialised on what it read (an array's shape and dtype, a truth value) and on its own
guards, which are checked when it is chosen; each cut keeps at most ``cache_limit`` children (the recompile limit
counts per segment), after which a new value runs the call eagerly when that is exact.

Values flow between variants by *position* in the trace's node list (the same in every variant up to the cut):
the segment before a pending cut outputs every value the interpreter still held there (``resume.live_nodes``), so
a child finds what it reads; where it does not (a node the tracer memoised), the child's own segments up to the
cut run again (they are pure: arguments are written and objects stored only by the last segment and the replay).

On the first call the whole chain is traced at compile time (``jit/resume_chain.py``), so a function whose rest
cannot be traced breaks at compile time, with the reason, as any other.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from jitgraph.backends.base import CompiledGraph, KernelSource, get_backend
from jitgraph.config import OPTIONS, env_flag
from jitgraph.errors import JitgraphError, RerunEagerly
from jitgraph.ir.graph import Graph, Node
from jitgraph.jit.effects import FAST, raise_policy, restore, snapshot
from jitgraph.jit.resume_chain import same_guards, same_prefix
from jitgraph.passes import run_pipeline
from jitgraph.tracer.dynamic_ints import DynamicInt
from jitgraph.tracer.outputs import build_output
from jitgraph.tracer.resume import observe
from jitgraph.tracer.split import Cut
from jitgraph.tracer.trace import TraceResult, trace

log = logging.getLogger("jitgraph.breaks")

# Children per cut: the recompile limit, counted per segment. The default ``cache_limit``; the driver sets a
# function's own ``cache_limit=`` on the artifact it compiled (CompiledFunction._lower).
SEGMENT_LIMIT: int = OPTIONS["cache_limit"].default


class ResumeError(JitgraphError):
    """A function resumed after a data-dependent break met something its traces did not foresee."""


# ---- run time -------------------------------------------------------------------------------------------------
class _Variant:
    """One trace of the tree: its plan, guards, segments compiled on first use, children by observed value."""

    def __init__(self, result: TraceResult, start: int, key: Any, owner: ResumableArtifact) -> None:
        self.result = result
        self.plan = result.extra["split"]
        self.nodes: list[Node] = result.extra["nodes"]
        self.pos = {n: i for i, n in enumerate(self.nodes)}
        self.pending: Cut | None = result.extra.get("pending")
        self.start, self.key, self.owner = start, key, owner
        self.check = result.guards.compile()
        self.children: list[_Variant] = []
        self.parts: dict[int, CompiledGraph] = {}
        self.steps: dict[int, Any] = {}
        self.lowered: dict[int, Graph] = {}
        self.replay = False  # the child reads a value its ancestors did not output: rerun its own segments
        self.same_guards = False  # the child guards exactly what its parent guards (no check of its own)
        self.build: Any = None
        self.policy = FAST
        if self.pending is None:
            self.build = owner.result_builder(result)

    def step(self, s: int) -> tuple[CompiledGraph, list[int], list[int], _CutCall, bool]:
        """Segment ``s`` ready to run: its compiled graph, the positions it reads and writes in the call's values,
        the call after it, and whether it is the last."""
        step = self.steps.get(s)
        if step is None:
            segment = self.plan.segments[s]
            last = s == len(self.plan.segments) - 1 and self.pending is None
            call = None if last else _CutCall(self.plan.cuts[s], self.result.guards.constants, self.pos)
            step = self.steps[s] = (self.part(s), [self.pos[n] for n in segment.carried],
                                    [self.pos[n] for n in segment.produced], call, last)
        return step

    def part(self, s: int) -> CompiledGraph:
        part = self.parts.get(s)
        if part is None:
            graph = self.lowered.get(s)
            if graph is None:
                graph, _ = run_pipeline(self.plan.segments[s].graph, self.owner.options)
                self.lowered[s] = graph
            part = self.parts[s] = get_backend(self.owner.backend)(graph, self.owner.options)
            if s == len(self.plan.segments) - 1 and self.pending is None:
                self.policy = raise_policy(graph, self.result.extra.get("may_raise"),
                                           bool(self.result.extra.get("side_effects")))
        return part


class _CutCall:
    """A cut's call with its argument builders made once: reads its arguments from the call's values (by
    position), and stores its result there for the next segment."""

    def __init__(self, cut: Cut, constants: list[Any], pos: dict[Node, int]) -> None:
        self.cut, self.constants = cut, constants
        self.args = [build_output(s, constants) for s in cut.arg_specs]
        self.kwargs = {k: build_output(s, constants) for k, s in cut.kw_specs.items()}
        self.arg_pos = [pos[n] for n in cut.arg_nodes]
        self.result_pos = [pos[n] for n in cut.results]
        # A draw's or a LAPACK call's result has the type it had when traced (checked, as split_run.py does); a
        # data-dependent call's is the observation its child was traced for (the driver picks the child).
        self.checks = [c for c in [cut.result_check, *cut.more_checks] if c is not None] if cut.data is None else []
        self.method = compile(cut.callee[1], "<jitgraph eager call>", "eval") if cut.callee[0] == "method" else None

    def __call__(self, env: dict[int, Any]) -> Any:
        if self.cut.data == "branch":  # bool() of the condition: no argument to build
            return bool(env[self.arg_pos[0]])
        values = [env[p] for p in self.arg_pos]
        args = [a(values, None, (), None) for a in self.args]
        kwargs = {k: a(values, None, (), None) for k, a in self.kwargs.items()} if self.kwargs else {}
        if self.method is not None:  # a logger or generator read from a global: the object of this call
            fn = getattr(eval(self.method, {"K": self.constants}), self.cut.callee[2])
        else:
            fn = self.cut.callee[1]
        return fn(*args, **kwargs)

    def store(self, result: Any, env: dict[int, Any]) -> None:
        positions = self.result_pos
        if not positions:
            return
        if not self.checks and len(positions) == 1 and type(result) is not tuple:
            env[positions[0]] = result
            return
        parts = list(result) if len(positions) > 1 or type(result) is tuple else [result]
        if len(parts) != len(positions):
            raise ResumeError(f"{self.cut.reason}: the call returned {len(parts)} values, not {len(positions)}")
        for (kind, shape, dtype), part in zip(self.checks, parts):
            if type(part) is not kind or getattr(part, "shape", ()) != shape or getattr(part, "dtype", None) != dtype:
                raise ResumeError(f"{self.cut.reason}: the call returned {type(part).__name__} "
                                  f"{getattr(part, 'shape', '')}, not the {kind.__name__} {shape} it returned when traced")
        env.update(zip(positions, parts))


class _Done:
    """The artifact's answer: the last segment's outputs and the variant that builds the return value from them,
    or the return value of an eager run."""

    __slots__ = ("eager", "leaves", "outs", "variant")

    def __init__(self, outs: Any, variant: _Variant | None, leaves: list[Any], eager: Any = None) -> None:
        self.outs, self.variant, self.leaves, self.eager = outs, variant, leaves, eager


class _Deferred:
    __slots__ = ("artifact", "leaves")

    def __init__(self, artifact: ResumableArtifact, leaves: list[Any]) -> None:
        self.artifact, self.leaves = artifact, leaves


def build_result(deferred: _Deferred, leaves: list[Any], args: tuple, kwargs: dict[str, Any]) -> Any:
    """The entry's result builder: runs the call (segments, eager instructions, resumed children), then builds
    the return value as the finishing variant does (its leaves, its out spec, its replayed stores)."""
    o = deferred.artifact.run(deferred.leaves, args, kwargs)
    if o.variant is None:
        return o.eager
    return o.variant.build(o.outs, o.leaves, args, kwargs)


class ResumableArtifact:
    """A :class:`~jitgraph.backends.base.CompiledGraph` over the tree of resumed traces."""

    def __init__(self, fn: Any, root: TraceResult, backend: str, options: dict[str, Any], n_key: int,
                 dynamic: bool, result_builder: Any) -> None:
        self.fn, self.backend, self.options, self.n_key = fn, backend, options, n_key
        self.dynamic, self.result_builder = dynamic, result_builder
        self.cache_limit = SEGMENT_LIMIT
        self.root = _Variant(root, 0, None, self)
        self.saturated: list[str] = []
        self.retraces = 0
        self._lock = threading.Lock()
        node = self.root
        for result in root.extra.get("resume_chain", []):
            start = len(node.plan.cuts)  # the segment after the parent's pending cut
            child = _Variant(result, start, result.extra["split"].cuts[start - 1].observation, self)
            child.replay = not self._reads_only_outputs(node, child, node.pending)
            child.same_guards = same_guards(node.result, child.result)
            node.children.append(child)
            node = child

    # ---- running ----------------------------------------------------------------------------------------------
    def __call__(self, leaves: list[Any]) -> Any:
        """Nothing runs yet: a child is traced and guarded on the call's arguments, which the result builder
        (:func:`build_result`) has and the artifact does not; the builder runs the call."""
        return _Deferred(self, leaves)

    def run(self, leaves: list[Any], args: tuple, kwargs: dict[str, Any]) -> _Done:
        """Run the call. A segment that fails to compile or raises before anything eager with an effect has run
        (a print, a draw) makes the call rerun eagerly: NumPy then raises its own exception, or the result is
        NumPy's (the segments are pure up to the last one, which undoes its writes when it raises)."""
        impure = [False]
        try:
            done = self._run(leaves, args, kwargs, impure)
        except ResumeError:
            raise
        except Exception as exc:
            if impure[0]:
                raise
            result = self._eager(args, kwargs)  # NumPy's exception, if it raises, is the caller's
            if not isinstance(exc, RerunEagerly):  # a value only Python represents (errors.RerunEagerly): no failure
                if env_flag("JITGRAPH_STRICT"):
                    raise
                log.warning("jitgraph: a resumed segment of %s failed (%s: %s); the call ran eagerly",
                            getattr(self.fn, "__qualname__", self.fn), type(exc).__name__, exc)
            return _Done(None, None, [], result)
        # No child for this call's value: run it eagerly here, outside the handler above, so that the function's own
        # exception (an ``assert`` on the value) reaches the caller once and is not taken for a segment's failure
        # and rerun (which made every effect before it twice).
        return _Done(None, None, [], self._eager(args, kwargs)) if done is None else done

    def _run(self, leaves: list[Any], args: tuple, kwargs: dict[str, Any], impure: list[bool]) -> _Done | None:
        node, s, env, vleaves = self.root, 0, {}, leaves
        while True:
            part, carried, produced, call, last = node.step(s)
            inputs = vleaves + [env[p] for p in carried] if carried else vleaves
            if last:
                return self._finish(node, part, inputs, vleaves)
            env.update(zip(produced, part(inputs)))
            value = call(env)
            if call.cut is node.pending:
                found = self._child(node, call.cut, value, args, kwargs, impure[0], vleaves)
                if found is None:
                    return None  # ``run`` calls the function eagerly
                node, vleaves = found
                node.step(s)[3].store(value, env)  # the child's cut: where its result is read
                if node.replay:
                    self._replay(node, s, vleaves, env)
            else:
                impure[0] = impure[0] or not call.cut.pure
                call.store(value, env)
            s += 1

    def _finish(self, node: _Variant, part: CompiledGraph, inputs: list[Any], vleaves: list[Any]) -> _Done:
        """The last segment: it writes the arguments; a raise after a write is undone and, when nothing eager has
        happened, the call reruns eagerly, so NumPy makes its own effects in its own order (jit/effects.py)."""
        if node.policy == FAST:
            return _Done(part(inputs), node, vleaves)
        mutated = tuple(i for i, _ in node.lowered[len(node.plan.segments) - 1].mutations)
        saved = snapshot(vleaves, mutated)
        try:
            return _Done(part(inputs), node, vleaves)
        except Exception:
            restore(saved)  # then ``run`` reruns the call eagerly, where that is exact
            raise

    def _eager(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        def plain(v: Any) -> Any:
            return int(v) if type(v) is DynamicInt else v

        return self.fn(*[plain(a) for a in args], **{k: plain(v) for k, v in kwargs.items()})

    def _child(self, node: _Variant, cut: Cut, value: Any, args: tuple, kwargs: dict[str, Any],
               impure: bool, leaves: list[Any]) -> tuple[_Variant, list[Any]] | None:
        """The variant resumed with ``value`` at ``cut`` whose guards pass (traced now if there is none), with its
        leaves; None where the call runs eagerly instead."""
        key = observe(cut.data or "", value)
        if key is None:
            return self._refuse(f"{cut.reason}, but this call's result is not an array the trace can read", impure)
        for child in node.children:
            if child.key == key:
                if child.same_guards:  # its parent's guards, which passed: the same leaves
                    return child, leaves
                extra = child.check(args, kwargs)
                if extra is not None:
                    return child, leaves[:self.n_key] + extra
        with self._lock:
            if len(node.children) >= self.cache_limit:
                why = f"{cut.reason}: {len(node.children)} values seen at {cut.filename}:{cut.lineno}, the limit"
                if why not in self.saturated:
                    self.saturated.append(why)
                    log.warning("jitgraph: %s hit its recompile limit; calls with a new value there run eagerly",
                                why)
                return self._refuse(why, impure)
            observed = tuple(c.observation for c in node.plan.cuts if c.data and not c.pending) + (key,)
            result = trace(self.fn, args, kwargs, observed)
            self.retraces += 1
            if result.breaks is not None:
                return self._refuse(f"{cut.reason}, but the trace resumed after it breaks: {result.breaks.reason}",
                                    impure)
            if not same_prefix(node.result, result, cut.index):
                return self._refuse(f"{cut.reason}, but the trace resumed after it differs before it", impure)
            child = _Variant(result, len(node.plan.cuts), key, self)
            extra = child.check(args, kwargs)
            if extra is None:
                return self._refuse(f"{cut.reason}, but the resumed trace's guards fail on its own call", impure)
            child.replay = not self._reads_only_outputs(node, child, cut)
            child.same_guards = same_guards(node.result, child.result)
            node.children.append(child)
            log.info("jitgraph: %s resumed after %s:%s for a new value (%s)", getattr(self.fn, "__qualname__", ""),
                     cut.filename, cut.lineno, key)
        return child, leaves[:self.n_key] + extra


    @staticmethod
    def _reads_only_outputs(parent: _Variant, child: _Variant, cut: Cut) -> bool:
        """Whether every value the child's later segments carry from before ``cut`` is one the parent's segments
        output (so the child need not rerun its own)."""
        available = {parent.pos[n] for seg in parent.plan.segments for n in seg.produced}
        available |= {parent.pos[n] for c in parent.plan.cuts for n in c.results}
        first = len(parent.plan.cuts)
        for segment in child.plan.segments[first:]:
            for n in segment.carried:
                p = child.pos[n]
                if p < cut.index and p not in available:
                    return False
        return True

    def _replay(self, child: _Variant, upto: int, vleaves: list[Any], env: dict[int, Any]) -> None:
        for t in range(upto + 1):
            segment = child.plan.segments[t]
            outs = child.part(t)(vleaves + [env[child.pos[n]] for n in segment.carried])
            env.update((child.pos[n], v) for n, v in zip(segment.produced, outs))

    def _refuse(self, why: str, impure: bool) -> None:
        if impure:  # a print or a draw has happened: an eager rerun would repeat it
            raise ResumeError(f"{why}; an eager call (print, logging, a draw) already ran in this call, so it cannot "
                              "rerun eagerly", hint="compile the part after the eager call as its own function")
        log.info("jitgraph: %s; this call runs eagerly", why)

    # ---- inspection -------------------------------------------------------------------------------------------
    def variants(self) -> list[_Variant]:
        """Every variant, depth first."""
        found, todo = [], [self.root]
        while todo:
            node = todo.pop()
            found.append(node)
            todo.extend(reversed(node.children))
        return found

    def segments(self) -> list[tuple[int, _Variant, int]]:
        """``(depth, variant, segment index)`` of every segment the tree runs (compiled or not yet)."""
        rows = []
        for node in self.variants():
            depth = sum(1 for c in node.plan.cuts if c.data and not c.pending)
            for s in range(node.start, len(node.plan.segments)):
                rows.append((depth, node, s))
        return rows

    def kernel_sources(self) -> list[KernelSource]:
        found = []
        for k, (_, node, s) in enumerate(self.segments()):
            part = node.parts.get(s)
            for source in part.kernel_sources() if part is not None else []:
                found.append(KernelSource(f"segment {k}: {source.title}", source.source, source.note))
        return found

    def explain(self) -> str:
        return "\n".join(explain_lines(self))

    def regions(self) -> list:
        return [r for node in self.variants() for part in node.parts.values() for r in part.regions()]

    def compile_times(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for node in self.variants():
            for part in node.parts.values():
                for k, v in part.compile_times().items():
                    total[k] = total.get(k, 0.0) + v
        return total

    def fallback_reason(self) -> str | None:
        reasons = [r for node in self.variants() for p in node.parts.values() if (r := p.fallback_reason())]
        return "; ".join(reasons) or None


def explain_lines(artifact: ResumableArtifact) -> list[str]:
    """The tree in words: each segment, and after it the cut it ends at (the value each child was traced for)."""
    lines = []
    for depth, node, s in artifact.segments():
        pad = "  " * depth
        where = "" if node.key is None else f" (resumed for {describe_key(node.key)})"
        lines.append(f"{pad}segment {s}{where if s == node.start else ''}")
        if s < len(node.plan.cuts):
            cut = node.plan.cuts[s]
            lines.append(f"{pad}  then at {cut.filename}:{cut.lineno}: {cut.reason}")
    lines.extend(f"recompile limit: {why}" for why in artifact.saturated)
    return lines


def describe_key(key: Any) -> str:
    if type(key) is bool:
        return f"the branch {'taken' if key else 'not taken'}"
    return ", ".join(f"{dtype}{list(shape)}" for shape, dtype, _ in key)


__all__ = ["ResumableArtifact", "ResumeError", "build_result", "describe_key", "explain_lines"]
