"""The ``dynamic=`` option of ``jitgraph.compile`` as the driver keeps it: checked like every option, kept apart
from the options the passes and backends see, and kept through pickling; ``mark_dynamic``/``mark_static`` are
public."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import jitgraph


def test_dynamic_is_checked_like_every_option() -> None:
    with pytest.raises(ValueError, match="dynamic"):
        jitgraph.compile(lambda x: x, dynamic="yes")


@pytest.mark.parametrize("mode", [None, True, False])
def test_the_option_stays_with_the_driver_and_survives_pickling(mode) -> None:
    f = jitgraph.compile(np.negative, dynamic=mode, math="libm")
    assert f.dynamic is mode and f.options == {"math": "libm"}
    g = pickle.loads(pickle.dumps(f))
    assert g.dynamic is mode and g.options == {"math": "libm"}
    np.testing.assert_array_equal(g(np.ones(3)), -np.ones(3))


def test_mark_functions_are_public() -> None:
    assert {"mark_dynamic", "mark_static"} <= set(jitgraph.__all__)
    x = np.ones((2, 2))
    jitgraph.mark_dynamic(x, 0)
    jitgraph.mark_static(x, 0)  # replaces the dynamic mark
    from jitgraph.tracer import dynamic_ints

    assert dynamic_ints._MARKS[id(x)][1:] == (set(), {0})
