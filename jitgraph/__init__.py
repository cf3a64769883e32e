"""jitgraph: a JIT compiler for plain NumPy functions.

Importing the package loads only the public entry points and the bottom layer (errors, config, logs): the tracer,
passes, backends and driver load on the first compile, so that ``import jitgraph.ir`` (which runs this file first)
stays the IR alone. :class:`ExplainResult` and :class:`DifferentiationError` are found by name on first use, the
same way.
"""

import importlib
from typing import Any

from jitgraph.api import compile, grad, jvp, mark_dynamic, mark_static, value_and_grad, vjp
from jitgraph.config import warn_unknown_env
from jitgraph.errors import GraphBreakError, JitgraphError, UnsupportedError
from jitgraph.explain import explain
from jitgraph.logs import configure_from_env as _configure_logs

__version__ = "0.1.0"
__all__ = ["DifferentiationError", "ExplainResult", "GraphBreakError", "JitgraphError", "UnsupportedError",
           "__version__", "compile", "explain", "grad", "jvp", "mark_dynamic", "mark_static", "value_and_grad", "vjp"]

LAZY = {"ExplainResult": "jitgraph.inspect.result", "DifferentiationError": "jitgraph.autodiff.errors"}


def __getattr__(name: str) -> Any:
    """Public names of :data:`LAZY`, their module imported on first use."""
    if name not in LAZY:
        raise AttributeError(f"module 'jitgraph' has no attribute {name!r}")
    value = getattr(importlib.import_module(LAZY[name]), name)
    globals()[name] = value
    return value


_configure_logs()  # JITGRAPH_LOGS=graph,guards,recompiles,breaks,perf (see jitgraph/logs.py)
warn_unknown_env()  # a misspelt JITGRAPH_* variable would otherwise do nothing, silently
