"""The elementwise kernel body, with float32 divisions by a scalar done as float64 multiplications in cache.

A plain elementwise kernel is one loop over the chunk computing every member per element (:func:`flat_lines`).
Its float32 divisions by a constant or a scalar take the float64 products of :mod:`divisions` where that pays.

Where: only while the launch's distinct buffers fit in the last-level cache (:func:`cached_elements`; the kernel
holds both loops and picks by ``n0``). Streaming from memory the kernel is bound by how many cache lines each core
keeps in flight, and the conversions' extra instructions cost more than the divider saves. Measured on the quiet
2-core development machine (Emerald Rapids, 260 MB last-level cache), W6 alone in a process on one set of arrays,
medians of 40-150 steady calls, ``vdivps`` against the products, per 1e7 elements: 1e7 (160 MB of buffers)
4.58-4.64 -> 3.56-3.66 ms; 1.5e7 4.7 -> 4.9; 2e7 5.4 -> 5.7; 4e7 (640 MB) 5.9-6.1 -> 6.5-7.4. (An earlier
measurement on a loaded machine had counted W6's in-place outputs as buffers of their own and kept 1e7 on
``vdivps``.)

The cache's size is not the cache one has: on a shared host another tenant may hold most of it, and W6 at 1e7 then
streams, the products 15% slower than the divider. So a launch of at least ``measured_choice.MIN_ELEMENTS`` that
would take the products also gets a kernel with the divider only (``KernelSpec.divide``), and the two are timed
against each other (:mod:`measured_choice`).
"""

from __future__ import annotations

from typing import Any

from jitgraph.backends.cpu import streaming
from jitgraph.backends.cpu.divisions import product_divisions, products_or_divisions
from jitgraph.ir.graph import Node

__all__ = ["PRODUCTS_MARK", "cached_elements", "flat_body", "flat_lines"]


PRODUCTS_MARK = "# in cache: the divider, not memory, bounds the loop"  # a kernel with both loops says so


def cached_elements(emit: Any) -> int:
    """The longest domain whose arrays a launch reads and writes in cache: below :mod:`streaming`'s threshold for
    memory-bound kernels (``CACHE_FRACTION`` of the last-level cache).

    What must fit is the distinct buffers: an output written in place into an input's buffer (the same argument
    name, as W6's ``m[...] = ...``) occupies the cache once. Counting it twice sent W6 over 1e7 float32 (160 MB of
    buffers, a 260 MB last-level cache) to the divider loop: 4.6 ms per call against 3.6 with the products."""
    spec = emit.spec
    itemsize = {a.name: a.value.type.dtype.itemsize for a in (*spec.arrays, *spec.outputs)}
    return int(streaming.CACHE_FRACTION * streaming.last_level_cache_bytes()) // max(sum(itemsize.values()), 1)


def flat_body(emit: Any, w: Any, idx: dict[int, str]) -> None:
    """The loops and body of an elementwise kernel; ``w`` stands at the kernel's top level.

    A rank-1 kernel with float32 divisions by a constant or a scalar of the call has two loops: while its arrays
    fit in the last-level cache (and every scalar divisor qualifies) it runs the float64 products; a launch
    streaming from memory runs ``vdivps``, since there the products' extra instructions cost more than the divider
    (module docstring)."""
    recips, fast = product_divisions(emit) if emit.outer_dims == (0,) else ({}, {})

    def loop(products: bool) -> None:
        emit.loops(w, emit.outer_dims, idx, bool(emit.outer_dims))
        flat_lines(emit, w, idx, fast if products else None)

    if fast and not emit.spec.divide:
        products_or_divisions(w, recips, [f"n0 <= {cached_elements(emit)}"], loop, f"  {PRODUCTS_MARK}")
    else:
        loop(False)


def flat_lines(emit: Any, w: Any, idx: dict[int, str], fast: dict[Node, str] | None = None) -> None:
    """No reduction: every member is computed once per element, in body order (``fast``: some members'
    expressions replaced)."""
    fast = fast or {}
    for n in emit.spec.body.nodes:
        if emit.operand(n):
            for a in emit.loads_for.get(n, []):
                w(f"x{a.name} = {emit.index(a, idx)}")
    for n in emit.members:
        if n not in emit.scalar_nodes:
            w(f"{emit.var[n]} = {fast[n] if n in fast else emit.expr(n, '')}")
    for o in emit.spec.outputs:
        w(f"{emit.index(o, idx)} = {emit.ref(o.value, '')}")
