"""The benchmark timing helper alternates its two functions in blocks (what makes ratios comparable on a noisy
machine); this checks the call pattern, not any time."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.timing import paired_timings


def test_paired_timings_alternates_blocks_and_stops_at_repeat():
    calls: list[str] = []
    (a_med, a_best), (b_med, b_best) = paired_timings(lambda: calls.append("a"), lambda: calls.append("b"),
                                                      repeat=4, block=3, budget=60.0, discard=1)
    assert "".join(calls) == "aaabbbaaabbb"  # two recorded calls per block: four of each after two rounds
    assert 0 <= a_best <= a_med and 0 <= b_best <= b_med


def test_paired_timings_stops_on_budget_after_one_block_each():
    calls: list[str] = []
    paired_timings(lambda: calls.append("a"), lambda: calls.append("b"), repeat=1000, block=2, budget=0.0,
                   discard=1)
    assert "".join(calls) == "aabb"
