"""Pickling compiled functions for Dask workers: by reference where the worker can import them, by value where it
cannot (a script's ``__main__``, a notebook, a module registered with ``cloudpickle.register_pickle_by_value``).

``CompiledFunction.__reduce__`` pickles a module-level function as ``module.qualname``, as pickle does plain
functions. For ``__main__`` that reference means nothing on a Dask worker (its ``__main__`` is the worker's own),
and cloudpickle cannot change it: its by-value rule applies to functions and classes, and a ``CompiledFunction``
is an instance whose ``__reduce__`` answers with a name. :func:`install` registers a reducer in *cloudpickle's*
dispatch table (``cloudpickle.Pickler.dispatch_table``, consulted before ``__reduce__``) that saves such a
function, and a closure (not reachable by its name), *by value*: the wrapped Python function and the compile
options, as cloudpickle bytes. Plain ``pickle`` keeps its rules (by reference; a closure fails, as a local
function does), exactly as cloudpickle and pickle differ for plain functions. Dask's serializer tries pickle,
and turns to cloudpickle for anything that mentions ``__main__`` or that pickle refuses, so both cases reach the
reducer. Everything reachable by its name in an importable module keeps ``CompiledFunction.__reduce__``.

One case goes through plain pickle and still cannot travel by name: a function compiled under another name
(``shard_gradient = jitgraph.compile(loss_and_gradients)`` in an importable module). ``__reduce__`` answers
"build a new ``CompiledFunction`` of this function", so a Dask worker unpickling it for every task got a fresh
object every task, and traced the function and looked its kernels up again on every call (that is why the
compiled training step of ``examples/dask_training.py`` ran slower than eager NumPy under Dask). :func:`install`
therefore also registers :func:`reduce_plain` in ``copyreg.dispatch_table``: the same by-reference pickle of the
function and its options, rebuilt through :func:`rebuild`, which gives one object per payload per process.

What travels is the function, never a compiled kernel: the worker builds a fresh ``CompiledFunction`` whose first
call traces and compiles there, loading kernels from the disk cache (``JITGRAPH_CACHE_DIR``) when another process
has already compiled them. Guards, eager fallback and ``explain`` are the worker's own.
"""

from __future__ import annotations

import copyreg
import hashlib
import pickle
import sys
import threading
from typing import Any

from jitgraph.jit import CompiledFunction

# Held strongly (a task's function is dropped when the task ends, and the next task would rebuild it and trace
# again), the least recently used dropped beyond REBUILT_LIMIT.
REBUILT_LIMIT = 64
_REBUILT: dict[bytes, CompiledFunction] = {}
_lock = threading.Lock()

__all__ = ["by_value", "install", "rebuild", "reduce_compiled", "reduce_plain"]


def by_value(cf: CompiledFunction) -> bool:
    """Whether ``cf`` must travel by value: its module is ``__main__`` (or not importable under its name), it is
    not reachable under its name (a closure, a function compiled with ``jitgraph.compile(f)`` and kept under
    another name), or its module is registered with cloudpickle to be pickled by value."""
    module = getattr(cf, "__module__", None) or ""
    if module in ("__main__", "__mp_main__") or module not in sys.modules or not isinstance(cf.__reduce__(), str):
        return True
    try:
        import cloudpickle  # optional dependency (the dask extra installs it)
    except ImportError:
        return False
    return module in cloudpickle.list_registry_pickle_by_value()


def rebuild(payload: bytes) -> CompiledFunction:
    """The compiled function of :func:`reduce_compiled`'s bytes (the function and its options). The same bytes
    give the same object in one process (among the last :data:`REBUILT_LIMIT` payloads): a Dask worker unpickles
    a task's function for every task, and a fresh object each time would trace and compile (or load kernels) on
    every task instead of once."""
    key = hashlib.sha256(payload).digest()
    with _lock:
        cf = _REBUILT.pop(key, None)
        if cf is None:
            fn, backend, fullgraph, cache_limit, options = pickle.loads(payload)
            cf = CompiledFunction(fn, backend=backend, fullgraph=fullgraph, cache_limit=cache_limit, options=options)
        _REBUILT[key] = cf  # most recently used last
        while len(_REBUILT) > REBUILT_LIMIT:
            _REBUILT.pop(next(iter(_REBUILT)))
    return cf


def reduce_compiled(cf: CompiledFunction) -> str | tuple[Any, ...]:
    """The reducer :func:`install` registers: by value (see :func:`by_value`), else ``cf.__reduce__()`` (also
    where cloudpickle is not installed)."""
    if not by_value(cf):
        return cf.__reduce__()
    try:
        import cloudpickle  # optional dependency: by-value pickling of a __main__ function or a closure needs it
    except ImportError:
        return cf.__reduce__()

    return (rebuild, (cloudpickle.dumps(_arguments(cf)),))


def reduce_plain(cf: CompiledFunction) -> str | tuple[Any, ...]:
    """The reducer :func:`install` registers with plain pickle: ``cf.__reduce__()`` where that is a name; where it
    is "a new compiled function of ``fn``" (no importable name), the same arguments pickled by reference and
    rebuilt by :func:`rebuild`, so that every unpickling of them in one process gives the same object. As before,
    a function pickle cannot name (a closure, ``__main__`` elsewhere) raises here, and Dask turns to cloudpickle."""
    reduced = cf.__reduce__()
    if isinstance(reduced, str):
        return reduced
    return (rebuild, (pickle.dumps(_arguments(cf)),))


def _arguments(cf: CompiledFunction) -> tuple[Any, ...]:
    """What rebuilds ``cf``: the function, its backend, fullgraph, cache_limit and options -- ``dynamic=`` among
    them (the driver keeps it apart from the options the backends see)."""
    return (cf.fn, cf.backend, cf.fullgraph, cf.cache_limit, {**cf.options, "dynamic": cf.dynamic})


def install() -> None:
    """Register :func:`reduce_plain` for ``CompiledFunction`` with plain pickle and :func:`reduce_compiled` with
    cloudpickle (idempotent; ``import jitgraph.dask`` does it; the second only where cloudpickle is installed)."""
    copyreg.dispatch_table[CompiledFunction] = reduce_plain
    try:
        import cloudpickle  # optional dependency (the dask extra installs it)
    except ImportError:
        return
    # A ChainMap whose first map is cloudpickle's own table, before copyreg's (where reduce_plain is).
    cloudpickle.Pickler.dispatch_table[CompiledFunction] = reduce_compiled
