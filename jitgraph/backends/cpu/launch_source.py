"""The source of a launch's ``run(ops)``: the straight-line preparation of one planned launch of a fused group.

A :class:`~jitgraph.backends.cpu.launch.GroupKernel` plans a launch per operand layout (views, outputs, chunks);
this writes what that plan does as one small Python function -- the BLAS product first where the group has one,
the operands' views, the outputs taken from reused buffers or written into the caller's, the kernel called per
chunk on the thread pool -- so a later call with that layout runs no planning logic at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jitgraph.backends.cpu import threads
from jitgraph.backends.cpu.buffers import OutputSlot
from jitgraph.ir.graph import Node
from jitgraph.ir.ops import OPS


def run_function_source(kernel: Any, operands: Sequence[Any], sizes: tuple[int, ...], views: list, outs: list,
                        inplace: Mapping[int, int], targets: list[str | None], chunks: list[tuple[int, int]],
                        alias: Mapping[int, int]) -> tuple[str, dict[str, Any]]:
    """A small straight-line Python function doing exactly this launch's preparation (no per-call logic), for the
    launch of ``kernel`` (a :class:`~jitgraph.backends.cpu.launch.GroupKernel`) planned for these operands.

    With several chunks, all but the first go to the thread pool and the calling thread runs the first; the
    kernels release the GIL. ``run(ops, True)`` runs the chunks one after the other (the first call, which
    compiles or loads the kernel, does that)."""
    ns: dict[str, Any] = {"np": np, "POOL": threads.POOL if len(chunks) > 1 else None}
    lines = ["def run(ops, serial=False):"]
    body_index = {n: k for k, n in enumerate(kernel.inputs)}
    prod_shape = None
    if kernel.head is not None:
        ns["BLAS"] = OPS[kernel.head.op].impl
        a, b = (body_index[i] for i in kernel.head.inputs)
        if kernel.head.op == "matmul" and kernel.reuse_outputs:
            # The product goes into a buffer reused across calls too (a fresh one page-faults, see buffers.py).
            ns["PRODUCT"] = OutputSlot(kernel.head.type.shape, kernel.head.type.dtype)
            lines.append(f"    p = BLAS(ops[{a}], ops[{b}], out=PRODUCT.take())")
        else:
            lines.append(f"    p = BLAS(ops[{a}], ops[{b}])")
        prod_shape = kernel.head.type.shape
    args = [str(s) for s in sizes]
    for k, ((value, _), (vshape, perm, fshape)) in enumerate(zip(kernel.uses, views)):
        src = "p" if value is kernel.head else f"ops[{body_index[value]}]"
        shape = prod_shape if value is kernel.head else operands[body_index[value]].shape
        expr = src
        if tuple(shape) != vshape:
            expr += f".reshape({vshape!r})"
        if perm is not None:
            expr += f".transpose({perm!r})"
        if perm is not None or fshape != vshape:
            expr += f".reshape({fshape!r})"
        if expr != src:
            lines.append(f"    a{k} = {expr}")
            args.append(f"a{k}")
        else:
            args.append(src)
    for n in kernel.scalar_inputs:
        j = body_index[n]
        args.append(f"ops[{j}][()]" if isinstance(operands[j], np.ndarray) else f"ops[{j}]")
    results = {}
    for k, (o, (oshape, perm, inv, fshape, alloc)) in enumerate(zip(kernel.kernel_outputs, outs)):
        ns[f"D{k}"] = o.type.dtype
        if k in alias:  # the kernel stores through the input's own argument: nothing to pass
            results[o] = "p" if kernel.uses[alias[k]][0] is kernel.head else f"ops[{inplace[k]}]"
            continue
        if kernel.reuse_outputs:  # a buffer the caller dropped since an earlier call (see buffers.py)
            ns[f"S{k}"] = OutputSlot(alloc, o.type.dtype)
            fresh = f"S{k}.take()"
        else:
            fresh = f"np.empty({alloc!r}, D{k})"
        target = targets[k]
        if target is not None:
            # The caller's buffer (or the BLAS product) itself, when writeable.
            lines.append(f"    b{k} = {target} if {target}.flags.writeable else None")
            kview = f"b{k}" + (f".reshape({oshape!r})" if o.type.shape != oshape else "")
            if perm is not None:
                kview += f".transpose({perm!r}).reshape({fshape!r})"
            elif fshape != oshape:
                kview += f".reshape({fshape!r})"
            lines.append(f"    o{k} = {kview} if b{k} is not None else {fresh}")
            lines.append(f"    r{k} = b{k} if b{k} is not None else " + _result_expr(k, o, inv, alloc, fshape))
        else:
            lines.append(f"    o{k} = {fresh}")
            lines.append(f"    r{k} = " + _result_expr(k, o, inv, alloc, fshape))
            if fshape != alloc:
                lines.append(f"    o{k} = o{k}.reshape({fshape!r})")
        args.append(f"o{k}")
        results[o] = f"r{k}"
    if kernel.head is not None:
        results[kernel.head] = "p"
    call = ", ".join(args)
    if len(chunks) == 1:
        lo, hi = chunks[0]
        lines.append(f"    KERNEL({lo}, {hi}, {call})")
    else:
        lines.append("    if serial:")
        lines += [f"        KERNEL({lo}, {hi}, {call})" for lo, hi in chunks]
        lines.append("    else:")
        lines.append("        futures = [" + ", ".join(f"POOL.submit(KERNEL, {lo}, {hi}, {call})"
                                                for lo, hi in chunks[1:]) + "]")
        lines.append(f"        KERNEL({chunks[0][0]}, {chunks[0][1]}, {call})")
        lines.append("        for f in futures:")
        lines.append("            f.result()")
    lines.append(f"    return [{', '.join(results[o] for o in kernel.body.outputs)}]")
    return "\n".join(lines) + "\n", ns


def _result_expr(k: int, o: Node, inv: tuple[int, ...] | None, alloc: tuple[int, ...],
                 fshape: tuple[int, ...]) -> str:
    """What output ``k``'s buffer ``o{k}`` (allocated as ``alloc``) returns as: transposed back by ``inv`` and
    reshaped to the value's shape where the kernel's layout differs."""
    expr = f"o{k}"
    if inv is not None:
        expr += f".transpose({inv!r})"
    if (tuple(alloc[i] for i in inv) if inv is not None else alloc) != o.type.shape:
        expr += f".reshape({o.type.shape!r})"
    return expr
