"""The reduction sweeps of the row template: one pass over a row's reduced axes computing its reductions.

A row kernel (:mod:`kernel_source`) computes, per outer index, its reductions level by level -- a softmax's max,
then the sum of ``exp(x - max)`` -- each level one sweep over the row. How a sweep walks the row depends on what it
folds: float sums of operands as loaded are summed block by block by a vectorised helper (``_direct_blocks``);
other reductions of loaded operands fold straight from memory (``_direct_lanes``); reductions of computed values
compute them into small buffers per block of :data:`BLOCK` elements and fold those (``_blocked_lanes``), or fold
each value where it is computed (``_element_loop``). The accumulators and their lanes are :mod:`reduction_lanes`'s.

``emit`` is the kernel's source builder (``kernel_source._Emit``): its spec, variable names, loads, loops and
scratch buffers; ``emit.lanes`` records the accumulators each reduction declared, for the sweep's ``_finish``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.backends.cpu import emitters as E
from jitgraph.backends.cpu import row_prefetch, sweep_helpers
from jitgraph.backends.cpu.reduction_lanes import LANES, block_sum, lane_count
from jitgraph.backends.cpu.reduction_lanes import combine as _combine
from jitgraph.ir.graph import Node

__all__ = ["BLOCK", "sweep"]

BLOCK = 256  # elements per block of a reduction sweep (its buffers stay in L1)


def sweep(emit: Any, w: Any, reds: list[Node], idx: dict[int, str], keep: list[Node],
           rows: list[Any]) -> None:
    """One pass over the reduced axes computing ``reds``, blocked so that both halves vectorise.

    Per block of the innermost reduced axis, the reductions' operands are computed into small buffers (an
    elementwise loop, which LLVM vectorises, math library included), then folded into accumulators
    (:mod:`reduction_lanes`; float32 sums accumulate in float64). ``keep``: full values the final sweep would
    recompute at some cost; they are stored into row scratch buffers here and loaded there instead. ``rows``: arrays whose
    next row the block loops prefetch (row_prefetch.py).
    """
    spec = emit.spec
    w(f"# level-{spec.level[reds[0]]} sweep: {', '.join(r.op for r in reds)}")
    accs = {r: E.accumulator_dtype(r) for r in reds}
    *outer_r, last = spec.inner
    direct = not keep and all(emit.operand(r.inputs[0]) for r in reds)
    blocks = direct and all(block_sum(r) and _walks(emit, r, last) for r in reds)
    # A sum whose blocks a vectorised helper adds needs one accumulator; the reductions folded value by value
    # need one each or LANES (reduction_lanes.py).
    summed = {r for r in reds if block_sum(r) and (blocks or not direct)}
    folded = lane_count([r for r in reds if r not in summed])
    for r in reds:
        v = emit.var[r]
        init = E.reduction_init(r.op, accs[r])
        emit.lanes[r] = 1 if r in summed else folded
        w(" = ".join(f"acc{v}_{lane}" for lane in range(emit.lanes[r])) + f" = {init}")
        if not direct and not all(block_sum(x) for x in reds) and not _in_loop(emit, r):
            emit.scratch(w, f"buf{v}", str(BLOCK), _buffer_dtype(emit, r, accs[r]))  # block sums need none
    for n in keep:
        emit.scratch(w, f"sc{emit.var[n]}", f"n{last}", n.type.dtype)
    depth = w.depth
    emit.loops(w, tuple(outer_r), idx, False)
    prefetch = row_prefetch.block_lines(rows if blocks or not direct else [], {a.name for a in spec.arrays})
    if prefetch:  # only the block loops prefetch; direct lanes have none
        w(row_prefetch.NEXT_ROW)
    if blocks:
        _direct_blocks(emit, w, reds, accs, idx, last, prefetch)
    elif direct:
        _direct_lanes(emit, w, reds, accs, idx, last)
    else:
        _blocked_lanes(emit, w, reds, accs, idx, last, keep, prefetch)
    w.depth = depth
    _finish(emit, w, reds)

def _in_loop(emit: Any, r: Node) -> bool:
    """Whether ``r`` folds each value where it is computed, not from a buffer (reduction_lanes.py)."""
    return not block_sum(r) and emit.lanes.get(r) == 1

def _buffer_dtype(emit: Any, r: Node, acc: np.dtype) -> np.dtype:
    """Block sums buffer values in their own dtype (the helper sums a block in it); other reductions in the
    accumulator's."""
    return r.inputs[0].type.dtype if block_sum(r) else acc

def _operand_arg(emit: Any, r: Node) -> Any:
    """The kernel argument a reduction reads its operand from."""
    return emit.args[emit.spec.use_of[(r, r.inputs[0])]]

def _walks(emit: Any, r: Node, last: int) -> bool:
    """Whether ``r``'s operand walks the innermost reduced axis (so its blocks are slices of a row)."""
    return _operand_arg(emit, r).walks[last]

def _slice_of(emit: Any, r: Node, idx: dict[int, str], last: int) -> str | None:
    """``a0[i0, jb:jb + m]``: the block of ``r``'s operand, when it walks the innermost reduced axis."""
    if not _walks(emit, r, last):
        return None
    arg = _operand_arg(emit, r)
    saved = idx.get(last)
    idx[last] = "jb:jb + m"
    text = emit.index(arg, idx)
    if saved is None:
        del idx[last]
    else:
        idx[last] = saved
    return text

def _direct_blocks(emit: Any, w: Any, reds: list[Node], accs: dict, idx: dict[int, str], last: int,
                   prefetch: list[str]) -> None:
    """Float sums of operands as loaded: a vectorised helper sums each block of the row in place."""
    w(f"for jb in range(0, n{last}, {BLOCK}):")
    w(f"    m = jg_imin({BLOCK}, n{last} - jb)")
    for line in prefetch:
        w(f"    {line}")
    for r in reds:
        v = emit.var[r]
        block = f"{block_sum(r)}({_slice_of(emit, r, idx, last)})"
        w(f"    acc{v}_0 = acc{v}_0 + {E.cast(block, accs[r])}")

def _direct_lanes(emit: Any, w: Any, reds: list[Node], accs: dict, idx: dict[int, str], last: int) -> None:
    """Reductions of operands as loaded: lanes read memory directly, no buffer."""
    if all(emit.lanes[r] == 1 for r in reds):  # LLVM vectorises this loop itself
        w(f"for j in range(n{last}):")
        idx[last] = "j"
        _fold(emit, w, reds, accs, idx, 0, "    ")
        return
    w(f"for j in range(0, n{last} - n{last} % {LANES}, {LANES}):")
    for lane in range(LANES):
        idx[last] = f"j + {lane}" if lane else "j"
        _fold(emit, w, reds, accs, idx, lane, "    ")
    w(f"for j in range(n{last} - n{last} % {LANES}, n{last}):")
    idx[last] = "j"
    _fold(emit, w, reds, accs, idx, 0, "    ")

def _fold(emit: Any, w: Any, reds: list[Node], accs: dict, idx: dict[int, str], lane: int, pad: str) -> None:
    for r in reds:
        (src,) = r.inputs
        arg = _operand_arg(emit, r)
        v = emit.var[r]
        value = E.cast(emit.index(arg, idx), accs[r], src.type.dtype)
        w(f"{pad}acc{v}_{lane} = {_combine(r, f'acc{v}_{lane}', value, accs[r], emit.lanes[r])}")

def _blocked_lanes(emit: Any, w: Any, reds: list[Node], accs: dict, idx: dict[int, str], last: int,
                   keep: list[Node], prefetch: list[str]) -> None:
    if not prefetch and all(_in_loop(emit, r) for r in reds):  # one loop over the row (``_element_loop``)
        _element_loop(emit, w, reds, accs, idx, last, keep, f"n{last}")
        return
    w(f"for jb in range(0, n{last}, {BLOCK}):")
    w.depth += 1
    w(f"m = jg_imin({BLOCK}, n{last} - jb)")
    for line in prefetch:
        w(line)
    if all(block_sum(r) for r in reds):  # the whole block in a reassociable helper (sweep_helpers.py)
        name = f"{emit.spec.name}_sweep{len(emit.helpers)}"
        lines, call = sweep_helpers.helper(emit, type(w)(), name, reds, idx, last, keep)
        emit.helpers.append(lines)
        w(f"bs_ = {call}")
        for k, r in enumerate(reds):
            v = emit.var[r]
            w(f"acc{v}_0 = acc{v}_0 + {E.cast(f'bs_[{k}]', accs[r])}")
        w.depth -= 1
        return
    # The loop variable indexes the arrays directly (jb + k would cost the vectoriser a wraparound check).
    _element_loop(emit, w, reds, accs, idx, last, keep, "jb, jb + m")
    for r in reds:
        v = emit.var[r]
        if block_sum(r):
            w(f"acc{v}_0 = acc{v}_0 + {E.cast(f'{block_sum(r)}(buf{v}[:m])', accs[r])}")
    lanes = [r for r in reds if not block_sum(r) and not _in_loop(emit, r)]
    if lanes:
        # Scalar lane accumulators (registers) for the other reductions (max, min, prod, integer sums).
        w(f"for k in range(0, m - m % {LANES}, {LANES}):")
        for r in lanes:
            v = emit.var[r]
            for lane in range(LANES):
                k = f"k + {lane}" if lane else "k"
                w(f"    acc{v}_{lane} = {_combine(r, f'acc{v}_{lane}', f'buf{v}[{k}]', accs[r], LANES)}")
        w(f"for k in range(m - m % {LANES}, m):")
        for r in lanes:
            v = emit.var[r]
            w(f"    acc{v}_0 = {_combine(r, f'acc{v}_0', f'buf{v}[k]', accs[r], LANES)}")
    w.depth -= 1

def _element_loop(emit: Any, w: Any, reds: list[Node], accs: dict, idx: dict[int, str], last: int,
                  keep: list[Node], bounds: str) -> None:
    """``for i in range(bounds)``: each reduction's operand computed and folded into its accumulator where it
    folds in the loop, else buffered at its place in the block (``i - jb``); kept values to their scratch rows.

    Without blocks (``bounds`` the whole row: every reduction folds in the loop and nothing is prefetched) LLVM
    vectorises the fold as it does the loaded-operand one. In blocks of ``BLOCK`` each block's remainder after
    its unrolled vector loop ran in scalar code: ``np.abs(x).max(axis=1)`` over (1024, 256) float32 took 134 us
    on one thread that way, 51 us in one loop (NumPy's calls: 177-196 us); the same values in the same order."""
    w(f"for i{last} in range({bounds}):")
    w.depth += 1
    idx[last] = f"i{last}"
    emit.compute(w, [r.inputs[0] for r in reds], idx, "", inner=True)
    for r in reds:
        (src,) = r.inputs
        value = E.cast(emit.ref(src, "", r), _buffer_dtype(emit, r, accs[r]), src.type.dtype)
        v = emit.var[r]
        w(f"acc{v}_0 = {_combine(r, f'acc{v}_0', value, accs[r], 1)}" if _in_loop(emit, r) else
          f"buf{v}[i{last} - jb] = {value}")
    for n in keep:
        w(f"sc{emit.var[n]}[i{last}] = {emit.var[n]}")
    w.depth -= 1

def _finish(emit: Any, w: Any, reds: list[Node]) -> None:
    for r in reds:
        v = emit.var[r]
        lanes = [f"acc{v}_{lane}" for lane in range(emit.lanes[r])]
        while len(lanes) > 1:  # pairwise, like the lanes' own order
            acc = E.accumulator_dtype(r)
            lanes = [f"({_combine(r, a, b, acc, LANES)})" for a, b in zip(lanes[::2], lanes[1::2])]
        total = lanes[0]
        if r.op == "mean":
            total = E.mean_total(total, f"cnt{v}", r.type.dtype)
        w(f"{v} = {E.cast(total, r.type.dtype)}")
        emit._done.add(r)
