"""What lets a compiled function be called from many threads and survive ``os.fork``: compile locks that a forked
child replaces, and counters that threads bump without a lock (see function.py's module docstring)."""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from typing import Any

_HOLDERS: weakref.WeakSet[Any] = weakref.WeakSet()


def compile_lock(owner: Any) -> threading.RLock:
    """A new compile lock for ``owner``, which keeps it as ``owner._lock``. Reentrant: a recursive function's eager
    fallback calls the compiled function again on the same thread."""
    _HOLDERS.add(owner)
    return threading.RLock()


def _new_locks_after_fork() -> None:
    """A child forked while another thread held a compile lock would wait for it forever (that thread does not
    exist in the child): each function gets a fresh lock there."""
    for owner in list(_HOLDERS):
        owner._lock = threading.RLock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_new_locks_after_fork)


def tally(counter: itertools.count) -> int:
    """How many times ``next(counter)`` ran (``count(n)`` is its repr): counters threads bump without a lock."""
    return int(repr(counter)[6:-1])
