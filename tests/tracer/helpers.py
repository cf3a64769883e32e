"""Compare a compiled call with the eager call: return values, types, dtypes, shapes and the caller's arguments."""

from __future__ import annotations

import copy
import types
import warnings
from typing import Any

import numpy as np

import jitgraph


def assert_same(expected: Any, actual: Any, rtol: float = 1e-5, atol: float = 1e-6, path: str = "result") -> None:
    assert type(actual) is type(expected), f"{path}: type {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, np.ndarray | np.generic):
        assert actual.dtype == expected.dtype, f"{path}: dtype {actual.dtype} != {expected.dtype}"
        assert np.shape(actual) == np.shape(expected), f"{path}: shape {np.shape(actual)} != {np.shape(expected)}"
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=path, equal_nan=True)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), f"{path}: keys {list(actual)} != {list(expected)}"
        for k in expected:
            assert_same(expected[k], actual[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(expected, list | tuple):
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, rtol, atol, f"{path}[{i}]")
    elif isinstance(expected, float):
        assert np.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True), f"{path}: {actual} != {expected}"
    elif hasattr(expected, "__dict__") and not isinstance(expected, type | types.FunctionType | types.ModuleType):
        assert_same(vars(expected), vars(actual), rtol, atol, f"vars({path})")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


# Tracer tests run the traced graph as captured (no passes), so they test the tracer alone; the full pipeline and
# the CPU backend run on the showcase programs in test_integration.py. A compiling backend takes lowered graphs
# only (fused and memory-planned), so there the tracer's graph gets just those two passes.
TRACER_ONLY = {"passes": ()}
LOWERING_ONLY = {"passes": ("fuse", "plan_memory")}


def tracer_only(backend: str) -> dict[str, Any]:
    """The fewest passes ``backend`` accepts: none for the eager interpreter, fuse and plan_memory otherwise."""
    return TRACER_ONLY if backend == "eager" else LOWERING_ONLY


def run_both(fn: Any, *args: Any, backend: str = "eager", graphs: int | None = 1, options: dict | None = None,
             **kwargs: Any) -> Any:
    """Call ``fn`` eagerly and compiled on deep copies of the arguments; compare results and arguments after.

    ``graphs=1`` also asserts the call was captured as one graph with no break (``None`` skips that check,
    ``0`` asserts a fallback). Returns the compiled function for further checks.
    """
    eager_args, eager_kwargs = copy.deepcopy((args, kwargs))
    comp_args, comp_kwargs = copy.deepcopy((args, kwargs))
    expected = fn(*eager_args, **eager_kwargs)
    compiled = jitgraph.compile(fn, backend=backend, **(tracer_only(backend) if options is None else options))
    actual = compiled(*comp_args, **comp_kwargs)
    assert_same(expected, actual)
    assert_same(eager_args, comp_args, path="args after the call")
    assert_same(eager_kwargs, comp_kwargs, path="kwargs after the call")
    if graphs is not None:
        reasons = [str(b) for b in compiled.break_reasons()]
        assert len(compiled.graphs()) == graphs, f"expected {graphs} graph(s); breaks: {reasons}"
        if graphs:
            assert not reasons, reasons
    # a second call hits the cache and still matches
    eager_args, eager_kwargs = copy.deepcopy((args, kwargs))
    comp_args, comp_kwargs = copy.deepcopy((args, kwargs))
    assert_same(fn(*eager_args, **eager_kwargs), compiled(*comp_args, **comp_kwargs), path="second call")
    assert_same(eager_args, comp_args, path="args after the second call")
    assert compiled.cache_info().hits >= 1
    return compiled


def outcome_type(fn: Any, *args: Any) -> tuple[Any, type[BaseException] | None]:
    """``(result, None)``, or ``(None, exception type)`` when the call raises; warnings silenced (the eager NumPy
    side warns where compiled code does not)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - the exception is the expected outcome
        return None, type(exc)
