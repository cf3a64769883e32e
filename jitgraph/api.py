"""The public entry point: ``jitgraph.compile``.

``@compile`` and ``@compile(backend=..., fullgraph=..., cache_limit=...)`` both work, on functions, on bound
methods, on methods inside a class body and on callable objects. Every option is checked against
:data:`jitgraph.config.OPTIONS` before anything runs: a misspelt one raises ``TypeError`` with a did-you-mean
instead of silently taking its default. On a Python whose bytecode the tracer does not know, the function is
returned as a wrapper that runs eagerly, after one warning.

The driver (and the tracer, passes and backends under it) load on the first ``compile``, not at ``import
jitgraph``: every ``import jitgraph.<layer>`` runs this package's ``__init__`` first, and ``import jitgraph.ir``
must not pull in the layers above it (tests/test_layers.py). They are found by name in :data:`LAYERS`.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from jitgraph.config import check_options
from jitgraph.errors import UnsupportedPythonError

LAYERS = {"driver": "jitgraph.jit", "bytecode": "jitgraph.tracer.bytecode", "grad": "jitgraph.jit.grad",
          "vjp": "jitgraph.jit.vjp", "dims": "jitgraph.tracer.dynamic_ints"}


def layer(name: str) -> ModuleType:
    """The module of :data:`LAYERS` called ``name``, imported on first use."""
    return importlib.import_module(LAYERS[name])


def compile(fn: Callable[..., Any] | None = None, *, backend: str | None = None, fullgraph: bool = False,
            cache_limit: int = 8, **options: Any) -> Any:
    """Compile ``fn`` on first call; later calls whose guards pass reuse the compiled graph.

    ``backend``: "eager" (reference interpreter), "cpu" (default once available) or "cuda". With "cuda", GPU
    device arrays (Numba, or anything exposing ``__cuda_array_interface__``) are used in place and results come
    back as Numba device arrays; host NumPy arguments are copied to the device and back on every call. Device
    arguments compile separately from host ones, need ``backend="cuda"``, and never fall back to eager NumPy: what
    would run eagerly raises a :class:`jitgraph.JitgraphError` instead. ``fullgraph=True``
    raises :class:`jitgraph.GraphBreakError` instead of falling back to eager. ``cache_limit`` is the number of
    guard sets (shapes, dtypes, flags) compiled for one function before it runs eagerly for good. ``dynamic``, as
    in ``torch.compile``: None (automatic: an int argument or array dimension whose change caused a recompile becomes
    dynamic), True (dynamic from the first call) or False (always specialise); see :func:`mark_dynamic` and
    :mod:`jitgraph.jit.dynamic_policy`. The other options (``math=``, ``reuse_outputs=``, ...) are listed in
    :data:`jitgraph.config.OPTIONS`.

    ``compile(f).trace(*args)`` gives the first stage of a compile (see :mod:`jitgraph.jit.stages`).
    """
    check_options({"backend": backend, "fullgraph": fullgraph, "cache_limit": cache_limit, **options})
    if fn is None:
        return functools.partial(compile, backend=backend, fullgraph=fullgraph, cache_limit=cache_limit, **options)
    try:
        layer("bytecode").check_version()
    except UnsupportedPythonError as exc:
        if fullgraph:
            raise
        warnings.warn(f"{exc.message}; {getattr(fn, '__qualname__', fn)} runs eagerly", RuntimeWarning,
                      stacklevel=2)
        return _eager_wrapper(fn)
    driver = layer("driver")
    if isinstance(fn, driver.CompiledFunction):
        return fn
    return driver.CompiledFunction(fn, backend=backend, fullgraph=fullgraph, cache_limit=cache_limit, options=options)


def mark_dynamic(x: Any, dim: int | Sequence[int]) -> None:
    """Mark dimension(s) ``dim`` of the NumPy array ``x`` dynamic, as ``torch._dynamo.mark_dynamic``: a compiled
    function it is passed to treats new sizes there as the same kind of call (``compile(dynamic=...)``,
    :mod:`jitgraph.jit.dynamic_policy`), from its next cache miss on. NumPy arrays take no attributes, so the mark is kept in a
    table by the array's identity and dropped when the array is freed; a view or copy of ``x`` is not marked."""
    layer("dims").mark(x, dim, dynamic=True)


def mark_static(x: Any, dim: int | Sequence[int]) -> None:
    """Mark dimension(s) ``dim`` of ``x`` static: every new size there is a recompile, even with
    ``compile(dynamic=True)``. Replaces a ``mark_dynamic`` of the same dimension."""
    layer("dims").mark(x, dim, dynamic=False)


def _eager_wrapper(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def eager(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return eager


# ---- autodiff (issue 22): the bodies live in jitgraph/jit/grad.py -----------------------------------------------
def _gradient(kind: str, fn: Callable[..., Any] | None, argnums: int | tuple[int, ...], has_aux: bool,
              backend: str | None, cache_limit: int, options: dict[str, Any]) -> Any:
    check_options({"backend": backend, "cache_limit": cache_limit, **options})
    if fn is None:
        return functools.partial(_gradient, kind, argnums=argnums, has_aux=has_aux, backend=backend,
                                 cache_limit=cache_limit, options=options)
    grad_layer = layer("grad")
    spec = grad_layer.GradSpec(kind, argnums, has_aux)
    return grad_layer.GradFunction(fn, spec, backend=backend, cache_limit=cache_limit, options=options)


def grad(fn: Callable[..., Any] | None = None, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
         backend: str | None = None, cache_limit: int = 8, **options: Any) -> Any:
    """The gradient of ``fn`` (which returns a float scalar, or ``(loss, aux)`` with ``has_aux``) with respect to
    positional argument(s) ``argnums``, as ``jax.grad``, compiled: forward and backward run as one graph.
    Arguments may be pytrees (dicts, lists, tuples of arrays); the gradient has the argument's structure. With
    ``has_aux`` it returns ``(gradient, aux)``. Integer and boolean arguments have no gradient (an error if asked
    for), nor has an argument ``fn`` writes in place. See README "Autodiff"."""
    return _gradient("grad", fn, argnums, has_aux, backend, cache_limit, options)


def value_and_grad(fn: Callable[..., Any] | None = None, argnums: int | tuple[int, ...] = 0, has_aux: bool = False,
                   *, backend: str | None = None, cache_limit: int = 8, **options: Any) -> Any:
    """As :func:`grad`, returning ``(value, gradient)`` (``((value, aux), gradient)`` with ``has_aux``), from the
    same compiled graph."""
    return _gradient("value_and_grad", fn, argnums, has_aux, backend, cache_limit, options)


def vjp(fn: Callable[..., Any], *primals: Any, has_aux: bool = False, backend: str | None = None,
        **options: Any) -> tuple:
    """``(out, vjp_fn)`` as ``jax.vjp`` (``(out, vjp_fn, aux)`` with ``has_aux``): ``vjp_fn(cotangent)`` returns
    a tuple with one gradient per primal; the cotangent has the structure of ``out``."""
    check_options({"backend": backend, **options})
    return layer("vjp").vjp(fn, primals, has_aux, backend, options)


def jvp(fn: Callable[..., Any], primals: Any, tangents: Any, *, backend: str | None = None, **options: Any) -> tuple:
    """``(out, tangent_out)`` as ``jax.jvp``: the directional derivative of ``fn`` at ``primals`` along
    ``tangents`` (tuples, one tangent per primal, each of its primal's structure)."""
    check_options({"backend": backend, **options})
    return layer("vjp").jvp(fn, primals, tangents, backend, options)
