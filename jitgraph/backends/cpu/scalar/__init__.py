"""Code generation for graphs with control-flow regions: the whole graph becomes one ``numba.njit`` driver.

Use :func:`compile_regions` (raises :class:`~jitgraph.errors.UnsupportedError` when some node has no emitter or
Numba rejects the source) or :func:`compile_or_eager`, which falls back to the reference interpreter and says why.

Layout: :mod:`.core` (the Emitter; scalar expressions come from the CPU backend's emitter table), :mod:`.scope`
(buffer bookkeeping), :mod:`.bounds` and :mod:`.depend` (what is proven about indices and iterations), the construct
emitters :mod:`.ops`, :mod:`.indexing`, :mod:`.regions`, :mod:`.groups` (the pipeline's ``fused`` kernel groups)
and the loop nests of :mod:`.loopnest`, gathered in :mod:`.table`; :mod:`.driver` compiles and runs the result.
"""

from __future__ import annotations

from jitgraph.backends.cpu.scalar.depend import independent
from jitgraph.backends.cpu.scalar.driver import (
    EagerFallback,
    RegionDriver,
    compile_or_eager,
    compile_regions,
    generate,
    numba_type,
)

__all__ = ["EagerFallback", "RegionDriver", "compile_or_eager", "compile_regions", "generate", "independent",
           "numba_type"]
