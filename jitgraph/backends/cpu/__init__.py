"""The CPU backend: fused loop-nest kernels compiled with Numba, BLAS through NumPy, and a disk cache.

The backend's entry point is :func:`jitgraph.backends.cpu.backend.compile` (the registry in
``jitgraph.backends.base`` imports it on first use). Options: ``cache`` (bool, default True: kernels are stored
under ``$JITGRAPH_CACHE_DIR``), ``math`` (``"fast"``: the vectorisable math library, the default; ``"libm"``:
scalar libm calls, bit-exact with NumPy but slower), ``reuse_outputs``.

Graphs with control-flow regions (``loop``/``while``/``cond``) go to the region driver in
:mod:`jitgraph.backends.cpu.scalar`; all others are run by a generated driver (:mod:`jitgraph.backends.cpu.program`)
that calls the fused kernels the pass pipeline planned.
"""
