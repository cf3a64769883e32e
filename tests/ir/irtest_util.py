"""Shared helpers for the IR tests: sample arrays, one-op graphs, and "same as NumPy" assertions.

The module name is unusual on purpose: tests/ has no ``__init__.py``, so helper modules are imported by basename and
must not collide with other test folders' helpers.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from jitgraph.backends import eager
from jitgraph.errors import TypeInferenceError
from jitgraph.ir import Graph, GraphBuilder, Node, type_of, verify

DTYPES: tuple[np.dtype, ...] = tuple(np.dtype(d) for d in ("float32", "float64", "int32", "int64", "bool"))
WEAK_SCALARS: tuple[Any, ...] = (3, -1.5)  # Python int and float: NEP 50 "weak" operands

LAYOUTS = ("C", "T", "S")  # contiguous, transposed view, strided slice with steps


def sample(shape: Sequence[int], dtype: np.dtype, rng: np.random.Generator, layout: str = "C",
           special: bool = True) -> np.ndarray:
    """An array of ``shape``/``dtype`` laid out as asked: ``T`` is a transposed view, ``S`` a stepped slice.

    Integers include the extremes of their range (so overflow wrap-around is exercised) and floats include
    0, -0, inf and nan when ``special`` is set.
    """
    shape = tuple(shape)
    if layout == "T":
        return sample(shape[::-1], dtype, rng, "C", special).T
    if layout == "S":
        big = sample(tuple(2 * d + 1 for d in shape), dtype, rng, "C", special)
        return big[tuple(slice(1, None, 2) for _ in shape)] if shape else big
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype.kind == "b":
        flat = rng.random(n) < 0.5
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        flat = rng.integers(-9, 10, n).astype(dtype)
        if special and n >= 4:
            flat[rng.choice(n, 2, replace=False)] = [info.max, info.min]
    else:
        flat = (rng.standard_normal(n) * 3).astype(dtype)
        if special and n >= 6:
            flat[rng.choice(n, 4, replace=False)] = [0.0, -0.0, np.inf, np.nan]
    return flat.reshape(shape)


def build_one(name: str, args: Sequence[Any], attrs: dict[str, Any]) -> tuple[Graph, Node]:
    """A graph with one input per argument (Python scalars become weak inputs) and one ``name`` node."""
    b = GraphBuilder()
    inputs = [b.input(type_of(a), f"a{k}") for k, a in enumerate(args)]
    node = b.op(name, *inputs, **attrs)
    return verify(b.build([node])), node


def numpy_call(fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """Run NumPy quietly; return (result, None) or (None, the exception it raised)."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(), None
    except Exception as exc:  # noqa: BLE001 - the exception is the expected result
        return None, exc


def assert_same(got: Any, expected: Any, context: str = "") -> None:
    """Equal dtype and shape; integers/bools exactly, floats within tolerance (nan == nan, inf == inf)."""
    g, e = np.asarray(got), np.asarray(expected)
    assert g.dtype == e.dtype, f"{context}: dtype {g.dtype} != NumPy's {e.dtype}"
    assert g.shape == e.shape, f"{context}: shape {g.shape} != NumPy's {e.shape}"
    if e.dtype.kind in "fc":
        rtol = 1e-5 if e.dtype.itemsize <= 4 * (2 if e.dtype.kind == "c" else 1) else 1e-12
        np.testing.assert_allclose(g, e, rtol=rtol, atol=0, equal_nan=True, err_msg=context)
    else:
        np.testing.assert_array_equal(g, e, err_msg=context)


def assert_type_matches(node: Node, expected: Any, context: str = "") -> None:
    """The node's static type has NumPy's result shape and dtype."""
    e = np.asarray(expected)
    t = node.tensor_type
    assert t.dtype == e.dtype, f"{context}: inferred dtype {t.dtype} != NumPy's {e.dtype}"
    assert t.shape == e.shape, f"{context}: inferred shape {t.shape} != NumPy's {e.shape}"


def check_op(name: str, args: Sequence[Any], attrs: dict[str, Any], reference: Callable[..., Any],
             context: str = "") -> str:
    """Compare one op application with NumPy called directly on the same arguments.

    If NumPy rejects the operands, ``GraphBuilder.op`` must raise TypeInferenceError carrying NumPy's exception
    type (or, for errors only values can reveal, the eager run must raise NumPy's exception). Returns "ok",
    "rejected" or "runtime-error" so callers can assert that a case was really exercised.
    """
    context = context or f"{name}{tuple(describe(a) for a in args)} {attrs}"
    expected, np_exc = numpy_call(lambda: reference(*args))
    if np_exc is not None:
        try:
            graph, _ = build_one(name, args, attrs)
        except TypeInferenceError as err:
            assert type(err.original) is type(np_exc), (
                f"{context}: IR raised {type(err.original).__name__}, NumPy {type(np_exc).__name__}: {np_exc}")
            return "rejected"
        with pytest.raises(type(np_exc)), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eager.run(graph, list(args))
        return "runtime-error"
    graph, node = build_one(name, args, attrs)
    assert_type_matches(node, expected, context)
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (got,) = eager.run(graph, list(args))
    assert_same(got, expected, context)
    for a, b in zip(args, before):  # a graph without mutations must not write its arguments
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f"{context}: an argument was modified")
    return "ok"


def describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        kind = "C" if value.flags.c_contiguous else ("F" if value.flags.f_contiguous else "S")
        return f"{value.dtype}{list(value.shape)}{kind}"
    return repr(value)


def add_at(x: np.ndarray, index: Any, value: Any) -> np.ndarray:
    """``np.add.at`` on a copy of ``x``, with array values broadcast to the indexed shape first.

    NumPy 2.4's fast ufunc.at path reads past the end of 1-D values when the index array is 2-D (garbage
    results), so the expectation is computed the documented way: every indexed element gets its value.
    """
    out = np.array(x, copy=True)
    if isinstance(value, np.ndarray) and value.ndim > 0:
        target = out[index].shape
        while value.ndim > len(target) and value.shape[0] == 1:
            value = value[0]
        value = np.broadcast_to(value, target)
    np.add.at(out, index, value)
    return out
