"""Iteration at trace time: only over things whose length and elements are known while tracing."""

from __future__ import annotations

from typing import Any

from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.values import TArray, Yielded

MAX_UNROLL = 1024
_ITERATOR_TYPES = tuple({type(iter(x)) for x in ([], (), {}, "", range(1), set(), {}.items(), {}.values())}
                        | {zip, enumerate, reversed, type(reversed([])), type(iter(range(1 << 70)))})
SAFE_ITERABLES = (list, tuple, dict, str, range, set, frozenset, type({}.keys()), type({}.values()),
                  type({}.items()), Yielded) + _ITERATOR_TYPES


def iterate(tx: TraceContext, value: Any) -> Any:
    """A real Python iterator over trace-time values (our containers hold symbolic values, never user objects
    with ``__iter__``, so iterating them runs no user code)."""
    if isinstance(value, TArray):
        t = tx.type_of(value)
        if t.ndim == 0:
            err = TypeError("iteration over a 0-d array")
            tx.graph_break(str(err), err)
        if t.shape[0] > MAX_UNROLL:
            tx.graph_break(f"iterating over {t.shape[0]} rows of an array (more than {MAX_UNROLL} to unroll)")
        return iter([tx.view(value, "getitem", spec=(i,)) for i in range(t.shape[0])])
    if isinstance(value, SAFE_ITERABLES):
        return iter(value)
    if tx.source_of(value) is not None:
        tx.graph_break(f"iterating over a {type(value).__name__} object (its __iter__ is not traced)")
    tx.graph_break(f"iterating over {type(value).__name__}")
