"""Shared helpers for the control-flow tests: small graph-building shorthands and a compiled-vs-eager check."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from typing import Any

import numpy as np

from jitgraph.backends import eager
from jitgraph.ir.graph import Graph, GraphBuilder, Node
from jitgraph.ir.ops.indexing import split_index
from jitgraph.ir.verifier import verify

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_benchmarks() -> Any:
    """benchmarks/loops.py holds the seven kernels and the graphs for them; tests reuse both."""
    if "bench_loops" in sys.modules:
        return sys.modules["bench_loops"]
    spec = importlib.util.spec_from_file_location("bench_loops", ROOT / "benchmarks" / "loops.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["bench_loops"] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def at(b: GraphBuilder, x: Node, *idx: Node | int | slice) -> Node:
    ops, spec = split_index(idx, lambda i: isinstance(i, Node))
    return b.op("getitem", x, *ops, spec=spec)


def put(b: GraphBuilder, x: Node, value: Node, *idx: Node | int | slice) -> Node:
    ops, spec = split_index(idx, lambda i: isinstance(i, Node))
    return b.op("setitem", x, value, *ops, spec=spec)


def copies(args: list[Any]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def check_against_eager(graph: Graph, driver: Any, args: list[Any]) -> list[Any]:
    """Run the compiled driver and the reference interpreter on copies; outputs, dtypes and mutated inputs agree."""
    verify(graph)
    want_args, got_args = copies(args), copies(args)
    want = eager.run(graph, want_args)
    got = driver(got_args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w) or (isinstance(g, np.ndarray) and isinstance(w, np.ndarray)), (type(g), type(w))
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert np.asarray(g).shape == np.asarray(w).shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)
    for g, w in zip(got_args, want_args):
        if isinstance(w, np.ndarray):  # float tolerance: Numba's libm and NumPy's may differ in the last ulp
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    return got
