"""The chain of traces of a function's first call through its data-dependent breaks (``jit/resume.py``), made at
compile time: the graph up to each pending cut is evaluated on the call's arguments by the reference interpreter,
the instruction run on it, and the function traced again with what it gave, until a trace returns. A function
whose rest cannot be traced so breaks at compile time, with the reason and line, as any other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.backends.eager import evaluate
from jitgraph.device_arrays import is_device_array
from jitgraph.ir.graph import Node
from jitgraph.tracer.context import GraphBreak
from jitgraph.tracer.keys import make_key
from jitgraph.tracer.outputs import output_value
from jitgraph.tracer.resume import observe
from jitgraph.tracer.split import Cut, SplitPlan, dry_draw
from jitgraph.tracer.trace import TraceResult, trace

MAX_CHAIN = 16  # data-dependent cuts traced at compile time, per call


def complete(fn: Any, args: tuple, kwargs: dict[str, Any], first: TraceResult) -> TraceResult:
    """Trace the first call through every data-dependent cut: ``first`` with ``extra["resume_chain"]`` (the
    resumed traces, in order), or a trace that breaks (the reason and line of whatever stopped the rest)."""
    key_leaves: list[Any] = []
    make_key(args, kwargs, key_leaves)
    chain = [first]
    if any(type(v) is not np.ndarray and is_device_array(v) for v in key_leaves):
        cut = first.extra["pending"]  # no eager instruction runs on device memory: the driver refuses the break
        return _broken(first, f"{cut.reason}, with device arrays", cut)
    while "pending" in chain[-1].extra:
        last = chain[-1]
        cut: Cut = last.extra["pending"]
        if len(chain) > MAX_CHAIN:
            return _broken(last, f"{cut.reason}, but more than {MAX_CHAIN} such cuts in one call: runs eagerly", cut)
        extra = last.guards.compile()(args, kwargs)
        try:
            value = _probe(last, key_leaves + (extra or []), cut)
        except Exception as exc:  # noqa: BLE001 - the eager call raises it again, at its line
            return _broken(last, f"{cut.reason}, but evaluating it raised {type(exc).__name__}: {exc}", cut)
        seen = observe(cut.data or "", value)
        if seen is None:
            return _broken(last, f"{cut.reason}, but its result ({type(value).__name__}) is not an array the trace "
                                 "can read", cut)
        observed = tuple(c.observation for c in last.extra["split"].cuts if c.data and not c.pending) + (seen,)
        nxt = trace(fn, args, kwargs, observed)
        if nxt.breaks is not None:
            return nxt
        if not same_prefix(last, nxt, cut.index):
            return _broken(last, f"{cut.reason}, but the trace resumed after it differs before it (internal)", cut)
        chain.append(nxt)
    first.extra["resume_chain"] = chain[1:]
    return first


def first_path(first: TraceResult) -> SplitPlan:
    """The segments and cuts the traced call went through: the first trace's up to its pending cut, then each
    resumed trace's after its parent's."""
    plan = first.extra["split"]
    segments, cuts = list(plan.segments), list(plan.cuts)
    for result in first.extra.get("resume_chain", []):
        start = len(cuts)
        segments += result.extra["split"].segments[start:]
        cuts += result.extra["split"].cuts[start:]
    return SplitPlan(segments, cuts)


def _broken(result: TraceResult, reason: str, cut: Cut) -> TraceResult:
    return TraceResult(None, None, result.guards, GraphBreak(reason, cut.filename, cut.lineno), result.n_arg_leaves,
                       result.seconds, {"leaf_names": result.extra.get("leaf_names", [])})


def same_prefix(parent: TraceResult, child: TraceResult, index: int) -> bool:
    """Whether two traces built the same nodes before position ``index`` (tracing is deterministic; checked)."""
    a, b = parent.extra["nodes"], child.extra["nodes"]
    if len(a) < index or len(b) < index:
        return False
    return all(x.op == y.op and x.type == y.type for x, y in zip(a[:index], b[:index]))


def same_guards(parent: TraceResult, child: TraceResult) -> bool:
    """Whether two traces guard exactly the same (guard code, the constants it names, the extra inputs)."""
    a, b = parent.guards, child.guards
    return [g.code for g in a.guards] == [g.code for g in b.guards] and \
        [x.code for x in a.extra_inputs] == [x.code for x in b.extra_inputs] and \
        len(a.constants) == len(b.constants) and all(x is y for x, y in zip(a.constants, b.constants))


def _probe(result: TraceResult, leaves: list[Any], pending: Cut) -> Any:
    """Run the graph up to ``pending`` with the reference interpreter (calls between segments as at run time, but
    prints are skipped and draws made on a copy of the generator's state) and return the pending call's result."""
    plan = result.extra["split"]
    constants = result.guards.constants
    env: dict[Node, Any] = {}
    for segment, cut in zip(plan.segments, plan.cuts):
        outs, _ = evaluate(segment.graph, leaves + [env[n] for n in segment.carried])
        env.update(zip(segment.produced, outs))
        if cut is pending:
            return call_cut(cut, constants, env)
        if cut.results:
            store_results(cut, call_cut(cut, constants, env, probe=True), env)
    raise AssertionError("the pending cut has no segment")


def call_cut(cut: Cut, constants: list[Any], env: dict[Node, Any], probe: bool = False) -> Any:
    """Make a cut's call on the values in ``env`` (a draw on a copy of its generator's state when ``probe``)."""
    values = [env[n] for n in cut.arg_nodes]
    args = [output_value(s, constants, values, [], (), {}) for s in cut.arg_specs]
    kwargs = {k: output_value(s, constants, values, [], (), {}) for k, s in cut.kw_specs.items()}
    if cut.callee[0] == "method":
        fn = getattr(eval(cut.callee[1], {"K": constants}), cut.callee[2])
    else:
        fn = cut.callee[1]
    if probe and not cut.pure and cut.data is None and isinstance(getattr(fn, "__self__", None),
                                                                  np.random.RandomState | np.random.Generator):
        return dry_draw(fn, args, kwargs)
    return fn(*args, **kwargs)


def store_results(cut: Cut, result: Any, env: dict[Any, Any], key: Any = None) -> None:
    """Put a call's result (the parts of a tuple) into ``env`` under its result nodes (or ``key(node)``)."""
    nodes = cut.results
    parts = list(result) if len(nodes) > 1 or type(result) is tuple else [result]
    if len(parts) != len(nodes):
        raise ValueError(f"{cut.reason}: the call returned {len(parts)} values, not {len(nodes)}")
    for node, part in zip(nodes, parts):
        env[node if key is None else key(node)] = part


__all__ = ["complete", "first_path", "same_guards", "same_prefix"]
