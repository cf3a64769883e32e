"""Graph breaks whose result depends on the data: cut the trace there, run the instruction eagerly, and resume
tracing after it with the observed value (issue 18; TorchDynamo's resume functions, by another mechanism).

The instructions: a boolean-mask read ``x[x > 0]``, the NumPy functions whose result size depends on the data
(``np.unique``, ``np.nonzero``, ...), and a data-dependent ``if`` that cannot become a ``cond`` (``if loss <
best:`` after ``loss = float(...)``, an early ``return``). None of them can be typed from the arguments' types.

The mechanism is *replay*: a trace that reaches such an instruction for the k-th time with no observation for it
records a *pending* :class:`~jitgraph.tracer.split.Cut` -- the instruction's arguments as graph values, and every
graph value still alive in the interpreter (:func:`live_nodes`: what the rest of the function could read) -- and
stops (:class:`Suspend`). The driver (``jitgraph/jit/resume.py``) runs the graph up to there, runs the
instruction on the live values, and traces the whole function again with that observation: tracing is
deterministic, so the new trace is the same up to the cut (node for node), and from the cut on it reads the
observed value -- a new graph input typed by the observed array, or, for a branch, the observed truth value (the
resumed segment is specialised on it and guarded by it). Nothing in the trace before the cut runs twice: the
driver runs the first trace's graph up to the cut and the second trace's graph after it.

A mask read or ``np.unique`` whose result is only reduced does not cut at all: selections.py stands a lazy value
there, and any use it does not support retraces with that site cut (:class:`Retry`, ``("selection", k)`` in
``ResumeState.force``).
"""

from __future__ import annotations

import gc
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.ir.types import SUPPORTED_DTYPES, TensorType
from jitgraph.tracer.split import NOT_CUT, Cut, passable, spec_of
from jitgraph.tracer.values import Buffer, TArray

if TYPE_CHECKING:
    from jitgraph.tracer.context import TraceContext

MAX_DATA_CUTS = 16  # per trace: a data-dependent while loop unrolled past this runs eagerly


class Suspend(BaseException):
    """Internal: the trace stops at a pending data-dependent cut (the driver observes it and traces again)."""


class Retry(BaseException):
    """Internal: a data-dependent branch failed to become a cond after its paths ran (they may have changed
    Python objects the region's undo does not reach), or a lazy selection (selections.py) was used in a way it does
    not support: trace again, cutting at that branch (``ordinal``) or site (``("selection", k)``) without trying."""

    def __init__(self, ordinal: int | tuple[str, int]) -> None:
        super().__init__(ordinal)
        self.ordinal = ordinal


@dataclass
class ResumeState:
    """What one trace knows about its data-dependent cuts: the observations for the first ones (from the
    driver), in trace order. An array observation is a tuple of ``(shape, dtype, kind)`` per part; a branch's is a
    bool."""

    observed: tuple = ()
    count: int = 0
    enabled: bool = True
    force: frozenset[int | tuple[str, int]] = frozenset()  # branches (by ordinal) cut without trying a cond
    # first, and ("selection", k): sites cut without a lazy selection (Retry)
    branches: int = 0  # data-dependent branches met so far
    selections: int = 0  # sites met so far where a lazy selection may stand (selections.py)
    lazy: list[int] = field(default_factory=list)  # those that stand as lazy values in this pass
    counts: list[Any] = field(default_factory=list)  # their Python-int lengths (selection_counts.Count)


# NumPy functions whose result's size depends on the data: run eagerly, the next segment reads their result.
DATA_FUNCTIONS = {getattr(np, name) for name in (
    "unique", "nonzero", "flatnonzero", "argwhere", "extract", "compress", "trim_zeros", "bincount", "setdiff1d",
    "union1d", "intersect1d")}


def data_call(tx: TraceContext, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``np.unique(x)`` and friends: cut here (NOT_CUT where the trace cannot: the caller's break then stands)."""
    try:
        known = fn in DATA_FUNCTIONS
    except TypeError:
        return NOT_CUT
    if not known or not _may_cut(tx, list(args) + list(kwargs.values())):
        return NOT_CUT
    name = f"np.{fn.__name__}"
    return _array_cut(tx, fn, args, kwargs, f"{name}(): the size of its result depends on the data")


def mask_read(tx: TraceContext, array: TArray, index: Any) -> Any:
    """``x[mask]`` (a boolean array index, alone or in a tuple): cut here, or NOT_CUT."""
    entries = index if isinstance(index, tuple) else (index,)
    if not any(isinstance(e, TArray) and e.kind == "array" and tx.type_of(e).dtype == np.bool_ for e in entries):
        return NOT_CUT
    if not _may_cut(tx, [array, index]):
        return NOT_CUT
    return _array_cut(tx, operator.getitem, [array, index], {},
                      "boolean mask read x[mask]: the size of its result depends on the data")


def lazy_site(tx: TraceContext, values: list[Any]) -> int | None:
    """A site where a lazy selection (selections.py) may stand instead of a cut: its ordinal, or None where it
    cuts (or breaks) as before -- no cut possible here, or an earlier pass of this trace forced it (Retry)."""
    state: ResumeState | None = tx.resume
    if state is None or not _may_cut(tx, values) or state.selections >= MAX_DATA_CUTS:
        return None
    ordinal = state.selections
    state.selections += 1
    if ("selection", ordinal) in state.force:
        return None
    state.lazy.append(ordinal)
    return ordinal


def retry_if_lazy(tx: TraceContext) -> None:
    """A pass that holds lazy selections meets a graph break or a data-dependent cut: trace again with the first
    of them cut, until none is left -- the outcome is then exactly that of a trace without them. (A lazy value
    does not cross a cut: the driver matches resumed traces with the first one up to each cut, and only ordinary
    graph values are carried over it.)"""
    state: ResumeState | None = tx.resume
    if state is not None and state.lazy:
        raise Retry(("selection", state.lazy[0]))


def next_branch(tx: TraceContext, condition: TArray) -> tuple[int, bool]:
    """A data-dependent branch is met: its ordinal, and whether it is to be cut at once (a cond was tried at it
    in an earlier pass of this trace and failed)."""
    state: ResumeState = tx.resume
    ordinal = state.branches
    state.branches += 1
    return ordinal, ordinal in state.force and branch_possible(tx, condition)


def branch_possible(tx: TraceContext, condition: TArray) -> bool:
    t = tx.type_of(condition)
    return t.shape == () and t.dtype.kind in "biuf" and _may_cut(tx, [condition])


def branch_cut(tx: TraceContext, condition: TArray) -> Any:
    """``if <traced scalar>:`` that cannot become a cond: the truth value observed at run time (a bool); the
    trace stops here when it has no observation yet (Suspend)."""
    retry_if_lazy(tx)
    state: ResumeState = tx.resume
    reason = "a data-dependent branch that cannot become a cond: the truth value is read at run time, and the " \
             "rest of the function is traced for the value seen (guarded)"
    nodes: list[Node] = []
    spec = spec_of(tx, condition, nodes)
    k = state.count
    if k >= len(state.observed):
        _suspend(tx, bool, (spec,), nodes, reason, "branch")
    observed = state.observed[k]
    if type(observed) is not bool:
        tx.graph_break("resumed trace: the observation for a branch is not a truth value (internal)")
    state.count += 1
    tx.cuts.append(Cut(len(tx.builder.nodes), ("const", bool), (spec,), {}, nodes, None, None, reason, tx.filename,
                       tx.lineno, pure=True, data="branch", observation=observed))
    return observed


def _may_cut(tx: TraceContext, values: list[Any]) -> bool:
    state = tx.resume
    if state is None or not state.enabled or tx.in_region or not tx.may_split:
        return False
    if state.count >= MAX_DATA_CUTS:
        return False
    if any(not c.pure for c in tx.cuts):
        # A print, log call or draw before this point: a later call whose value the tree cannot take (a new value
        # past the limit, a trace that breaks) could not rerun eagerly without repeating it, so the break stands.
        return False
    return all(passable(v) for v in values)


def _array_cut(tx: TraceContext, fn: Any, args: list[Any], kwargs: dict[str, Any], reason: str) -> Any:
    retry_if_lazy(tx)
    state: ResumeState = tx.resume
    nodes: list[Node] = []
    arg_specs = tuple(spec_of(tx, v, nodes) for v in args)
    kw_specs = {k: spec_of(tx, v, nodes) for k, v in kwargs.items()}
    k = state.count
    if k >= len(state.observed):
        _suspend(tx, fn, arg_specs, nodes, reason, "array", kw_specs)
    parts = state.observed[k]
    if type(parts) is not tuple or not parts:
        tx.graph_break("resumed trace: the observation for a data-dependent call is not a list of arrays (internal)")
    state.count += 1
    results = [tx.builder.input(TensorType(shape, dtype), f"{reason.split(':')[0]} result"
                                + (f"[{i}]" if len(parts) > 1 else "")) for i, (shape, dtype, _) in enumerate(parts)]
    tx.cuts.append(Cut(len(tx.builder.nodes) - len(results), ("const", fn), arg_specs, kw_specs, nodes, results[0],
                       None, reason, tx.filename, tx.lineno, pure=True, more_results=results[1:], data="array",
                       observation=parts))
    values = [TArray(Buffer(r), (), "array") for r in results]
    return tuple(values) if parts[0][2] == "tuple" else values[0]


def _suspend(tx: TraceContext, fn: Any, arg_specs: tuple, nodes: list[Node], reason: str, data: str,
             kw_specs: dict[str, Any] | None = None) -> None:
    tx.cuts.append(Cut(len(tx.builder.nodes), ("const", fn), arg_specs, kw_specs or {}, nodes, None, None, reason,
                       tx.filename, tx.lineno, pure=True, data=data, pending=True, live=live_nodes(tx)))
    raise Suspend()


def live_nodes(tx: TraceContext) -> list[Node]:
    """Every computed graph value something in the interpreter still holds (locals and stacks of every frame,
    attributes read, stores to replay, views' cached reads): a superset of what the rest of the function can
    read. Found by a scan of the live objects, so no holder is missed; values of other traces are filtered out."""
    mine = {id(n) for n in tx.builder.nodes}
    found: dict[int, Node] = {}
    for obj in gc.get_objects():
        t = type(obj)
        if t is Buffer:
            node = obj.node
        elif t is TArray:
            cache = obj._cache
            node = cache[1] if cache is not None else None
        else:
            continue
        if node is not None and id(node) in mine and node.op not in ("input", "const"):
            found[id(node)] = node
    return list(found.values())


def observe(data: str, value: Any) -> Any:
    """The observation key of an eager result: a bool for a branch; for a call, ``(shape, dtype, kind)`` per part,
    where kind is ``"tuple"`` for the parts of a tuple result. None when the result is not something the resumed
    trace can read (an ndarray of a supported dtype, C-contiguous as a fresh array is). Cheap: it is computed on
    every call."""
    if data == "branch":
        return bool(value)
    if type(value) is np.ndarray:
        if value.dtype not in SUPPORTED_DTYPES or not value.flags.c_contiguous:
            return None
        return ((value.shape, value.dtype, "array"),)
    if type(value) is not tuple or not value:
        return None
    if not all(type(p) is np.ndarray and p.dtype in SUPPORTED_DTYPES and p.flags.c_contiguous for p in value):
        return None
    return tuple((p.shape, p.dtype, "tuple") for p in value)


__all__ = [
    "DATA_FUNCTIONS",
    "ResumeState",
    "Retry",
    "Suspend",
    "branch_cut",
    "branch_possible",
    "data_call",
    "lazy_site",
    "live_nodes",
    "mask_read",
    "next_branch",
    "observe",
    "retry_if_lazy",
]
