"""The bytecode tracer: symbolic execution of CPython bytecode into jitgraph IR, with guards and a dispatch key.

The tracer imports no backend and no pass (``tests/test_layers.py``); the driver (``jitgraph.jit``) calls it.
Reading order:

* ``bytecode.py``  the only version-specific module: ``dis`` output -> a normalised instruction stream.
* ``values.py``    what the symbolic stack holds: ``TArray`` (storage + view path), NULL, bound methods.
* ``context.py``   per-trace state: the GraphBuilder, storage and writes through views, wrapping outside values,
  and the region state (``region_state.py``).
* ``frame.py``     the instruction loop and its opcode table; handlers by family in ``ops_stack``/``ops_control``/
  ``ops_arith``/``ops_calls`` (methods named ``op_<OPCODE>``).
* ``regions.py`` (for-range loops), ``branches.py`` (data-dependent if/while), ``symarrays.py`` (slices of
  symbolic length; lowered by ``symslice.py``): regions, called from the handlers; ``region_body.py`` is what the
  first two share.
* ``arrays.py``    operators, in-place updates and indexing of tracked arrays.
* ``calls.py``     inlining of user code, attribute loads, dispatch to the tables below.
* ``numpy_table.py`` (merging ``numpy_math``, ``numpy_shapes``, ``numpy_creation`` over ``numpy_base``) and
  ``builtins_table.py``: callables -> IR.
* ``guards.py`` / ``keys.py``  guards as readable text and compiled checks; the flat dispatch key.
* ``outputs.py``   the return value rebuilt from graph outputs, arguments and constants.
* ``trace.py``     one call in, a graph (or a break reason) and an output spec out.
"""

from jitgraph.tracer.trace import TraceResult, trace

__all__ = ["TraceResult", "trace"]
