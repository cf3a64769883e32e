"""The matmul family: a tiled shared-memory kernel whose epilogue (bias, activation, scaling) runs in its store.

Each block computes a ``T x T`` tile of the product; its threads stage ``T x T`` tiles of both operands through
shared memory, one per step along ``K``, so every loaded element is reused ``T`` times. When the tile is done,
each thread holds one product element in a register and evaluates the group's elementwise epilogue on it before
the only store, so ``relu(x @ w + b)`` writes memory once. Epilogues that contain a reduction (``softmax(x @ w)``)
cannot finish inside one tile: the backend then stores the product and runs the rest of the group as a reduction
kernel that reads it (the product becomes one of that kernel's operands).
"""

from __future__ import annotations

import numpy as np

from jitgraph.backends.cuda import emitters as em
from jitgraph.backends.cuda.codegen import KernelSource, _scalar_preamble
from jitgraph.backends.cuda.writer import Writer
from jitgraph.errors import UnsupportedError
from jitgraph.ir.fusion_groups import GroupInfo
from jitgraph.ir.graph import Graph, Node


def matmul_kernel(name: str, body: Graph, info: GroupInfo, head: Node, leaves: list[Node], outs: list[Node],
                  scalar_arrays: frozenset[int], tile: int, epilogue: bool = True) -> KernelSource:
    a, b = head.inputs
    if a.tensor_type.ndim != 2 or b.tensor_type.ndim != 2 or a not in leaves or b not in leaves:
        raise UnsupportedError("CUDA matmul kernel needs two 2-D operands")
    acc = head.tensor_type.dtype
    if acc.kind != "f":
        raise UnsupportedError(f"CUDA matmul kernel has no {acc} variant")
    w = Writer(body, info, leaves, scalar_arrays)
    dt = em.np_name(acc)
    w.line(f"sa_ = cuda.shared.array(({tile}, {tile}), {dt})")
    w.line(f"sb_ = cuda.shared.array(({tile}, {tile}), {dt})")
    w.line("tx_ = cuda.threadIdx.x")
    w.line("ty_ = cuda.threadIdx.y")
    if epilogue:
        _scalar_preamble(w, body)
    pa, pb = w.leaf_param(a), w.leaf_param(b)
    zero = em.cast("0", acc)
    w.line(f"i0 = cuda.blockIdx.y * {tile} + ty_")
    w.line(f"i1 = cuda.blockIdx.x * {tile} + tx_")
    w.line(f"acc_ = {zero}")
    w.open(f"for k0_ in range(0, nk_, {tile}):")
    w.open("if i0 < n0 and k0_ + tx_ < nk_:")
    w.line(f"sa_[ty_, tx_] = {em.cast(f'{pa}[i0, k0_ + tx_]', acc, a.tensor_type.dtype)}")
    w.close()
    w.open("else:")
    w.line(f"sa_[ty_, tx_] = {zero}")
    w.close()
    w.open("if k0_ + ty_ < nk_ and i1 < n1:")
    w.line(f"sb_[ty_, tx_] = {em.cast(f'{pb}[k0_ + ty_, i1]', acc, b.tensor_type.dtype)}")
    w.close()
    w.open("else:")
    w.line(f"sb_[ty_, tx_] = {zero}")
    w.close()
    w.line("cuda.syncthreads()")
    w.open(f"for kk_ in range({tile}):")
    w.line(f"acc_ = {em.cast('acc_ + sa_[ty_, kk_] * sb_[kk_, tx_]', acc)}")
    w.close()
    w.line("cuda.syncthreads()")
    w.close()
    w.open("if i0 < n0 and i1 < n1:")
    w.bind(head, "acc_")
    for k, n in enumerate(outs):
        w.store(f"o{k}", n, n.tensor_type.dtype)
    w.close()
    params = [f"o{k}" for k in range(len(outs))] + w.leaf_params() + w.size_params() + ["nk_"]
    return KernelSource(name, w.source(name, params), "matmul", tile * tile)


def product_only(body: Graph, head: Node) -> tuple[list[Node], list[Node]]:
    """(leaves, outputs) of the product-only kernel used when the epilogue has reductions."""
    return list(head.inputs), [head]


def result_dtype_ok(head: Node) -> bool:
    return head.tensor_type.dtype in (np.dtype(np.float32), np.dtype(np.float64))
