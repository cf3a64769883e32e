"""Which rows a row-reduction kernel prefetches, and the source lines that do it.

A reduction kernel reads a row from memory in its first sweep and then computes on it in cache. Each thread's time
is its memory stalls *plus* its arithmetic (layernorm over (4096, 1024) float32: 4.5 ms on one thread, 2.2 ms on
two), and the hardware prefetchers stop at each 4 KB page, so the next row's first lines miss in full and the final
sweep's stores wait for their lines' read-for-ownership. The sweeps after the first therefore prefetch, block by
block, the next row of each full input (``jg_prefetch``) and output (``jg_prefetch_write``, which also takes the
line's ownership): layernorm 2.77 -> 2.36 ms, softmax 4.39 -> 3.77 ms in an interleaved A/B.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jitgraph.backends.cpu import streaming

# ``nx``: the row the prefetches target, the next one of this thread's chunk (the chunk's last row targets itself,
# so no index runs past the array).
NEXT_ROW = "nx = jg_imin(i0 + np.uint64(1), np.uint64(hi - 1))  # the next row of this chunk (or this row)"
LINE_BYTES = 64


def next_rows(spec: Any, outer_dims: tuple[int, ...]) -> list[Any]:
    """The kernel arguments (``ArrayArg``) whose next row a later sweep prefetches: full-row inputs to read, then
    full-row outputs to write (but not those streamed past the caches, :mod:`streaming`).

    Only the plain case: one outer loop over rows (the chunked one) and the reduction along the other; broadcast
    rows (weights, biases) stay in cache anyway."""
    if outer_dims != (0,) or spec.inner != (1,):
        return []
    inputs = {a.name for a in spec.arrays}
    return [a for a in spec.arrays if a.walks == (True, True)] + \
        [o for o in spec.outputs if o.walks == (True, True) and o.name not in inputs
         and not streaming.row_streamable(spec, o)]


def block_lines(rows: Sequence[Any], inputs: set[str]) -> list[str]:
    """Inside a block loop (``jb``, ``m``): one prefetch per cache line of the block, in row ``nx`` of each array.

    Arrays of one item size share a loop (one loop per item size): each loop is a few basic blocks more for Numba
    to type and lower, and three of them cost the MLP step's softmax kernel about 0.07 s of its compile."""
    steps: dict[int, list[str]] = {}
    for a in rows:
        step = max(LINE_BYTES // a.value.type.dtype.itemsize, 1)
        steps.setdefault(step, []).append(f"    jg_prefetch{'' if a.name in inputs else '_write'}({a.name}, nx, k)")
    return [line for step, calls in steps.items() for line in (f"for k in range(jb, jb + m, {step}):", *calls)]
