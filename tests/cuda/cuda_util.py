"""Helpers for the CUDA tests: build small graphs, run them eagerly and on the CUDA backend, compare.

Graphs are built with GraphBuilder and compiled through the fusion pass (what the pipeline feeds the backend), so
these tests do not depend on the tracer. Compiled graphs are cached per test module by the callers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jitgraph.backends import eager
from jitgraph.backends.base import get_backend
from jitgraph.ir import GraphBuilder, TensorType
from jitgraph.ir.graph import Graph
from jitgraph.ir.verifier import verify
from jitgraph.passes import run_pipeline

LOWER_ONLY = {"passes": ("fuse", "plan_memory")}  # lower as the graph was built: no simplification


def t(shape: Sequence[int], dtype: str = "float32") -> TensorType:
    return TensorType(tuple(shape), np.dtype(dtype))


def build(inputs: Sequence[tuple[Sequence[int], str]], fn: Callable[..., Any], mutate: Sequence[int] = ()) -> Graph:
    """``fn(builder, *input_nodes)`` returns outputs (a node or a tuple); ``mutate`` lists ``(index, node)`` via a
    dict returned as the last tuple element when given."""
    b = GraphBuilder()
    nodes = [b.input(t(shape, dtype), f"x{k}") for k, (shape, dtype) in enumerate(inputs)]
    result = fn(b, *nodes)
    if isinstance(result, dict):
        return b.build(result.get("outputs", []), result.get("mutations", []))
    outs = result if isinstance(result, tuple) else (result,)
    return b.build(outs)


def compile_cuda(graph: Graph) -> Any:
    fused, _ = run_pipeline(graph, LOWER_ONLY)
    verify(fused)
    return get_backend("cuda")(fused, {})


def _copy(a: Any) -> Any:
    return a.copy() if isinstance(a, np.ndarray) else a


def host(value: Any) -> Any:
    if hasattr(value, "copy_to_host"):
        return value.copy_to_host()
    return value


def assert_matches_eager(graph: Graph, args: Sequence[Any], compiled: Any = None, *, device: bool = False,
                         rtol: float = 2e-5, atol: float = 1e-6) -> Any:
    """Run ``graph`` eagerly and on CUDA (host or device arguments); outputs and mutated inputs must agree."""
    from numba import cuda

    compiled = compiled or compile_cuda(graph)
    want_args = [_copy(a) for a in args]
    want = eager.run(graph, want_args)
    got_args = [cuda.to_device(a) if device and isinstance(a, np.ndarray) and a.ndim else _copy(a) for a in args]
    got = compiled(got_args)
    assert len(got) == len(want)
    for w, g in zip(want, got):
        g = host(g)
        assert np.shape(g) == np.shape(w)
        assert np.asarray(g).dtype == np.asarray(w).dtype, (np.asarray(g).dtype, np.asarray(w).dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    for w, g in zip(want_args, got_args):
        np.testing.assert_allclose(host(g), w, rtol=rtol, atol=atol)
    return compiled


def rand(shape: Sequence[int], dtype: str = "float32", seed: int = 0, low: float = -2.0, high: float = 2.0
         ) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(low) * 5, int(high) * 5 + 1, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)
