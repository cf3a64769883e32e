"""The public entry point: ``jitgraph.compile``.

``@compile`` and ``@compile(backend=..., fullgraph=..., cache_limit=...)`` both work, on functions, on bound
methods, on methods inside a class body and on callable objects. On a Python whose bytecode the tracer does not
know, the function is returned as a wrapper that runs eagerly, after one warning.
"""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Callable
from typing import Any

from jitgraph.errors import UnsupportedPythonError
from jitgraph.tracer.bytecode import check_version
from jitgraph.tracer.cache import CompiledFunction

log = logging.getLogger("jitgraph")


def compile(fn: Callable[..., Any] | None = None, *, backend: str | None = None, fullgraph: bool = False,
            cache_limit: int = 8, **options: Any) -> Any:
    """Compile ``fn`` on first call; later calls whose guards pass reuse the compiled graph.

    ``backend``: "eager" (reference interpreter), "cpu" (default once available) or "cuda". With "cuda", GPU
    device arrays (Numba, or anything exposing ``__cuda_array_interface__``) are used in place and results come
    back as Numba device arrays; host NumPy arguments are copied to the device and back on every call. Device
    arguments compile separately from host ones, need ``backend="cuda"``, and never fall back to eager NumPy: what
    would run eagerly raises a :class:`jitgraph.JitgraphError` instead. ``fullgraph=True``
    raises :class:`jitgraph.GraphBreakError` instead of falling back to eager. ``cache_limit`` is the number of
    guard sets (shapes, dtypes, flags) compiled for one function before it runs eagerly for good.
    """
    if fn is None:
        return functools.partial(compile, backend=backend, fullgraph=fullgraph, cache_limit=cache_limit, **options)
    try:
        check_version()
    except UnsupportedPythonError as exc:
        if fullgraph:
            raise
        warnings.warn(f"{exc.message}; {getattr(fn, '__qualname__', fn)} runs eagerly", RuntimeWarning,
                      stacklevel=2)
        return _eager_wrapper(fn)
    if isinstance(fn, CompiledFunction):
        return fn
    return CompiledFunction(fn, backend=backend, fullgraph=fullgraph, cache_limit=cache_limit, options=options)


def _eager_wrapper(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def eager(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return eager
