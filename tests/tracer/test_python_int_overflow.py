"""Python ints computed in a graph do not wrap (tracer/python_ints.py, errors.RerunEagerly).

Regression tests from a probe corpus (written without looking at jitgraph's tests): each function was compiled on
small values first, so the cached graph -- not a new trace -- met the big value, and returned int64's wrapped
result (a polynomial hash, a cube), raised instead of returning a big int (``int()`` of 1e20, of a uint64 above
2**63), or rounded as NumPy does where Python rounds exactly (``round(0.35, 1)``). Each is compared with eager
Python on both backends; the entry must stay a graph (the big value reruns that call, it does not demote it)."""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph

BACKENDS = ["eager", "cpu"]


def poly_hash(x):
    h = 0
    for i in range(len(x)):
        h = h * 31 + int(x[i])
    return h


def cube(x):
    n = int(x[0])
    return n * n * n


def total_of_ints(x):
    out = 0
    for i in range(x.shape[0]):
        out += int(x[i])
    return out


def first_plus_one(x):
    return int(x[0]) + 1


def running_product(x):
    acc = 1
    for i in range(x.shape[0]):
        acc *= int(x[i])
    return acc


CASES = [
    (poly_hash, np.arange(5), np.arange(40) * 7),
    (cube, np.array([5.0, 3.0]), np.array([3e6, 3e9])),
    (total_of_ints, np.linspace(-3.5, 3.5, 40), np.array([1e20] + [1.0] * 39)),
    (total_of_ints, np.arange(5, dtype=np.uint64), np.array([2 ** 63 + 5, 7, 2 ** 62], dtype=np.uint64)),
    (total_of_ints, np.arange(5), np.array([2 ** 62, 2 ** 62, 2 ** 62])),
    (first_plus_one, np.arange(3, dtype=np.uint64), np.array([2 ** 64 - 1], dtype=np.uint64)),
    (running_product, np.arange(1, 4), np.arange(1, 30)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("fn", "small", "big"), CASES, ids=lambda v: getattr(v, "__name__", None) or "")
def test_big_python_ints_equal_eager_after_compiling_on_small_values(fn, small, big, backend):
    compiled = jitgraph.compile(fn, backend=backend, cache=False)
    for _ in range(3):
        assert compiled(small.copy()) == fn(small.copy())
    expected = fn(big.copy())
    got = compiled(big.copy())
    assert type(got) is int and got == expected
    assert compiled(small.copy()) == fn(small.copy())
    entries = compiled.entries
    assert entries and all(e.mode == "graph" for e in entries), "the big value demoted the entry"


def test_index_arithmetic_of_loop_variables_gets_no_check():
    """``i - 1`` and ``i * n + j`` of range variables are bounded at trace time: no run-time check in the loop (a
    check in every inner loop would cost time); the carried ``h * 31 + ...`` is checked."""

    def stencil(x, y):
        for i in range(1, x.shape[0]):
            for j in range(3):
                y[i * 3 + j] = x[i - 1] + x[i] + j
        return y

    compiled = jitgraph.compile(stencil, cache=False)
    x = np.arange(8.0)
    np.testing.assert_array_equal(compiled(x, np.zeros(24)), stencil(x, np.zeros(24)))

    def checks(graph):
        found = []
        for node in graph.nodes:
            if node.op == "check" and node.attrs.get("error") == "RerunEagerly":
                found.append(node)
            for region in node.regions:
                found += checks(region)
        return found

    assert checks(compiled.entries[0].traced_graph) == []
    hashed = jitgraph.compile(poly_hash, cache=False)
    hashed(np.arange(5))
    assert len(checks(hashed.entries[0].traced_graph)) == 2  # h * 31, then + int(x[i])


def test_round_of_python_float_to_digits_is_pythons():
    """Python's ``round(0.35, 1)`` is 0.3 (the decimal value, exactly); NumPy's scale-and-rint gives 0.4. The
    graph has only NumPy's, so the call falls back (NumPy scalars keep NumPy's rounding, compiled)."""

    def straight(x):
        return round(float(x[0]), 1), round(float(x[1]), 1), round(float(x[2]), 1)

    def numpy_scalar(x):
        return round(x[0], 1)

    x = np.array([0.35, 1.05, 0.15])
    got = jitgraph.compile(straight, cache=False)(x)
    assert got == (0.3, 1.1, 0.1) and all(type(v) is float for v in got)
    compiled = jitgraph.compile(numpy_scalar, cache=False)
    assert compiled(x) == numpy_scalar(x) == np.float64(0.4)
    assert compiled.entries[0].mode == "graph"
