"""Replay results reused once the caller drops them (outputs.py), under the simulator.

The buffer a replay copies a result into is handed out again only when nothing else refers to it: a kept result, a
view of it, or a weak reference to it keeps it from being overwritten; a dropped one is reused (no allocation)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import numpy as np
import pytest
from cuda_util import build, compile_cuda, host, rand
from numba import cuda
from test_cuda_replay import LogRecorder, recorder  # noqa: F401 - the fixture

from jitgraph.backends.cuda.outputs import OutputSlot

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def test_a_slot_reuses_a_dropped_array_and_never_a_held_one() -> None:
    slot = OutputSlot((8,), np.dtype(np.float32))
    a = slot.take()
    b = slot.take()
    assert a is not b  # a is held here
    a_id = id(a)
    del a
    gc.collect()
    assert id(slot.take()) == a_id and slot.reused == 1


@pytest.mark.parametrize("hold", ["view", "weakref", "alias"])
def test_anything_that_reaches_the_array_keeps_it(hold: str) -> None:
    slot = OutputSlot((8,), np.dtype(np.float32))
    first = slot.take()
    keep: Any = {"view": lambda x: x[2:], "weakref": weakref.ref, "alias": lambda x: [x]}[hold](first)
    first_id = id(first)
    del first
    for _ in range(3):  # the slot still lists the first array (KEEP = 2): it is passed over while reachable
        assert id(slot.take()) != first_id
    del keep
    gc.collect()
    assert any(id(slot.take()) == first_id for _ in range(2))  # once nothing reaches it, it is reused


def _tanh_graph() -> Any:
    return build([((30,), "float32")], lambda b, x: b.op("tanh", b.op("multiply", x, x)))


def test_replayed_results_kept_by_the_caller_keep_their_values(recorder: LogRecorder) -> None:  # noqa: F811
    c = compile_cuda(_tanh_graph())
    x = cuda.to_device(rand((30,), seed=4))
    kept = []
    for step in range(6):
        if step == 3:
            x.copy_to_device(rand((30,), seed=9))  # same address, new values: replays read them
        out = c([x])[0]
        kept.append((out, host(out).copy(), host(x).copy()))
    for out, value, arg in kept:
        np.testing.assert_array_equal(host(out), value)
        np.testing.assert_allclose(value, np.tanh(arg * arg), rtol=1e-6)
    assert c.replay.replays == 4


def test_dropped_replay_results_are_reused(recorder: LogRecorder) -> None:  # noqa: F811
    c = compile_cuda(_tanh_graph())
    x = cuda.to_device(rand((30,), seed=5))
    want = np.tanh(host(x) * host(x))
    for _ in range(8):
        np.testing.assert_allclose(host(c([x])[0]), want, rtol=1e-6)
    (rec,) = c.replay.recordings.values()
    (slot,) = rec.slots.values()
    assert c.replay.replays == 6 and slot.reused >= 4 and len(slot.arrays) <= 2


class _FixedDeviceArray:
    """Stands for a Numba device array (module ``numba.*``, a CUDA array interface): its facts are remembered."""

    def __init__(self, address: int) -> None:
        self.address = address

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": (4,), "typestr": "<f4", "data": (self.address, False), "strides": None, "version": 3}


_FixedDeviceArray.__module__ = "numba.cuda.fake_for_tests"


def test_the_facts_memo_is_not_a_reference_the_caller_holds() -> None:
    from jitgraph.backends.cuda.outputs import _references
    from jitgraph.device_arrays import byte_range, device_array_facts, memo_ref

    x = _FixedDeviceArray(4096)
    before = _references(x)
    assert device_array_facts(x) == ((4,), np.dtype(np.float32), (4,)) and byte_range(x) == (4096, 4112)
    assert memo_ref(x) is not None and _references(x) == before  # remembered, yet not counted
    user_ref = weakref.ref(x)  # a caller's weak reference is counted (it is not the memo's callback reference)
    assert user_ref is not memo_ref(x) and _references(x) != before
    del user_ref
    x.address = 8192  # Numba's arrays never move; a remembered object answers from the memo
    assert byte_range(x) == (4096, 4112)
