"""The elementwise kernel body, with float32 divisions by a constant done as a float64 multiplication in cache.

A plain elementwise kernel is one loop over the chunk computing every member per element (:func:`flat_lines`).

Why the division: ``vdivps`` issues one 512-bit quotient every ~10 cycles on the divider it shares with
``vsqrtps``. W6, Adam over float32 parameters (``m / (1 - beta1**t)``, ``v / (1 - beta2**t)``, then
``/ (sqrt(vhat) + eps)``), runs three divisions and a square root per element, as ``torch.compile``'s kernel does;
with its arrays in cache that bounds it: 0.95 ns per element on one thread of the 2-core development machine.

How: for a float32 ``x`` and a float32 constant ``c``, ``float32(float64(x) * RN64(1/c))`` is NumPy's ``x / c``
bit for bit, for every ``x`` (zeros, subnormals, infinities and NaN included), unless ``c`` is an even integer. The
float64 product is within 2**-52 (relative) of the exact ``x / c``. A float32 rounding boundary ``m`` (a midpoint
between neighbours, or the overflow threshold) that ``x / c`` is not exactly on lies at least 2**-49 away from it
(relative; 2**-174 absolute below the normal range), since ``x - c * m`` is then a nonzero multiple of the quantum
of ``c * m``; and ``x / c`` can be exactly on one only as a subnormal midpoint, ``x = c * k * 2**-150`` with ``k``
odd, which needs ``c`` to be an even integer (``tests/cpu/test_w6_kernel.py`` shows one: 147 * 2**-149 / 98). So
the product and the quotient round alike. Checked against NumPy for 133 divisors (the W6 ones, 1/3, 0.1, 7, 255,
2 - 2**-23, a subnormal, random ones from 1e-35 to 3e6) over every significand of one normal binade, every
subnormal and the largest binade: no difference. (Markstein's FMA quotient, ``q = x*y; q - (q*c - x)*y``, is cheaper
still, but exact only for dividends in range; checking each block's dividends cost as much as it saved.)

Where: only while the launch's distinct buffers fit in the last-level cache (:func:`cached_elements`; the kernel
holds both loops and picks by ``n0``). Streaming from memory the kernel is bound by how many cache lines each core
keeps in flight, and the conversions' extra instructions cost more than the divider saves. Measured on the quiet
2-core development machine (Emerald Rapids, 260 MB last-level cache), W6 alone in a process on one set of arrays,
medians of 40-150 steady calls, ``vdivps`` against the products, per 1e7 elements: 1e7 (160 MB of buffers)
4.58-4.64 -> 3.56-3.66 ms; 1.5e7 4.7 -> 4.9; 2e7 5.4 -> 5.7; 4e7 (640 MB) 5.9-6.1 -> 6.5-7.4. (An earlier
measurement on a loaded machine had counted W6's in-place outputs as buffers of their own and kept 1e7 on
``vdivps``.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.backends.cpu import emitters as E
from jitgraph.backends.cpu import streaming
from jitgraph.ir.graph import Node

__all__ = ["cached_elements", "exact_reciprocal", "flat_body", "flat_lines", "product_divisions"]

_F32 = np.dtype(np.float32)


def exact_reciprocal(c: float) -> float | None:
    """``RN64(1 / c)`` for a float32 divisor ``c`` whose quotients it reproduces (module docstring), else None:
    ``c`` zero, infinite, NaN, or an even integer; also a power of two, whose division LLVM already makes a float32
    multiplication."""
    c32 = np.float32(c)
    if not np.isfinite(c32) or c32 == 0:
        return None
    value = abs(float(c32))
    if np.frexp(value)[0] == 0.5 or (value == int(value) and int(value) % 2 == 0):
        return None
    return 1.0 / float(c32)


def product_divisions(emit: Any) -> dict[Node, str]:
    """Per-element float32 divisions by a constant, each with its float64-product expression."""
    found: dict[Node, str] = {}
    for n in emit.members:
        if n.op != "divide" or n in emit.scalar_nodes or n.inputs[1].op != "const" or n.inputs[0].op == "const":
            continue
        dividend, divisor = n.inputs
        if n.type.dtype != _F32 or dividend.type.dtype != _F32 or divisor.type.dtype.kind != "f":
            continue
        ctx = E.EmitContext(n, (dividend.type.dtype, divisor.type.dtype), n.type.dtype, emit.spec.math,
                            emit.spec.math_table, set())
        if tuple(ctx.loop) != (_F32,) * 3:  # NumPy divides in float32 (a float64 divisor would make it float64)
            continue
        y = exact_reciprocal(float(np.asarray(divisor.attrs["value"]).item()))
        if y is not None:
            found[n] = f"np.float32(np.float64({emit.ref(dividend, '', n)}) * {y!r})"
    return found


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

    A rank-1 kernel with float32 divisions by a constant has two loops: while its arrays fit in the last-level
    cache it runs the float64 products; a launch streaming from memory runs ``vdivps``, since there the products'
    extra instructions cost more than the divider (W6 over 1e7 float32, 280 MB moved: 5-9% slower by median with
    the products, same arrays, alternating calls; 1e6: 0.93-1.01 -> 0.55-0.92 ms)."""
    fast = product_divisions(emit) if emit.outer_dims == (0,) else {}
    if fast:
        w(f"if n0 <= {cached_elements(emit)}:  # in cache: the divider, not memory, bounds the loop")
        w.depth += 1
        emit.loops(w, emit.outer_dims, idx, True)
        flat_lines(emit, w, idx, fast)
        w.depth -= 2
        w("else:")
        w.depth += 1
    emit.loops(w, emit.outer_dims, idx, bool(emit.outer_dims))
    flat_lines(emit, w, idx)


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
