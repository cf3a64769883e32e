"""Threading: how kernels use the cores without fighting OpenBLAS, and when they bother to.

Kernels are plain (serial) Numba functions over a chunk ``[lo, hi)`` of their outermost loop, compiled with
``nogil=True``. A large launch splits that loop into one chunk per core: the calling thread runs the first chunk,
a small persistent pool of Python threads runs the others (the kernels release the GIL), and the call returns when
all are done. Between launches the pool's threads sleep on a lock, so a BLAS call that follows has the cores to
itself.

Why not Numba's ``prange`` (measured on the 2-core development machine):

* the default OpenMP layer keeps its workers spinning after a parallel kernel, and a BLAS matmul issued next then
  competes with them: matmul alone 1.8 ms, matmul after a ReLU kernel 44 ms; ``OMP_WAIT_POLICY=passive`` must be
  set before libgomp loads, which a library cannot guarantee;
* the ``workqueue`` layer does not spin (matmul + kernel 2.7 ms vs 2.8 ms alone) but costs 70-100 us per launch;
* and a ``parallel=True`` function takes about 2.5x longer to compile (layernorm kernel: 4.1 s vs 10.2 s under the
  same load), which alone would break the 2 s cold-compile budget.

The pool's launch costs about what ``workqueue``'s does, so a kernel runs chunked only when its estimated serial time
is well above it: ``elements * cost_per_element >= PARALLEL_WORK``, the cost being op-weighted from the kernel body.

After ``os.fork()`` the child has none of the parent's threads, but would still hold the parent's executor (whose
queue nobody reads: the child's next large call would wait forever) and maybe a lock some other parent thread
held. An at-fork hook gives the child a fresh lock and no executor; launches reach the executor through
:data:`POOL`, which asks for the current one on every submit, so they pick up the child's new pool.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from jitgraph import config
from jitgraph.ir.ops.cost import math_bound

# Serial work (elements x cost units) above which splitting pays back the ~80 us launch. Measured with a ReLU
# kernel (3 cost units: load, compare, store): serial 20 us / parallel 94 us at 1e5 elements, 53 / 125 us at 3e5,
# 5.9 / 4.2 ms at 1e7; the curves cross near 1e6 elements, i.e. 3e6 cost units.
# `python benchmarks/workloads.py --threshold` repeats the probe.
PARALLEL_WORK = 3_000_000

# A transcendental function computed by jitgraph's vectorised math (``math="fast"``) inside a reduction kernel: it
# runs several lanes per instruction, so it costs about two simple ops per element, not the four of a libm call.
VECTOR_MATH_WEIGHT = 2

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def workers() -> int:
    """Threads a launch may use: ``JITGRAPH_NUM_THREADS``, else the CPUs this process may run on."""
    env = config.env("JITGRAPH_NUM_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def pool() -> ThreadPoolExecutor:
    """This process's executor (a new one after a fork)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(workers() - 1, 1), thread_name_prefix="jitgraph-kernel")
        return _pool


class _Pool:
    """What launches submit chunks to: the current process's executor, looked up at each submit (see the module
    docstring: a launch built before a fork must not keep the parent's executor)."""

    __slots__ = ()

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future:
        executor = _pool
        if executor is None:
            executor = pool()
        return executor.submit(fn, *args)


POOL = _Pool()


def _after_fork_in_child() -> None:
    """A fresh lock and no executor in a forked child (the parent's threads do not exist here)."""
    global _pool, _lock
    _pool = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


def chunks(n: int) -> list[tuple[int, int]]:
    """Split ``range(n)`` into one contiguous chunk per worker (fewer when ``n`` is small)."""
    k = max(1, min(workers(), n))
    bounds = [n * i // k for i in range(k + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(k)]


def work_per_element(ops: Iterable[tuple[str, bool]], reads: int, reduces: bool) -> int:
    """A kernel's estimated serial cost per element of its domain, in the units of :data:`PARALLEL_WORK`.

    ``ops`` are the (op, computed by vectorised math) pairs done once per element, ``reads`` the array operands read
    per element. An elementwise kernel (``reduces`` false) weighs every op 1, a math-bound op 4, plus one per
    operand: the rule :data:`PARALLEL_WORK` was measured with. A kernel with reductions (softmax, logsumexp,
    layernorm, over rows or columns) sweeps its domain once per reduction level, but a later sweep re-reads rows that
    are still in cache and computes only its own ops, and the ops on reduced values (the ``log`` of a logsumexp, the
    ``sqrt`` of a variance) run once per row, not per element; so the caller passes only the per-element ops and the
    operands walking the whole domain, each counted once, and a vectorised transcendental weighs
    :data:`VECTOR_MATH_WEIGHT`. Measured (2 cores, float32, alternating 1 and 2 threads), two threads start to pay
    from about 5e5 elements for row and column logsumexp and softmax and 5e5-1e6 for layernorm; the old estimate
    (all ops times the number of sweeps) sent them parallel from 8e4-1.1e5, where two threads were 1.2-1.7x
    slower. This one gives a float32 logsumexp 6 units (from 5e5 elements), a softmax 7 (4.3e5), a layernorm 8
    (3.8e5).
    """
    if not reduces:
        return sum(4 if math_bound(op) else 1 for op, _ in ops) + reads
    weight = 0
    for op, vectorised in ops:
        if vectorised and math_bound(op):
            weight += VECTOR_MATH_WEIGHT
        else:
            weight += 4 if math_bound(op) else 1
    return weight + reads


def parallel_threshold(cost_per_element: int) -> int:
    """Number of elements from which a kernel with this per-element cost runs in chunks on several threads."""
    if workers() <= 1:
        return 1 << 62
    return max(PARALLEL_WORK // max(cost_per_element, 1), 4096)

