"""jitgraph: a JIT compiler for plain NumPy functions."""

from jitgraph.api import compile
from jitgraph.errors import GraphBreakError, JitgraphError, UnsupportedError
from jitgraph.explain import ExplainResult, explain
from jitgraph.logs import configure_from_env as _configure_logs

__version__ = "0.1.0"
__all__ = ["ExplainResult", "GraphBreakError", "JitgraphError", "UnsupportedError", "__version__", "compile",
           "explain"]

_configure_logs()  # JITGRAPH_LOGS=graph,guards,recompiles,breaks,perf (see jitgraph/logs.py)
