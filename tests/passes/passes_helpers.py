"""Shared helpers for the pass tests: build small graphs, feed them special values, compare eager results."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jitgraph.backends import eager
from jitgraph.ir import Graph, GraphBuilder, Node, TensorType

SPECIAL_FLOATS = (-0.0, 0.0, np.nan, np.inf, -np.inf, 1.5, -2.25, 3.0, 1e-30, -7e3, 0.5, -1.0)


def build(fn: Callable[..., Any], *types: TensorType, names: Sequence[str] = ()) -> Graph:
    """``fn(builder, *inputs)`` returns the output node(s), or ``(outputs, mutations)``."""
    b = GraphBuilder()
    inputs = [b.input(t, names[k] if k < len(names) else f"x{k}") for k, t in enumerate(types)]
    result = fn(b, *inputs)
    if isinstance(result, Node):
        return b.build([result])
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], list):
        return b.build(result[0], result[1])
    return b.build(list(result))


def f32(*shape: int) -> TensorType:
    return TensorType(shape, np.float32)


def f64(*shape: int) -> TensorType:
    return TensorType(shape, np.float64)


def i32(*shape: int) -> TensorType:
    return TensorType(shape, np.int32)


def golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def sample(t: TensorType, seed: int = 0) -> Any:
    """A value of type ``t`` that includes -0.0, NaN and +-inf (floats) or extreme values (ints)."""
    rng = np.random.default_rng(seed)
    if t.weak:
        return {"f": -0.0, "i": 3, "c": complex(-0.0, 1.0)}[t.dtype.kind]
    n = t.size
    if t.dtype.kind in "fc":
        base = np.resize(np.array(SPECIAL_FLOATS), n)
        values = np.where(rng.random(n) < 0.5, base, rng.standard_normal(n) * 4).astype(t.dtype)
        if t.dtype.kind == "c":
            values = values + 1j * np.resize(np.array(SPECIAL_FLOATS[::-1]), n).astype(t.dtype)
    elif t.dtype.kind == "b":
        values = rng.random(n) < 0.5
    else:
        info = np.iinfo(t.dtype)
        edge = np.resize(np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2], dtype=t.dtype), n)
        values = np.where(rng.random(n) < 0.3, edge, rng.integers(info.min // 2, info.max // 2, n, dtype=t.dtype))
    values = np.asarray(values).reshape(t.shape)
    if t.layout == "F":
        values = np.asfortranarray(values)
    return values


def args_for(graph: Graph, seed: int = 0) -> list[Any]:
    return [sample(i.type, seed + k) for k, i in enumerate(graph.inputs)]


def run_eager(graph: Graph, args: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Outputs and the caller's arguments after the call (on copies of ``args``)."""
    own = [np.array(a, copy=True, order="K") if isinstance(a, np.ndarray) else a for a in args]
    outputs = eager.run(graph, own)
    return outputs, own


def assert_identical(a: Any, b: Any, *, rtol: float = 0.0) -> None:
    """Same type, shape and dtype; same values bit for bit (NaN == NaN, -0.0 != +0.0) unless ``rtol`` > 0."""
    assert type(a) is type(b) or (isinstance(a, np.ndarray | np.generic) and isinstance(b, np.ndarray | np.generic))
    x, y = np.asarray(a), np.asarray(b)
    assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, x.dtype, y.shape, y.dtype)
    if x.dtype.kind in "fc":
        assert np.array_equal(np.isnan(x), np.isnan(y))
        zeros = (x == 0) & (y == 0)
        if x.dtype.kind == "f":
            assert np.array_equal(np.signbit(x[zeros]), np.signbit(y[zeros])), "signed zeros differ"
        if rtol:
            np.testing.assert_allclose(x, y, rtol=rtol, atol=rtol, equal_nan=True)
            return
    np.testing.assert_array_equal(x, y)


def assert_same_results(before: Graph, after: Graph, args: Sequence[Any] | None = None, *, rtol: float = 0.0,
                        seeds: Sequence[int] = (0, 1)) -> None:
    """Eager results (outputs and mutated arguments) of the two graphs agree on special-value inputs."""
    for seed in seeds:
        values = list(args) if args is not None else args_for(before, seed)
        out_a, args_a = run_eager(before, values)
        out_b, args_b = run_eager(after, values)
        assert len(out_a) == len(out_b)
        for x, y in zip(out_a + args_a, out_b + args_b):
            assert_identical(x, y, rtol=rtol)
        _assert_fresh(after, args_b, out_b)
        if args is not None:
            break


def _assert_fresh(graph: Graph, args: Sequence[Any], outputs: Sequence[Any]) -> None:
    """No output aliases an argument unless the graph returns that input (or a view of it) on purpose."""
    for out, node in zip(outputs, graph.outputs):
        if not isinstance(out, np.ndarray) or node.op == "input":
            continue
        if node.op in ("transpose", "reshape", "getitem", "broadcast_to"):
            continue
        assert not any(isinstance(a, np.ndarray) and np.shares_memory(out, a) for a in args)
