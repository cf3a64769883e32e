"""How the row template's reduction sweeps accumulate: how many accumulators ("lanes") a reduction keeps, and how a
value is combined into one.

LLVM's loop vectoriser turns a loop-carried reduction into vector lanes by itself only where reordering it is
exact: integer sums and ``llvm.maximum``/``llvm.minimum`` (float max/min that propagate NaN). Float max/min are
emitted through those intrinsics (``jg_max_step``/``jg_min_step``, :mod:`helpers`), so a sweep whose every folded
reduction is one gets one accumulator each and a plain loop over the row, which LLVM vectorises 16 float32 lanes
wide and interleaves: the row max of a (64, 1024) float32 block took 39 us through eight scalar lanes of the
earlier two-select step, 8.5 us this way (22 us with eight lanes of the intrinsic); the whole row-softmax
kernel of W2 on 64 rows in cache, one thread: 67-68 -> 50 us (best of 21), medians 1.5x faster. Any other
reduction in the same sweep (a float product, an argmax) keeps ``LANES`` scalar accumulators, which the max/min then share
(through two selects: scalar ``llvm.maximum`` is a longer sequence).

A one-accumulator max/min of a value the sweep computes (``np.abs(x).max(axis=1)``) folds it in the loop that
computes it, not from the block's buffer: LLVM left a separate loop over the buffer scalar (rows of 256
float32: 322 us for 1024 rows that way, 154 us folded in place; eight lanes of the old two-select step 222).
"""

from __future__ import annotations

import numpy as np

from jitgraph.backends.cpu import emitters as E
from jitgraph.ir.graph import Node

LANES = 8  # independent accumulators per reduction that LLVM does not vectorise by itself

__all__ = ["LANES", "block_sum", "combine", "lane_count", "vector_reduction"]


def vector_reduction(r: Node) -> bool:
    """Whether LLVM vectorises ``r``'s loop-carried accumulator by itself: a float max or min."""
    return r.op in ("max", "min") and E.accumulator_dtype(r).kind == "f"


def lane_count(folded: list[Node]) -> int:
    """Accumulators for each reduction of a sweep that folds ``folded`` value by value: one when LLVM vectorises
    them all (a plain loop), else ``LANES``."""
    return 1 if all(vector_reduction(r) for r in folded) else LANES


def combine(r: Node, acc: str, value: str, dtype: np.dtype, lanes: int) -> str:
    """An accumulator of the row template combined with ``value``: float max/min through ``jg_max_step`` /
    ``jg_min_step`` (``llvm.maximum``/``llvm.minimum``, which LLVM vectorises: why their signed zeros may differ from
    NumPy's is in :mod:`helpers`) where ``r`` keeps one accumulator, else through ``jg_max_lane``/``jg_min_lane``
    (two selects, cheaper as scalars); everything else as the emitters spell it."""
    if r.op in ("max", "min") and dtype.kind == "f":
        return f"jg_{r.op}_{'step' if lanes == 1 else 'lane'}({acc}, {value})"
    return E.reduction_combine(r.op, acc, value)


def block_sum(r: Node) -> str | None:
    """The vectorised block-sum helper (``jg_sum_block_*``) for a float sum or mean of float32/float64 values, else
    None: LLVM does not reorder float additions by itself, so these sums are added block by block in a helper that
    may (:mod:`helpers`, :mod:`sweep_helpers`)."""
    src = r.inputs[0].type.dtype
    if r.op not in ("sum", "mean") or r.type.dtype.kind != "f" or src not in (np.float32, np.float64):
        return None
    return f"jg_sum_block_{'f32' if src == np.float32 else 'f64'}"
