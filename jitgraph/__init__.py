"""jitgraph: a JIT compiler for plain NumPy functions."""

from jitgraph.api import compile
from jitgraph.errors import GraphBreakError, JitgraphError, UnsupportedError
from jitgraph.explain import ExplainResult, explain

__version__ = "0.1.0"
__all__ = ["ExplainResult", "GraphBreakError", "JitgraphError", "UnsupportedError", "__version__", "compile",
           "explain"]
