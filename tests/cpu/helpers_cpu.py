"""Shared test helpers: compile a graph on the CPU backend, compare with the eager interpreter."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from jitgraph.backends import eager
from jitgraph.backends.base import get_backend
from jitgraph.ir import Graph
from jitgraph.passes import run_pipeline

LOWER_ONLY = ("fuse", "plan_memory")  # the graph as the test built it, fused and memory-planned: no simplification


def lower(graph: Graph) -> Graph:
    """What the CPU backend takes: the graph through the lowering passes (a backend runs no pass itself)."""
    return run_pipeline(graph, {"passes": LOWER_ONLY})[0]


def cpu_compile(graph: Graph, **options: Any) -> Any:
    return get_backend("cpu")(lower(graph), options)


def tol(dtype: np.dtype) -> dict[str, float]:
    return {"rtol": 2e-5, "atol": 1e-6} if np.dtype(dtype) == np.float32 else {"rtol": 1e-11, "atol": 1e-13}


def check_against_eager(graph: Graph, args: Sequence[Any] | Callable[[], Sequence[Any]], compiled: Any = None,
                        **options: Any) -> list[Any]:
    """Run compiled and eager on fresh ``args`` (a list is copied, a callable is called twice, which keeps strided
    views strided); outputs and mutated inputs must agree (NaN == NaN)."""
    compiled = compiled or cpu_compile(graph, **options)
    if callable(args):
        mine, ref = list(args()), list(args())
    else:
        mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = compiled(mine)
    want = eager.run(graph, ref)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, equal_nan=True, **tol(w.dtype))
        else:
            np.testing.assert_array_equal(g, w)
    for a, b in zip(mine, ref):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, equal_nan=True, **tol(a.dtype)) if a.dtype.kind == "f" \
                else np.testing.assert_array_equal(a, b)
    return got


@pytest.fixture
def cost_model_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's conftest sets JITGRAPH_SMALL_KERNELS=1 (kernel tests use tiny arrays); with this, the default
    cost model (a test module uses it with ``pytestmark = pytest.mark.usefixtures("cost_model_on")``)."""
    monkeypatch.setenv("JITGRAPH_SMALL_KERNELS", "0")


def backend_text(compiled: Any) -> str:
    """A compiled function's explain text up to its guards: what the backend said it did."""
    return str(compiled.explain()).split("Guards:")[0]


def driver_source(compiled: Any) -> str:
    """The generated driver of the compiled function's newest entry."""
    return compiled.entries[-1].compiled.driver_source
