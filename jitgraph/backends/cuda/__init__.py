"""The CUDA backend: the fusion pass's kernel groups as ``numba.cuda.jit`` kernels.

Importing this package costs nothing and imports no numba.cuda: it only registers the backend under ``"cuda"``.
numba-cuda (the ``cuda`` extra, ``pip install 'jitgraph[cuda]'``) is imported the first time a graph is compiled
with ``backend="cuda"``; without it, or without a GPU and without the simulator (``NUMBA_ENABLE_CUDASIM=1``), that
compile raises :class:`jitgraph.errors.BackendError` saying which and how to get past it.

Modules: ``runtime`` (numba.cuda import, device properties, launch sizes, host/device transfers), ``emitters``
(one scalar CUDA expression per op), ``device_fns`` (NumPy-exact scalar helpers as device functions), ``codegen``
(kernel source for elementwise and reduction groups), ``matmul`` (tiled matmul with the epilogue in its store),
``backend`` (the CompiledGraph: runs the outer graph, host fallbacks, mutations, explain data).
"""

from __future__ import annotations

from typing import Any

from jitgraph.backends.base import register_backend


def _load() -> Any:
    from jitgraph.backends.cuda import runtime

    runtime.require_cuda()  # raises BackendError naming what is missing
    from jitgraph.backends.cuda.backend import compile_graph

    return compile_graph


register_backend("cuda", _load)
