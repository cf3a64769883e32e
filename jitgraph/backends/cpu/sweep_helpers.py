"""A reduction sweep's block as its own small function whose additions may be reassociated, so it vectorises.

LLVM vectorises a sum only if it may reorder the additions, and the kernels are compiled with strict IEEE flags so
that their elementwise results are NumPy's. The sweeps of a reduction are different: their sums are accumulated
in blocks anyway (never in NumPy's exact order), so each block's loop -- the reduced operand's expression and its
running sums -- becomes a separate ``njit(fastmath={'reassoc'})`` function that the kernel calls once per block and
LLVM inlines, keeping the flag on these instructions only. Measured on the layernorm workload: the variance sweep
went from about a cycle per element (values buffered, then summed by scalar lanes) to a fraction of one.

Block sums are float32 (or float64) over at most ``BLOCK`` elements; the kernel adds them in float64, which keeps
the error at or below that of NumPy's pairwise summation.
"""

from __future__ import annotations

import re
from typing import Any

from jitgraph.backends.cpu import emitters as E

# Names a helper body may read from the kernel: values, loads, arrays, loop indices, sizes, scalars, scratch.
_FREE = re.compile(r"\b(v\d+|xa\d+|a\d+|i\d+|n\d+|s\d+|sc\w+|cnt\w+)\b")
_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(?!=)")


def helper(emit: Any, w: Any, name: str, reds: list, idx: dict[int, str], last: int, keep: list
           ) -> tuple[list[str], str]:
    """Source lines of ``name(jb, m, ...)`` returning the block sums of ``reds`` over ``[jb, jb + m)`` (and storing
    the ``keep`` values into their scratch rows), and the call expression the kernel uses. ``w`` is a fresh source
    writer (``kernel_source._Writer``) for the helper's loop body."""
    w.depth = 2  # inside the def and its loop
    saved = idx.get(last)
    idx[last] = f"i{last}"
    emit.compute(w, [r.inputs[0] for r in reds], idx, "", inner=True)
    sums = []
    for k, r in enumerate(reds):
        (src,) = r.inputs
        dtype = src.type.dtype
        sums.append((f"bs{k}", dtype))
        w(f"bs{k} = bs{k} + {E.cast(emit.ref(src, '', r), dtype, dtype)}")
    for n in keep:
        w(f"sc{emit.var[n]}[i{last}] = {emit.var[n]}")
    if saved is None:
        del idx[last]
    else:
        idx[last] = saved
    body = w.lines
    assigned = {m.group(1) for line in body if (m := _ASSIGNED.match(line))}
    free = sorted({m for line in body for m in _FREE.findall(line)} - assigned - {f"i{last}"}, key=_natural)
    params = ["jb", "m", *free]
    # Only the kernel calls it: no wrappers for calls from Python or C (a helper's compile then costs ~0.07 s less,
    # and the kernel's machine code is the same).
    lines = [("@njit(cache=CACHE, error_model='numpy', fastmath={'reassoc'}, nogil=True, no_cpython_wrapper=True, "
              "no_cfunc_wrapper=True)"),
             f"def {name}({', '.join(params)}):"]
    lines += [f"    {s} = {E.cast('0', dtype)}" for s, dtype in sums]
    lines.append(f"    for i{last} in range(np.uint64(jb), np.uint64(jb + m)):")
    lines += body
    lines.append(f"    return {', '.join(s for s, _ in sums)}" + ("," if len(sums) == 1 else ""))
    return lines, f"{name}(jb, m, {', '.join(free)})"


def _natural(name: str) -> tuple[str, int]:
    head = name.rstrip("0123456789")
    return head, int(name[len(head):] or -1)
