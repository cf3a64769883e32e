"""Entry point of the tracer: one call's arguments in, a graph (or a break reason), guards and an output spec out."""

from __future__ import annotations

import time
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitgraph.ir.graph import Graph, eliminate_dead, may_raise
from jitgraph.ir.symbols import Sym
from jitgraph.tracer import bytecode, selection_counts
from jitgraph.tracer.calls import call, inline
from jitgraph.tracer.context import GraphBreak, TraceContext
from jitgraph.tracer.frame import run_frame
from jitgraph.tracer.guards import GuardSet, Source
from jitgraph.tracer.keys import is_namedtuple
from jitgraph.tracer.resume import ResumeState, Retry, Suspend, retry_if_lazy
from jitgraph.tracer.side_effects import returned_paths
from jitgraph.tracer.split import split_graph
from jitgraph.tracer.values import TArray, Yielded, is_plain


@dataclass
class TraceResult:
    """One traced call. ``extra`` holds what only some consumers need: ``leaf_names`` (the graph inputs' readable
    names), ``side_effects`` (stores into
    objects, replayed after the graph: ``side_effects.SideEffects.finish``) and, for a trace with a graph,
    ``may_raise`` (:func:`raising_checks`: the run-time checks that can raise
    on the data, which the driver needs to keep eager's order of effects when a mutating graph raises)."""

    graph: Graph | None
    out_spec: Any
    guards: GuardSet
    breaks: GraphBreak | None
    n_arg_leaves: int
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def parameter_names(fn: Any, nargs: int) -> list[str]:
    """Readable names for positional arguments (``x``, ``params``; ``args[2]`` for ``*args``)."""
    func = fn.__func__ if isinstance(fn, types.MethodType) else fn
    code = getattr(func, "__code__", None)
    if code is None:
        return [f"arg{i}" for i in range(nargs)]
    names = list(code.co_varnames[:code.co_argcount])
    if isinstance(fn, types.MethodType):
        names = names[1:]
    star = code.co_varnames[code.co_argcount + code.co_kwonlyargcount] if code.co_flags & 0x04 else "args"
    return [names[i] if i < len(names) else f"{star}[{i - len(names)}]" for i in range(nargs)]


def trace(fn: Any, args: tuple, kwargs: dict[str, Any], observed: tuple | None = None,
          symbolic_dims: dict[str, dict[int, Sym]] | None = None, duck_outside: bool = False) -> TraceResult:
    """Trace one call. A trace whose replayed stores rewrite an outside int or float it read by value (a step
    counter on ``self``) is traced again with those read as runtime values, so the next call does not miss its
    guard; the second trace is kept when it captures a graph (it breaks where the value decides control flow).

    ``observed`` (tracer/resume.py): the values of the first data-dependent cuts, for a trace resumed after them;
    None where the trace may not cut at data-dependent instructions at all (the callers that need one graph).

    ``symbolic_dims``: argument dimensions traced as symbolic sizes (argument name -> {axis: Sym}; ir/symbols.py);
    ``duck_outside``: an array read from outside the arguments (``self.x``) whose size equals a symbol's takes that
    symbol too, guarded to equal it (``TraceContext._outside_symbols``)."""
    start = time.perf_counter()
    sym = (symbolic_dims, duck_outside)
    result = _trace_once(fn, args, kwargs, frozenset(), observed, sym)
    candidates = result.extra.pop("dynamic_candidates", None)
    if candidates and result.breaks is None and not observed and "pending" not in result.extra:
        try:  # a proxy list the code does more with than append may fail in any way: the first trace stands
            again: TraceResult | None = _trace_once(fn, args, kwargs, frozenset(candidates), None, sym)
        except Exception:  # noqa: BLE001
            again = None
        if again is not None and again.breaks is None:
            again.extra.pop("dynamic_candidates", None)
            result = again
    result.seconds = time.perf_counter() - start
    return result


def _trace_once(fn: Any, args: tuple, kwargs: dict[str, Any], dynamic_sources: frozenset[str],
                observed: tuple | None = None, sym: tuple[dict[str, dict[int, Sym]] | None, bool] = (None, False)
                ) -> TraceResult:
    force: frozenset[int] = frozenset()
    while True:  # again for each data-dependent branch to cut without trying a cond (resume.Retry)
        try:
            return _trace_pass(fn, args, kwargs, dynamic_sources, observed, force, sym)
        except Retry as again:
            force |= {again.ordinal}


def _trace_pass(fn: Any, args: tuple, kwargs: dict[str, Any], dynamic_sources: frozenset[str],
                observed: tuple | None, force: frozenset[int],
                sym: tuple[dict[str, dict[int, Sym]] | None, bool] = (None, False)) -> TraceResult:
    start = time.perf_counter()
    guards = GuardSet()
    tx = TraceContext(guards, run_frame, dynamic_sources)
    tx.symbolic_dims, tx.duck_outside = dict(sym[0] or {}), sym[1]
    tx.resume = ResumeState(tuple(observed or ()), enabled=observed is not None, force=force)
    pending = False
    guards.const(fn)  # K[0] is always the compiled callable
    names = parameter_names(fn, len(args))
    try:
        _refuse_suspendable(tx, fn)
        wrapped = [tx.wrap_arg(a, Source(f"A[{i}]", names[i])) for i, a in enumerate(args)]
        wrapped_kw = {k: tx.wrap_arg(v, Source(f"KW[{k!r}]", k)) for k, v in kwargs.items()}
        tx.n_arg_leaves = len(tx.builder.inputs)
        if isinstance(fn, types.MethodType):
            owner = fn.__self__
            tx.note_external(owner, Source("K[0].__self__", "self"))
            result = call(tx, fn.__func__, [owner] + wrapped, wrapped_kw)
        elif isinstance(fn, types.FunctionType):
            result = inline(tx, fn, wrapped, wrapped_kw)
        else:
            result = call(tx, fn, wrapped, wrapped_kw)
    except Suspend:  # a pending data-dependent cut: the graph up to it, nothing returned yet (resume.py)
        pending = True
    except GraphBreak as exc:
        retry_if_lazy(tx)  # a pass with lazy selections (selections.py) retries with them cut, as without them
        return _broken(tx, guards, exc, start)
    try:
        if pending:
            full = tx.builder.build([], [])
            plan = split_graph(full, tx.builder.nodes, tx.cuts)
            if isinstance(plan, str):
                cut = tx.cuts[-1]
                raise GraphBreak(f"{cut.reason}, but {plan}", cut.filename, cut.lineno)
            extra = {"leaf_names": _leaf_names(tx), "split": plan, "pending": tx.cuts[-1], "nodes": tx.builder.nodes}
            return TraceResult(full, None, guards, None, tx.n_arg_leaves, time.perf_counter() - start, extra)
        outputs: list[Any] = []
        tx.side_effects.check_selections(tx, result)
        spec = _output_spec(tx, result, outputs)
        effects = tx.side_effects.finish(tx, lambda v: _output_spec(tx, v, outputs)) if tx.side_effects else []
        returned = returned_paths(tx.side_effects.effects, result) if effects else {}
        mutations = [(b.input_index, b.node) for b in tx.buffers
                     if b.input_index is not None and b.node is not tx.builder.inputs[b.input_index]]
        full = tx.builder.build(outputs, mutations)
        selection_counts.check(tx, full)  # lengths of lazy selections read where int64 could differ: retry
        plan = split_graph(full, tx.builder.nodes, tx.cuts) if tx.cuts else None
        if isinstance(plan, str):
            cut = tx.cuts[0]
            raise GraphBreak(f"{cut.reason}, but {plan}", cut.filename, cut.lineno)
        graph = eliminate_dead(full)
        brk = None
    except GraphBreak as exc:
        retry_if_lazy(tx)
        graph, spec, brk, effects, plan, returned = None, None, exc, [], None, {}
    extra: dict[str, Any] = {"leaf_names": _leaf_names(tx)}
    if plan is not None:
        extra["split"] = plan
        if tx.resume.count:  # a resumed trace: the driver matches its nodes with the first trace's by position
            extra["nodes"] = tx.builder.nodes
    if effects:
        extra["side_effects"] = effects
        if returned:
            extra["returned_effects"] = returned
        if tx.side_effects.candidates - dynamic_sources:
            extra["dynamic_candidates"] = tx.side_effects.candidates | dynamic_sources
    if graph is not None:
        extra["may_raise"] = raising_checks(graph)
    return TraceResult(graph, spec, guards, brk, tx.n_arg_leaves, time.perf_counter() - start, extra)


def _leaf_names(tx: TraceContext) -> list[str]:
    results = {id(n) for c in tx.cuts for n in c.results}
    return [name for n, name in zip(tx.builder.inputs, tx.builder.input_names) if id(n) not in results]


def _broken(tx: TraceContext, guards: GuardSet, exc: GraphBreak, start: float) -> TraceResult:
    return TraceResult(None, None, guards, exc, tx.n_arg_leaves, time.perf_counter() - start,
                       {"leaf_names": _leaf_names(tx)})


_SUSPENDABLE = {bytecode.CO_GENERATOR: "a generator function", bytecode.CO_COROUTINE: "an async function (coroutine)",
                bytecode.CO_ASYNC_GENERATOR: "an async generator function",
                bytecode.CO_ITERABLE_COROUTINE: "a generator-based coroutine"}


def _refuse_suspendable(tx: TraceContext, fn: Any) -> None:
    """A function whose call returns a generator or coroutine is not traced: its body runs later, piece by piece,
    when the caller iterates or awaits (a trace would run it all now and return the values). The break runs the
    call eagerly, which hands back the real generator or coroutine."""
    func = fn.__func__ if isinstance(fn, types.MethodType) else fn
    code = getattr(func, "__code__", None)
    if code is None:
        return
    tx.at(code.co_filename, code.co_firstlineno)
    for flag, what in _SUSPENDABLE.items():
        if code.co_flags & flag:
            tx.graph_break(f"{getattr(func, '__qualname__', func)} is {what}: calling it returns an object that runs "
                           "the body later, so it is not traced and runs eagerly")


def raising_checks(graph: Graph) -> list[tuple[str, str | None, int | None]]:
    """The graph's run-time checks that can raise on the data (``ir.graph.may_raise``: a ``check`` node -- a domain
    error, a division by zero, a symbolic bound --, an integer power with a possibly negative exponent, a gather
    with index arrays), as ``(what, filename, lineno)`` in graph order. Kept in ``TraceResult.extra["may_raise"]``
    (empty when none), for the driver: a graph that both mutates an argument and may raise can raise after a
    mutation that eager code would have made -- or before one that eager code makes first -- so such a call wants
    its mutated inputs snapshotted, restored on a raise and rerun eagerly for NumPy's order of effects."""
    found = []
    for node in graph.nodes:
        if may_raise(node):
            what = node.attrs.get("error", "") if node.op == "check" else ""
            message = node.attrs.get("message", "") if node.op == "check" else ""
            label = f"{node.op}" + (f" ({what or 'ValueError'}: {message})" if node.op == "check" else "")
            loc = node.loc
            found.append((label, getattr(loc, "filename", None), getattr(loc, "lineno", None)))
    return found


def _output_spec(tx: TraceContext, value: Any, outputs: list[Any]) -> Any:
    """Describe how to rebuild the return value from graph outputs, arguments and constants."""
    if isinstance(value, TArray):
        buffer = value.buffer
        if value.kind == "array" and buffer.input_index is not None:
            if not value.path:
                return ("leaf", buffer.input_index)
            return ("view", buffer.input_index, value.path)
        outputs.append(tx.read(value))
        return ("out", len(outputs) - 1, value.kind)
    source = tx.source_of(value)
    if source is not None and not isinstance(value, tuple):
        return ("source", compile(source.code, "<jitgraph output>", "eval"))
    if is_namedtuple(value):  # rebuilt as the same namedtuple type, not a plain tuple
        return ("namedtuple", type(value), tuple(_output_spec(tx, v, outputs) for v in value))
    if isinstance(value, Yielded):
        tx.graph_break("returning a generator from a compiled function (the tracer runs generators it creates at "
                       "once, so it cannot hand one back)")
    if isinstance(value, tuple) and type(value) is not tuple:
        tx.graph_break(f"returning a {type(value).__name__} (a tuple subclass) from a compiled function")
    if isinstance(value, tuple):
        return ("tuple", tuple(_output_spec(tx, v, outputs) for v in value))
    if isinstance(value, list):
        return ("list", tuple(_output_spec(tx, v, outputs) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(value), tuple(_output_spec(tx, v, outputs) for v in value.values()))
    if is_plain(value) or isinstance(value, np.generic | types.ModuleType | types.BuiltinFunctionType | type):
        return ("const", value)
    if isinstance(value, types.FunctionType) and id(value) not in tx.made_functions:
        return ("const", value)
    tx.graph_break(f"returning a {type(value).__name__} from a compiled function")
