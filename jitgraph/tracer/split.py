"""Graph breaks that split the function instead of abandoning it (issue 18), for the common uncapturable calls:
``print``, a ``logging.Logger`` method, ``np.random`` draws and seeding (module functions, ``RandomState`` and
``Generator`` methods), clock readings (``time.time``, ``time.perf_counter``, ...), and pure calls the tracer has
no op for whose result type follows from the arguments' types (``np.linalg.solve``/``inv``/``det``...: the result
is a new graph value, typed by a call on stand-in arguments, that the next segment reads).

Where the tracer meets such a call (outside loop and branch regions) it does not break: it records a *cut*
(:class:`Cut`) -- the callee, its arguments as output specs over graph values, and, for a draw, a new graph value
standing for its result -- and goes on tracing. At the end, :func:`split_graph` cuts the one traced graph at those
points into segments: segment ``k`` computes what cut ``k``'s call needs and what later segments read; the driver
runs segment 0, makes call 0 eagerly, runs segment 1 with the call's result and the carried values as inputs, and
so on (``jitgraph/jit/split_run.py``). Every guard is checked once at entry, since the calls cut at read nothing
the trace reads (print and logging get values, not user objects; a draw changes only the generator's state).

A draw's result type is found by drawing once with the generator's state saved and restored: the trace itself
leaves the generator as it was.
"""

from __future__ import annotations

import bisect
import builtins
import logging
import time
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from jitgraph.ir.graph import Graph, Node, may_raise
from jitgraph.ir.types import SUPPORTED_DTYPES, type_of
from jitgraph.tracer.values import BoundMethod, Buffer, TArray, is_plain

if TYPE_CHECKING:
    from jitgraph.tracer.context import TraceContext

NOT_CUT = object()
_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "log", "exception"}


@dataclass
class Cut:
    """One call made eagerly between two segments: ``callee`` (``("const", f)`` or ``("method", source code,
    name)``), argument specs (``outputs.build_output`` specs over ``arg_nodes``), the node standing for its result
    (None when the trace uses None), and the reason, for ``explain``."""

    index: int  # position in the builder's node list where the cut falls
    callee: tuple
    arg_specs: tuple
    kw_specs: dict[str, Any]
    arg_nodes: list[Node]
    result_node: Node | None
    result_check: tuple | None
    reason: str
    filename: str | None
    lineno: int | None
    pure: bool = False  # a call that reads only its arguments and writes nothing (it may raise)
    more_results: list[Node] = field(default_factory=list)  # the other parts of a named tuple (svd, qr, eigh)
    more_checks: list[tuple] = field(default_factory=list)
    # A data-dependent cut (tracer/resume.py): "array" (a result sized by the data) or "branch" (a truth value);
    # ``observation`` is what the resumed trace read, ``pending`` marks the cut a trace stopped at, and ``live`` the
    # values still held there (the segment before it outputs them: the resumed trace may read any of them).
    data: str | None = None
    observation: Any = None
    pending: bool = False
    live: list[Node] = field(default_factory=list)

    @property
    def results(self) -> list[Node]:
        """Every graph input this call's result fills (the parts of a named tuple, in order)."""
        return ([] if self.result_node is None else [self.result_node]) + self.more_results


@dataclass
class Segment:
    graph: Graph
    carried: list[Node]  # original nodes whose values come in after the leaves (results of earlier pieces)
    produced: list[Node]  # original nodes this segment outputs, in order (the last: the final outputs)


@dataclass
class SplitPlan:
    segments: list[Segment]
    cuts: list[Cut] = field(default_factory=list)


def eager_call(tx: TraceContext, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Cut the trace at this call and return the value the trace goes on with, or NOT_CUT."""
    kind = _kind(fn)
    if kind is None or tx.in_region or not tx.may_split or (fn is builtins.print and "file" in kwargs):
        return NOT_CUT  # print(file=...) writes to a stream the trace does not model: it stays a break
    values = list(args) + list(kwargs.values())
    if not all(passable(v) for v in values):
        return NOT_CUT
    if kind == "draw" and any(_has_tarray(v) for v in values):
        return NOT_CUT  # the draw's shape would depend on graph values
    if kind == "pure":
        return _pure_call(tx, fn, args, kwargs)
    callee: tuple = ("const", fn)
    owner = fn.self_ if isinstance(fn, BoundMethod) else getattr(fn, "__self__", None)
    if owner is not None and owner is not np.random.mtrand._rand and not isinstance(owner, types.ModuleType):
        # A logger or generator: looked up at each call where the trace found it (a global), since the global
        # may be rebound; a generator reached through the arguments is the guarded object itself; anything else
        # reached through them is not cut (the call sees leaves only).
        source = tx.source_of(owner)
        through_arguments = source is not None and source.through_arguments
        if through_arguments and isinstance(owner, np.random.RandomState | np.random.Generator):
            callee = ("const", fn)  # the trace is guarded on this generator's identity (calls._generator_method)
        elif source is None or through_arguments:
            return NOT_CUT
        else:
            callee = ("method", source.code, fn.func.__name__ if isinstance(fn, BoundMethod) else fn.__name__)
    nodes: list[Node] = []
    arg_specs = tuple(spec_of(tx, v, nodes) for v in args)
    kw_specs = {k: spec_of(tx, v, nodes) for k, v in kwargs.items()}
    result_node, check, value = None, None, None
    if kind in ("draw", "clock"):
        sample = dry_draw(fn, args, kwargs) if kind == "draw" else fn()
        if not isinstance(sample, np.ndarray | float | int | np.generic):
            return NOT_CUT
        result_node = tx.builder.input(type_of(sample), f"{getattr(fn, '__name__', 'draw')}() result")
        kind_of = "array" if isinstance(sample, np.ndarray) else ("scalar" if isinstance(sample, np.generic) else "py")
        value = TArray(Buffer(result_node), (), kind_of)
        check = (type(sample), np.shape(sample), getattr(sample, "dtype", None))
    name = getattr(fn, "__qualname__", None) or getattr(getattr(fn, "func", None), "__qualname__", "call")
    reason = f"{name}() runs eagerly between graphs ({_WHY[kind]})"
    index = len(tx.builder.nodes) - (1 if result_node is not None else 0)
    tx.cuts.append(Cut(index, callee, arg_specs, kw_specs, nodes, result_node, check, reason, tx.filename,
                       tx.lineno))
    return value


def _kind(fn: Any) -> str | None:
    if _is_pure(fn):
        return "pure"
    if fn is builtins.print:
        return "output"
    if isinstance(fn, BoundMethod) and isinstance(fn.self_, logging.Logger) and \
            getattr(fn.func, "__name__", "") in _LOG_METHODS and fn.func is getattr(logging.Logger, fn.func.__name__):
        return "output"
    if fn in _CLOCKS:
        return "clock"
    if fn is np.random.seed or fn is np.random.set_state:
        return "output"
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.random.RandomState | np.random.Generator):
        fname = getattr(fn, "__name__", "")
        if fname in ("seed", "set_state"):
            return "output"
        if not fname.startswith(("get_state", "__")):
            return "draw"
    return None


# Functions the tracer has no op for that read only their arguments, write nothing, and whose result type follows
# from the arguments' types alone (not eig/eigvals, real or complex by the data; not lstsq, whose residuals'
# size depends on the rank): they run eagerly between two graphs. Data-dependent sizes (np.unique, x[mask]) are not
# here: the graph after them would depend on the data.
_PURE_LINALG = ("svd", "qr", "eigh", "slogdet", "solve", "inv", "pinv", "det", "cholesky", "matrix_power", "eigvalsh", "matrix_rank", "cond",
                "tensorinv")


def _is_pure(fn: Any) -> bool:
    try:
        return fn in _PURE
    except TypeError:  # unhashable callable
        return False


_PURE_TUPLES = {type(np.linalg.svd(np.eye(2))), type(np.linalg.qr(np.eye(2))), type(np.linalg.eigh(np.eye(2))),
                type(np.linalg.slogdet(np.eye(2)))}
_PURE = {getattr(np.linalg, name) for name in _PURE_LINALG if hasattr(np.linalg, name)}
_CLOCKS = {time.time, time.perf_counter, time.monotonic, time.process_time}
_WHY = {"pure": "no IR op, LAPACK runs it; its result feeds the next graph", "output": "output", "draw": "a draw advances the generator", "clock": "a clock reading"}


def _pure_call(tx: TraceContext, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Cut at a pure call whose result the trace goes on with, typed by calling it once on stand-in arguments of
    the traced types (identity matrices, ones). The call may raise at run time (a singular matrix): the driver then
    reruns the whole function eagerly, or the error reaches the caller as is. Either is exact only while nothing
    has happened that the graphs defer or that a rerun would repeat: no replayed store, no write to an argument,
    no print or draw cut earlier; otherwise the function is not split."""
    name = f"np.linalg.{fn.__name__}"
    mutated = any(b.input_index is not None and b.node is not tx.builder.inputs[b.input_index] for b in tx.buffers)
    if tx.side_effects or mutated or any(not c.pure for c in tx.cuts):
        tx.graph_break(f"{name} has no IR op and could raise after a store, an argument write or an eager call "
                       "that a split function makes before it: not split")
    nodes: list[Node] = []
    arg_specs = tuple(spec_of(tx, v, nodes) for v in args)
    kw_specs = {k: spec_of(tx, v, nodes) for k, v in kwargs.items()}
    try:
        with np.errstate(all="ignore"):
            sample = fn(*(_probe(s, nodes) for s in arg_specs), **{k: _probe(s, nodes) for k, s in kw_specs.items()})
    except Exception:  # noqa: BLE001 - not cut: the table's entry names the break
        return NOT_CUT
    parts = list(sample) if type(sample) in _PURE_TUPLES else [sample]  # svd, qr, eigh, slogdet: a named tuple
    if not all(isinstance(p, np.ndarray | np.generic) and p.dtype in SUPPORTED_DTYPES for p in parts):
        return NOT_CUT
    reason = f"{name}() runs eagerly between graphs ({_WHY['pure']})"
    results = [tx.builder.input(type_of(part), f"{name}() result" + (f"[{k}]" if len(parts) > 1 else ""))
               for k, part in enumerate(parts)]
    checks = [(type(part), np.shape(part), part.dtype) for part in parts]
    tx.cuts.append(Cut(len(tx.builder.nodes) - len(results), ("const", fn), arg_specs, kw_specs, nodes, results[0],
                       checks[0], reason, tx.filename, tx.lineno, pure=True, more_results=results[1:],
                       more_checks=checks[1:]))
    values = [TArray(Buffer(r), (), "array" if isinstance(p, np.ndarray) else "scalar") for r, p in zip(results, parts)]
    return type(sample)(*values) if type(sample) in _PURE_TUPLES else values[0]


def _probe(spec: Any, nodes: list[Node]) -> Any:
    """A stand-in for an argument of the traced type: identity in square trailing matrices, ones elsewhere."""
    if spec[0] == "const":
        return spec[1]
    if spec[0] in ("tuple", "list"):
        items = [_probe(s, nodes) for s in spec[1]]
        return tuple(items) if spec[0] == "tuple" else items
    t = nodes[spec[1]].type
    value = np.ones(t.shape, t.dtype)
    if t.ndim >= 2 and t.shape[-1] == t.shape[-2]:
        value[...] = np.eye(t.shape[-1], dtype=t.dtype)
    if spec[2] == "py":
        return value.item()
    return value[()] if spec[2] == "scalar" else value


def passable(value: Any, depth: int = 0) -> bool:
    """A value an eager call may receive: plain data, graph values, tuples/lists of them (no user objects, whose
    state the call could read before the replayed stores are made)."""
    if isinstance(value, TArray) or is_plain(value):
        return True
    if depth < 4 and isinstance(value, tuple | list):
        return all(passable(v, depth + 1) for v in value)
    return False


def _has_tarray(value: Any) -> bool:
    return isinstance(value, TArray) or (isinstance(value, tuple | list) and any(_has_tarray(v) for v in value))


def spec_of(tx: TraceContext, value: Any, nodes: list[Node]) -> Any:
    if isinstance(value, TArray):
        nodes.append(tx.read(value))  # a copy of the value as it is now (later writes do not reach it)
        return ("out", len(nodes) - 1, value.kind)
    if isinstance(value, tuple | list):
        return ("tuple" if isinstance(value, tuple) else "list", tuple(spec_of(tx, v, nodes) for v in value))
    return ("const", value)


def dry_draw(fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Draw once to learn the result's type, and put the generator's state back."""
    owner = fn.__self__
    if isinstance(owner, np.random.Generator):
        state = owner.bit_generator.state
        try:
            return fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the eager call raises it again
            return None
        finally:
            owner.bit_generator.state = state
    state = owner.get_state()
    try:
        return fn(*args, **kwargs)
    except Exception:  # noqa: BLE001
        return None
    finally:
        owner.set_state(state)


# ---- cutting the graph ----------------------------------------------------------------------------------------
def split_graph(graph: Graph, nodes: list[Node], cuts: list[Cut]) -> SplitPlan | str:
    """Cut ``graph`` (traced as one, with the draws' result nodes among its inputs) at ``cuts``; a reason string
    when it cannot be split safely."""
    pos = {n: i for i, n in enumerate(nodes)}
    bounds = [c.index for c in cuts]
    results = {n for c in cuts for n in c.results}
    base = [n for n in graph.inputs if n not in results]
    base_set = set(base)
    last = len(cuts)

    def seg_of(n: Node) -> int:
        return bisect.bisect_right(bounds, pos[n])

    roots: list[list[Node]] = [list(c.arg_nodes) + [n for n in c.live if n in pos] for c in cuts]
    roots.append(list(graph.outputs) + [m for _, m in graph.mutations])
    for n in nodes:
        if may_raise(n) and n in pos:
            s = seg_of(n)
            if s > 0 and not all(c.pure for c in cuts[:s]):  # after pure calls only, the eager rerun is exact
                return "a run-time check after an eager call could raise once that call has run"
            roots[s].append(n)
    requested: dict[int, list[Node]] = {s: [] for s in range(last + 1)}
    plan: list[Segment] = []
    for s in reversed(range(last + 1)):
        targets = roots[s] + [n for n in requested[s] if n not in roots[s]]
        members: set[Node] = set()
        carried: list[Node] = []
        stack = list(targets)
        while stack:
            n = stack.pop()
            if n in members or n in base_set or n in carried:
                continue
            if n.op == "const" or (n.op != "input" and seg_of(n) == s):  # constants are copied, not carried
                members.add(n)
                stack.extend(n.inputs)
            else:
                carried.append(n)
                if n.op != "input" and n not in requested[seg_of(n)]:
                    requested[seg_of(n)].append(n)
        carried.sort(key=lambda n: pos[n])
        produced = list(graph.outputs) if s == last else sorted(set(targets), key=lambda n: pos[n])
        plan.append(Segment(_subgraph(graph, nodes, base, carried, members, produced,
                                      graph.mutations if s == last else (), pos), carried, produced))
    plan.reverse()
    if cuts and cuts[-1].pending:  # the trace stopped at this cut: nothing comes after it yet (tracer/resume.py)
        plan.pop()
    return SplitPlan(plan, cuts)


def _subgraph(graph: Graph, nodes: list[Node], base: list[Node], carried: list[Node], members: set[Node],
              outputs: list[Node], mutations: Any, pos: dict[Node, int]) -> Graph:
    names = dict(zip(graph.inputs, graph.input_names))
    mapping: dict[Node, Node] = {}
    new_inputs: list[Node] = []
    new_names: list[str] = []
    for n in base + carried:
        node = Node("input", (), n.type, {"index": len(new_inputs)}, loc=n.loc)
        mapping[n] = node
        new_inputs.append(node)
        new_names.append(names.get(n, f"carried #{pos[n]}"))  # by position: the same in every trace
    body: list[Node] = list(new_inputs)
    for n in nodes:
        if n in members:
            copy = Node(n.op, tuple(mapping[i] for i in n.inputs), n.type, n.attrs, n.regions, n.loc)
            mapping[n] = copy
            body.append(copy)
    index = {n: i for i, n in enumerate(base)}
    return Graph(tuple(body), tuple(new_inputs), tuple(mapping[o] for o in outputs),
                 tuple((index[graph.inputs[i]], mapping[m]) for i, m in mutations), tuple(new_names))
