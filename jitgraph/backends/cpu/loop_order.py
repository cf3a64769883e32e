"""Loop order from strides: the one helper the CPU kernels and the layout pass share.

An elementwise kernel may visit its domain in any order, so it visits it in the memory order of its largest
operand: axes sorted by decreasing stride, innermost last. A C-ordered array gives the identity, a Fortran-ordered
one the reversal, and ``(x.T * 2).T`` a plain contiguous sweep over ``x``. After reordering, neighbouring axes that
every operand walks contiguously are merged, so most kernels see one long unit-stride loop.
"""

from __future__ import annotations

from collections.abc import Sequence


def loop_order(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """Permutation of axes, outermost first, that walks an array with these strides in memory order.

    Size-1 axes are irrelevant to the walk and keep their relative place; ties keep the C order (stable sort).
    """
    axes = list(range(len(shape)))
    return tuple(sorted(axes, key=lambda a: -abs(strides[a]) if shape[a] != 1 else 0)) \
        if any(shape[a] != 1 for a in axes) else tuple(axes)


def coalesce(shape: Sequence[int], strides_per_array: Sequence[Sequence[int]]) -> list[list[int]]:
    """Groups of neighbouring axes that can be merged into one loop for every array.

    ``strides_per_array`` are *virtual* strides: 0 where an array is broadcast. Axis ``k`` merges into the group
    before it when, for every array, the group's innermost non-trivial axis ``j`` steps exactly over a whole run of
    ``k`` (``stride[j] == stride[k] * shape[k]``; two broadcast axes merge since ``0 == 0``). Size-1 axes merge
    with anything.
    """
    groups: list[list[int]] = []
    for k in range(len(shape)):
        if groups:
            eff = [a for a in groups[-1] if shape[a] != 1]
            if shape[k] == 1 or not eff or all(s[eff[-1]] == s[k] * shape[k] for s in strides_per_array):
                groups[-1].append(k)
                continue
        groups.append([k])
    return groups
