"""The CUDA backend: the fusion pass's kernel groups as ``numba.cuda.jit`` kernels.

Importing this package costs nothing and imports no numba.cuda. The backend's entry point is
:func:`jitgraph.backends.cuda.backend.compile` (with ``require()``), which the registry in ``jitgraph.backends.base``
imports on first use. numba-cuda (the ``cuda`` extra, ``pip install 'jitgraph[cuda]'``) is imported the first time a
graph is compiled with ``backend="cuda"``; without it, or without a GPU and without the simulator
(``NUMBA_ENABLE_CUDASIM=1``), that compile raises :class:`jitgraph.errors.BackendError` saying which and how to get past
it.

Modules: ``runtime`` (numba.cuda import, device properties, launch sizes, host/device transfers), ``emitters``
(one scalar CUDA expression per op), ``device_fns`` (NumPy-exact scalar helpers as device functions), ``codegen``
(kernel source for elementwise and reduction groups), ``matmul`` (tiled matmul with the epilogue in its store),
``cublas`` (matmul groups' products through cuBLASLt via nvmath-python, self-checked against the tiled kernel),
``pool`` (device buffers reused by size class), ``staging`` (page-locked buffers for host arguments), ``graphs``
(CUDA-graph recording and replay of calls on device arguments), ``backend`` (the CompiledGraph: runs the outer
graph, host fallbacks, mutations, explain data), ``selfcheck`` (one graph per kernel family for
``scripts/gpu_check.py``). The facts about device arrays that every layer needs are in
:mod:`jitgraph.device_arrays`.
"""
