"""Turning kernel source into launchable numba.cuda kernels, once per process per source text.

The source is executed in a fresh module namespace (``device_fns.namespace``) and registered in ``linecache`` under
a readable name, so tracebacks, ``inspect.getsource`` and the simulator's shared-memory bookkeeping (which keys
allocations by file and line) all see it. Kernels are cached by their source: two graphs with the same group
share one compiled kernel. ``assign_kernel`` is the one hand-written template: a broadcasting, casting copy that
writes mutation values into device arguments.
"""

from __future__ import annotations

import hashlib
import linecache
from typing import Any

import numpy as np

from jitgraph.backends.cuda import device_fns
from jitgraph.backends.cuda import emitters as em
from jitgraph.backends.cuda.runtime import cuda

_KERNELS: dict[str, Any] = {}


def kernel_from_source(name: str, source: str) -> Any:
    """The ``cuda.jit`` kernel defined by ``source`` (a function named ``name``)."""
    found = _KERNELS.get(source)
    if found is not None:
        return found
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<jitgraph-cuda {name} {digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = device_fns.namespace()
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own generated source
    kernel = cuda().jit(namespace[name])
    _KERNELS[source] = kernel
    return kernel


def assign_source(dst_ndim: int, src_ones: tuple[bool, ...], src_dtype: np.dtype, dst_dtype: np.dtype
                  ) -> tuple[str, str]:
    """Source of ``dst[...] = src`` with NumPy broadcasting (src right-aligned; ``src_ones`` marks its size-1 dims,
    which are broadcast) and an unsafe cast; ``src_ones == ()`` means a 0-d source passed as one element."""
    pattern = "".join("b" if one else "x" for one in src_ones) or "s"
    name = f"assign_{dst_ndim}d_from_{pattern}_{np.dtype(src_dtype).name}_to_{np.dtype(dst_dtype).name}"
    src_ndim = len(src_ones)
    lines = [f"def {name}(dst, src):"]
    lines.append("    total = 1")
    for a in range(dst_ndim):
        lines.append(f"    total *= dst.shape[{a}]")
    lines.append("    for flat in range(cuda.grid(1), total, cuda.gridsize(1)):")
    lines.append("        t = flat")
    for a in reversed(range(dst_ndim)):
        lines.append(f"        i{a} = t % dst.shape[{a}]")
        lines.append(f"        t = t // dst.shape[{a}]")
    shift = dst_ndim - src_ndim
    src_idx = ["0" if one else f"i{j + shift}" for j, one in enumerate(src_ones)] or ["0"]
    dst_idx = [f"i{a}" for a in range(dst_ndim)] or ["0"]
    value = em.cast(f"src[{', '.join(src_idx)}]", dst_dtype, src_dtype)
    lines.append(f"        dst[{', '.join(dst_idx)}] = {value}")
    return name, "\n".join(lines) + "\n"


def assign(dst: Any, src: Any) -> None:
    """Write device array ``src`` (broadcast, cast) into device array ``dst``; 0-d arrays travel as 1-element."""
    from jitgraph.backends.cuda.runtime import device_info, grid_stride

    d = dst if dst.ndim else dst.reshape(1)
    s = src if src.ndim else src.reshape(1)
    ones = tuple(n == 1 for n in src.shape)
    name, source = assign_source(d.ndim, ones, src.dtype, dst.dtype)
    kernel = kernel_from_source(name, source)
    total = int(np.prod(d.shape))
    if total == 0:
        return
    blocks, threads = grid_stride(total, device_info())
    kernel[blocks, threads](d, s)
