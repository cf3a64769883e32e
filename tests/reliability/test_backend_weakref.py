"""Issue 17, item 8: output buffers are reused only when nobody can reach them. A result kept only through a weak
reference (``weakref.ref``, a ``WeakValueDictionary`` entry) is still reachable, so a later call must not write
into it; once the weak reference is gone the buffer may be reused again."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import numpy as np
import pytest

import jitgraph


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Any:
    monkeypatch.setenv("JITGRAPH_STRICT", "1")
    monkeypatch.setenv("JITGRAPH_CACHE_DIR", str(tmp_path / "cache"))

    def f(x: np.ndarray) -> np.ndarray:
        return x * 2.0 + 1.0

    return jitgraph.compile(f, reuse_outputs=True)


def test_weak_value_dictionary_result_is_not_reused(compiled) -> None:
    x = np.arange(1000.0)
    kept = weakref.WeakValueDictionary()
    kept["first"] = compiled(x)
    expected = x * 2.0 + 1.0
    for k in range(4):
        compiled(x + 100.0 * (k + 1))  # results dropped at once: their buffers are free for reuse
    np.testing.assert_array_equal(kept["first"], expected)


def test_weakref_result_is_not_reused_and_freed_buffers_still_are(compiled) -> None:
    x = np.arange(512.0)
    first = compiled(x)
    ref = weakref.ref(first)
    address = first.ctypes.data
    del first  # reachable only through ``ref`` now
    for k in range(4):
        compiled(x - k)
    assert ref() is not None
    np.testing.assert_array_equal(ref(), x * 2.0 + 1.0)
    # Reuse itself still works: results dropped without weak references come back.
    addresses = {compiled(x).ctypes.data for _ in range(6)}
    gc.collect()
    assert len(addresses) <= 3 and address not in addresses
