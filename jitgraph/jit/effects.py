"""The order of effects when a compiled graph raises: what a cache entry must do so that a call that raises leaves
the caller's arrays exactly as eager NumPy would.

Eager code performs each in-place update as it reaches it and stops at the first operation that raises: the
updates before it happen, the ones after it do not. A compiled graph computes in its own order (a run-time check
on a scalar runs before the kernel that performs an earlier update; a kernel may write an argument in place and
then fail on a later element), so when it raises, the driver reruns the call eagerly, and NumPy performs exactly
its own effects and raises its own exception. The rerun needs the arguments as they were before the call:

* ``FAST``: nothing to do -- the graph cannot raise on its data, or it mutates no argument and replays no store to
  an object (then a raise has no effects to order, and it is the same error NumPy raises);
* ``RERUN``: every node that may raise runs before the first node that reads (so may write) a mutated argument,
  so a raise leaves the arguments untouched: rerun eagerly, no copy (a check on ``1 - beta ** t`` before an
  optimizer's update kernel: the common case, and it costs nothing until it raises);
* ``SNAPSHOT``: a node that may raise can run after a write: copy the mutated arguments before every call, and
  restore them before the rerun.

Which nodes may raise is the IR's answer (:func:`jitgraph.ir.graph.may_raise`: run-time checks, integer powers,
gathers with index arrays), plus stores through index arrays (``x[idx] = v``, ``np.add.at``), which the IR leaves
out of its list (it only needs it for liveness, and a store is live anyway) but which raise on an index out of
range; the tracer's list (``TraceResult.extra["may_raise"]``) counts too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.graph import Graph, Node, may_raise

FAST, RERUN, SNAPSHOT = "fast", "rerun", "snapshot"


def raise_policy(graph: Graph, traced_may_raise: Any = None, object_effects: bool = False) -> str:
    """FAST, RERUN or SNAPSHOT for the lowered ``graph`` (the one the backend runs, in node order); ``object_effects``:
    the entry replays stores to objects after the graph (``h.append(t)``, ``self.t = t``)."""
    if not graph.mutations:
        # A check that asks for the eager run (a Python int beyond int64) needs the driver's handler even with
        # nothing to undo: its exception is not the one NumPy raises, the eager run gives Python's answer. So do
        # replayed stores: eager code makes the ones before its error, and a graph that raises replays none.
        if any(_reruns(n) for n in graph.nodes):
            return RERUN
        if object_effects and (traced_may_raise or any(_raises(n, True) for n in graph.nodes)):
            return RERUN
        return FAST
    raising = [k for k, n in enumerate(graph.nodes) if _raises(n, object_effects)]
    if not raising:
        # The tracer saw a node that may raise and the lowered graph shows none: trust neither, copy.
        return SNAPSHOT if traced_may_raise else FAST
    mutated = {graph.inputs[i] for i, _ in graph.mutations}
    first_reader = next((k for k, n in enumerate(graph.nodes) if any(i in mutated for i in n.inputs)),
                        len(graph.nodes))
    return RERUN if raising[-1] < first_reader else SNAPSHOT


def runs_fast(policy: str) -> bool:
    """Whether an entry with this policy runs on the driver's fast path (the dispatch runner, no Python frame of
    the driver's own): FAST, and RERUN too, since a raise there needs no copy made before the call -- the fast path
    catches it and the driver reruns eagerly (``CompiledFunction._raised``). SNAPSHOT copies arguments first."""
    return policy == FAST or policy == RERUN


def _reruns(node: Node) -> bool:
    """A ``check`` that raises :class:`~jitgraph.errors.RerunEagerly`, here or in a region."""
    if node.op == "check" and node.attrs.get("error") == "RerunEagerly":
        return True
    return any(_reruns(n) for region in node.regions for n in region.nodes)


def _raises(node: Node, scalar_indices: bool = False) -> bool:
    """Whether ``node`` may raise on its data. ``scalar_indices``: count reads and writes at a computed scalar
    index (``a[x[i]]`` in a loop) too, which the backend checks and which raise IndexError. Their partial effects
    on arrays are eager's own (a loop runs in eager's order), so they matter only where stores to objects are
    replayed after the graph: a raise there must rerun eagerly, or the stores before it would be lost."""
    if may_raise(node):
        return True
    if node.regions:
        return any(_raises(n, scalar_indices) for region in node.regions for n in region.nodes)
    if node.op in ("setitem", "scatter_add") and any(getattr(i.type, "ndim", 0) > 0 for i in node.inputs[2:]):
        return True
    if scalar_indices and node.op in ("getitem", "setitem", "scatter_add"):
        return any(i.op != "const" for i in node.inputs[1 if node.op == "getitem" else 2:])
    return False


def snapshot(leaves: list[Any], indices: tuple[int, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Copies of the host arrays at ``indices`` of ``leaves`` (the mutated arguments), to restore after a raise."""
    return [(leaves[i], np.array(leaves[i], copy=True)) for i in indices
            if isinstance(leaves[i], np.ndarray) and leaves[i].flags.writeable]


def restore(saved: list[tuple[np.ndarray, np.ndarray]]) -> None:
    for target, before in saved:
        np.copyto(target, before)
