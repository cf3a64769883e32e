"""jitgraph: a JIT compiler for plain NumPy functions."""

from jitgraph.errors import GraphBreakError, JitgraphError, UnsupportedError

__version__ = "0.1.0"
__all__ = ["GraphBreakError", "JitgraphError", "UnsupportedError", "__version__"]
