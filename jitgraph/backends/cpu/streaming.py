"""Streaming (non-temporal) stores: large outputs written past the caches, row by row.

A plain store first reads its cache line from memory (the read-for-ownership) and then leaves the line in the
caches, where it evicts the kernel's inputs. When a kernel's inputs and outputs together are larger than the
last-level cache, nothing it leaves there is found again anyway, so the read-for-ownership is a third memory pass
for nothing. A row-reduction kernel (layernorm, softmax) then computes each full-shape output row into a small
scratch row, which stays in L1, and copies it to the output with ``vmovntps``/``vmovntpd`` stores that go straight
to memory; one ``sfence`` per chunk makes them visible before the chunk returns to the launcher.

Measured on the 2-core development machine (AMD EPYC, Zen 3, 32 MB L3), a layernorm kernel over (rows, 1024)
float32 on two threads, plain vs streaming stores timed in interleaved blocks: 8 MB of output 0.63 vs 0.62 ms,
16 MB 1.31 vs 1.06 ms, 32 MB 4.50 vs 2.83 ms, 64 MB 8.28 vs 5.14 ms; through ``jitgraph.compile`` at 16 MB, 1.14-1.65
ms against 1.31-2.32 ms over 16 runs. Below the cache size streaming gains nothing and would make
a consumer that reads the output soon fetch it from memory, so kernels stream only when the bytes they move reach
:data:`CACHE_FRACTION` of the last-level cache (glibc's ``memcpy`` switches to streaming stores at the same
fraction).

The choice is made when a launch is planned, from its operands' sizes (a compiled graph has fixed shapes), and it
changes the kernel's source: a function called with both small and large inputs of one rank and pattern compiles
that row kernel twice, once with streaming stores and once without. (A kernel taking the choice as a run-time
argument needs both final sweeps in one function: measured, it compiled about 0.3 s slower, and a copy out of a
scratch row made small launches 70% slower, so both were dropped.)

Only x86-64 has the fence this needs; elsewhere :func:`worth_streaming` is always false.
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

CACHE_FRACTION = 0.75
DEFAULT_CACHE_BYTES = 32 << 20  # when the system does not say
VECTOR_BYTES = 32  # one AVX register; ``vmovntps`` needs the address aligned to it


@functools.cache
def last_level_cache_bytes() -> int:
    """Size of the largest data cache of CPU 0, from Linux's sysfs (``DEFAULT_CACHE_BYTES`` where it is absent)."""
    best = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            text = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or DEFAULT_CACHE_BYTES


def available() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def worth_streaming(moved_bytes: int) -> bool:
    """Whether a kernel that reads and writes ``moved_bytes`` in all should store its large outputs streaming."""
    return available() and moved_bytes >= CACHE_FRACTION * last_level_cache_bytes()


def row_streamable(spec: object, out: object) -> bool:
    """Whether the final sweep of ``spec`` (a ``KernelSpec``) can stream output ``out`` (an ``ArrayArg``): one the
    launcher marked (a fresh buffer, never an input's: ``spec.stream``), of float dtype, in a rank-2 kernel reducing
    along its rows, written one whole row per outer iteration."""
    return (out.name in spec.stream and spec.rank == 2 and spec.inner == (1,) and out.walks == (True, True)
            and out.value.type.dtype in (np.dtype(np.float32), np.dtype(np.float64)))


# -- the kernel side ------------------------------------------------------------------------------------------------
# ``jg_stream_row`` is written directly in LLVM IR: as a Numba function with loops it added a quarter of a second to
# every cold compile of a kernel that uses it.
@intrinsic
def jg_stream_row(typingctx, dst, row, src):
    """``dst[row, :] = src``: streaming stores for the 32-byte-aligned middle of the row, plain stores for its ends
    (and for the whole row when it is not contiguous)."""
    if not (isinstance(dst, types.Array) and dst.ndim == 2 and isinstance(src, types.Array) and src.ndim == 1
            and dst.dtype == src.dtype and isinstance(dst.dtype, types.Float) and isinstance(row, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        dty, rowty, sty = signature.args
        d = context.make_array(dty)(context, builder, args[0])
        s = context.make_array(sty)(context, builder, args[2])
        intp = context.get_value_type(types.intp)
        size = dty.dtype.bitwidth // 8
        scalar = context.get_value_type(dty.dtype)
        vec = ir.VectorType(scalar, VECTOR_BYTES // size)
        n = cgutils.unpack_tuple(builder, s.shape, 1)[0]
        stride = cgutils.unpack_tuple(builder, d.strides, 2)[1]
        r = context.cast(builder, args[1], rowty, types.intp)
        dst0 = cgutils.get_item_pointer(context, builder, dty, d, [r, ir.Constant(intp, 0)], wraparound=False)
        dst_bytes = builder.bitcast(dst0, ir.IntType(8).as_pointer())
        src0 = builder.bitcast(s.data, scalar.as_pointer())

        def c(v: int) -> ir.Constant:
            return ir.Constant(intp, v)

        # Elements before the first aligned address; the whole row when streaming cannot apply.
        misaligned = builder.urem(builder.ptrtoint(dst0, intp), c(VECTOR_BYTES))
        head = builder.udiv(builder.urem(builder.sub(c(VECTOR_BYTES), misaligned), c(VECTOR_BYTES)), c(size))
        head = builder.select(builder.icmp_unsigned("<", head, n), head, n)
        ok = builder.and_(builder.icmp_signed("==", stride, c(size)),
                          builder.icmp_unsigned("==", builder.urem(misaligned, c(size)), c(0)))
        head = builder.select(ok, head, n)
        lanes = VECTOR_BYTES // size
        vectors = builder.udiv(builder.sub(n, head), c(lanes))
        tail = builder.add(head, builder.mul(vectors, c(lanes)))

        def plain(j: ir.Value) -> None:
            target = builder.gep(dst_bytes, [builder.mul(j, stride)])
            builder.store(builder.load(builder.gep(src0, [j])), builder.bitcast(target, scalar.as_pointer()))

        with cgutils.for_range(builder, head, intp=intp) as loop:
            plain(loop.index)
        with cgutils.for_range(builder, vectors, intp=intp) as loop:
            j = builder.add(head, builder.mul(loop.index, c(lanes)))
            value = builder.load(builder.bitcast(builder.gep(src0, [j]), vec.as_pointer()), align=size)
            target = builder.bitcast(builder.gep(dst_bytes, [builder.mul(j, c(size))]), vec.as_pointer())
            store = builder.store(value, target, align=VECTOR_BYTES)
            store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        with cgutils.for_range(builder, builder.sub(n, tail), intp=intp) as loop:
            plain(builder.add(tail, loop.index))
        return context.get_dummy_value()

    return types.void(dst, row, src), codegen


@intrinsic
def jg_stream_fence(typingctx):
    """``sfence``: the streaming stores before it are visible to every core before any store after it."""

    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse.sfence")
        builder.call(fn, [])
        return context.get_dummy_value()

    return types.void(), codegen


__all__ = ["jg_stream_fence", "jg_stream_row"]
