"""Random call sequences against one compiled function: every call matches eager, whatever hits or recompiles,
and the counters add up (one miss per new guard set, hits otherwise, eager after the limit)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import jitgraph
from tests.tracer.helpers import assert_same

MODE = 1


def target(x, w, lr, flag, n):
    y = x * w[: x.shape[-1]] * MODE
    for _ in range(n):
        y = np.tanh(y)
    if flag:
        y = y - lr
    w[:2] -= lr  # mutation of the caller's array
    return y.sum(axis=-1), n


calls = st.lists(st.tuples(st.sampled_from([(2,), (3,), (2, 3)]), st.sampled_from([np.float32, np.float64]),
                           st.floats(-1, 1, allow_nan=False), st.booleans(), st.integers(0, 2),
                           st.sampled_from([1, 2])), min_size=1, max_size=12)


@given(calls=calls, limit=st.integers(1, 4))
def test_call_sequences_match_eager(calls, limit):
    global MODE
    compiled = jitgraph.compile(target, backend="eager", cache_limit=limit, passes=())
    guard_sets: list[tuple] = []
    w_eager, w_comp = np.arange(4.0), np.arange(4.0)
    try:
        for shape, dtype, lr, flag, n, mode in calls:
            MODE = mode
            x = np.linspace(-1, 1, int(np.prod(shape))).reshape(shape).astype(dtype)
            assert_same(target(x, w_eager, lr, flag, n), compiled(x, w_comp, lr, flag, n))
            assert_same(w_eager, w_comp)
            key = (shape, dtype, flag, n, mode)
            if key not in guard_sets:
                guard_sets.append(key)
    finally:
        MODE = 1
    info = compiled.cache_info()
    assert info.entries == min(len(guard_sets), limit)
    assert info.hits + info.misses == len(calls)
    assert info.recompiles == info.entries - 1
