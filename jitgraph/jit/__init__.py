"""The JIT driver: what ``jitgraph.compile`` returns, and the stages of one compile.

Reading order:

* ``stages.py``       ``trace_stage`` -> :class:`Traced` -> ``lower()`` -> :class:`Lowered` -> ``compile()`` ->
  :class:`Compiled`, as in ``jax.stages``: each stage public and printable.
* ``function.py``     :class:`CompiledFunction`: dispatch on key and guards, recompiles and their limit, automatic
  dynamic ints, eager fallback and demotion, the per-function compile lock and pickling by reference; a miss
  compiles through the stages above.
* ``call_path.py``    how a call reaches its entry: the call function (the partial's target), the runners, then the
  generic key lookup; ``exclusive_guards.py`` lets a group call try the latest of entries that cannot both match.
* ``dispatch.py``     the generated runner of each entry: its layout, guards and aliasing checked in straight-line
  code before the generic key lookup (the warm path of a small call).
* ``dynamic_policy.py``  what a recompile makes dynamic: int arguments, array dimensions (``dynamic=``,
  ``mark_dynamic``), size variants.
* ``entries.py``      a cache entry (the stages it was made from) and the hit/miss counters.
* ``effects.py``      what an entry does when its graph raises, so effects happen in eager NumPy's order.
* ``breaks.py``, ``refusals.py``  why a call runs eagerly, and where eager is refused (fullgraph, device arrays).
* ``backend_choice.py``  which backend; device arrays need cuda.
* ``explain_builder.py`` the one builder of ``ExplainResult``.
* ``split_run.py``    a function split around eager calls (print, logging, np.random): segment graphs run in order.
* ``resume.py``, ``resume_chain.py``  data-dependent breaks (``x[mask]``, ``np.unique``, a branch on a traced
  number, an early return): the graph up to the break, the instruction eagerly, then the rest traced again for the
  value observed (a guarded child per value, at most ``cache_limit`` per cut).
* ``device_outputs.py``  the CUDA converters for returned views of device arrays (the tracer imports no backend).
* ``call_site.py``    the user's ``file:line`` of a call, for recompile reasons.
* ``grad.py``, ``vjp.py``  ``grad``/``value_and_grad``/``vjp``/``jvp``: a CompiledFunction whose trace step also
  differentiates the graph (``jitgraph.autodiff``), and ``vjp``'s forward/backward split.

The driver sits above the tracer, the passes and the backends (it calls all three) and below ``jitgraph.api``.
"""

from jitgraph.jit.backend_choice import resolve_backend
from jitgraph.jit.breaks import BreakReason
from jitgraph.jit.call_site import call_site
from jitgraph.jit.entries import CacheInfo, Entry
from jitgraph.jit.function import CompiledFunction
from jitgraph.jit.stages import Compiled, Lowered, Traced

__all__ = ["BreakReason", "CacheInfo", "Compiled", "CompiledFunction", "Entry", "Lowered", "Traced", "call_site",
           "resolve_backend"]
