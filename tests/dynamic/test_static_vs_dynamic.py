"""W1-W6 of ``benchmarks/workloads.py`` with static and with dynamic shapes (``benchmarks/dynamic.py`` times them):
both match eager NumPy at two batch sizes, and the dynamic function's second size is an instance of its symbolic
trace (no trace, the same kernels with run-time extents), not a recompile."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import jitgraph

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import dynamic as bench
from benchmarks import workloads as W

SCALE = 2e-3  # W5: batch 4 then 3; W2/W3: 8 rows then 6; W1/W4/W6: 20000 elements then 15000


@pytest.mark.parametrize("name", list(W.WORKLOADS))
def test_static_and_dynamic_match_eager_at_two_sizes(name: str) -> None:
    fn = W.WORKLOADS[name][1]
    static, dynamic = jitgraph.compile(fn), jitgraph.compile(fn, dynamic=True)
    full = W.make_inputs(name, SCALE)
    for inputs in (bench.shorter_batch(full), full):
        want_args = [x.copy() for x in inputs]
        want = fn(*want_args)
        for f in (static, dynamic):
            args = [x.copy() for x in inputs]
            got = f(*args)
            assert W.results_agree(name, got, want, args, want_args), (name, f)
            if want is not None:
                assert np.asarray(got).dtype == np.asarray(want).dtype
    info = dynamic.cache_info()
    assert (info.recompiles, info.size_variants + info.size_instances, info.fallbacks) == (0, 1, 0), \
        dynamic.recompile_reasons()
    assert info.size_instances == 1, info  # traced once, with symbolic sizes; the second size is an instance
    assert dynamic.recompile_reasons() == []
