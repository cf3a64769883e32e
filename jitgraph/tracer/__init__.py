"""The bytecode tracer: symbolic execution of CPython bytecode into jitgraph IR, with guards and a cache."""

from jitgraph.tracer.cache import BreakReason, CacheInfo, CompiledFunction
from jitgraph.tracer.trace import TraceResult, trace

__all__ = ["BreakReason", "CacheInfo", "CompiledFunction", "TraceResult", "trace"]
