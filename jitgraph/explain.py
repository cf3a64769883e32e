"""``jitgraph.explain(fn)(*args, **kwargs)``: what the tracer captured for one call, as plain data.

Mirrors ``torch._dynamo.explain``: the call runs once (through a fresh compiled wrapper, so side effects happen
once, as usual) and the result lists the graphs, the break reasons with the user's ``file:line``, the guards and
per-phase compile times. The result is built by the same builder as ``CompiledFunction.explain()``
(``jitgraph.jit.explain_builder``) from the stages the call compiled through; the data and its views live in
:mod:`jitgraph.inspect`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jitgraph.api import layer
from jitgraph.config import check_options

if TYPE_CHECKING:  # the annotation only; the driver builds it and is loaded on first use (see api.LAYERS)
    from jitgraph.inspect.result import ExplainResult

__all__ = ["explain"]


def explain(fn: Callable[..., Any], **options: Any) -> Callable[..., ExplainResult]:
    """Return a function that calls ``fn`` once under a fresh compiled wrapper and reports what happened.

    ``options`` are those of ``jitgraph.compile`` (checked the same way); ``fullgraph`` is ignored, since a break
    is what explain reports. A compiled function passed in lends its backend and options (its cache is left
    alone).
    """
    options = check_options(options, where="jitgraph.explain")
    options.pop("fullgraph", None)
    CompiledFunction = layer("driver").CompiledFunction
    target = fn
    if isinstance(fn, CompiledFunction):
        target = fn.fn
        options = {"backend": fn.backend, "cache_limit": fn.cache_limit, **fn.options, **options}
    own = {k: options.pop(k) for k in ("backend", "cache_limit") if k in options}

    def run(*args: Any, **kwargs: Any) -> ExplainResult:
        compiled = CompiledFunction(target, **own, options=options)
        output = compiled(*args, **kwargs)
        return compiled.explain(output=output)

    return run
