"""The bytecode tracer: symbolic execution of CPython bytecode into jitgraph IR, with guards and a cache.

Reading order:

* ``bytecode.py``  the only version-specific module: ``dis`` output -> a normalised instruction stream.
* ``values.py``    what the symbolic stack holds: ``TArray`` (storage + view path), NULL, bound methods.
* ``context.py``   per-trace state: the GraphBuilder, storage and writes through views, wrapping outside values.
* ``frame.py``     the instruction loop; handlers by family in ``ops_stack``/``ops_control``/``ops_arith``/
  ``ops_calls`` (methods named ``op_<OPCODE>``).
* ``arrays.py``    operators, in-place updates, indexing and attributes of tracked arrays.
* ``calls.py``     inlining of user code, attribute loads, dispatch to the tables below.
* ``numpy_table.py`` (+ ``numpy_shapes.py``, ``numpy_creation.py``) and ``builtins_table.py``: callables -> IR.
* ``guards.py`` / ``keys.py``  guards as readable text and compiled checks; the flat dispatch key.
* ``trace.py``     one call in, a graph (or a break reason) and an output spec out.
* ``cache.py``     ``CompiledFunction``: dispatch, recompiles, fallback, statistics.
"""

from jitgraph.tracer import regions as _regions
from jitgraph.tracer.cache import BreakReason, CacheInfo, CompiledFunction
from jitgraph.tracer.trace import TraceResult, trace

_regions.enable()  # for-range loops, data-dependent if/while and symbolic slices become regions (issue 9)

__all__ = ["BreakReason", "CacheInfo", "CompiledFunction", "TraceResult", "trace"]
