"""The seven benchmark kernels at small sizes: the plain Python/NumPy function, the reference interpreter on its
graph and the compiled driver all agree (values, dtypes, and the caller's arrays after the call)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from jitgraph.backends import eager
from jitgraph.backends.base import get_backend
from jitgraph.ir.verifier import verify
from jitgraph.passes.manager import run_pipeline
from tests.control_flow.helpers import copies, load_benchmarks

BENCH = load_benchmarks()
KERNELS = {k.name: k for k in BENCH.kernels()}
_compiled: dict[str, Any] = {}


def compiled(name: str) -> tuple[Any, tuple[Any, ...], Any]:
    """One small input set and one compiled driver per kernel, shared by the tests below.

    The graph goes through the default pass pipeline and the "cpu" backend, as a traced function's graph does.
    """
    if name not in _compiled:
        k = KERNELS[name]
        args = k.make(True)
        graph = verify(k.build(*args))
        optimised, _ = run_pipeline(graph, {})
        options = {"name": k.fn.__name__, "parallel": True, "parallel_min_trips": 16}  # small inputs, yet prange
        driver = get_backend("cpu")(verify(optimised), options)
        assert driver.fallback_reason() is None, driver.fallback_reason()
        _compiled[name] = (graph, args, driver)
    return _compiled[name]


def same(got: Any, want: Any) -> None:
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_matches_plain_function(name: str) -> None:
    k = KERNELS[name]
    graph, args, driver = compiled(name)
    plain_args, interp_args, driver_args = copies(list(args)), copies(list(args)), copies(list(args))
    want = k.fn(*plain_args)
    (interp,) = eager.run(graph, interp_args)
    (got,) = driver(driver_args)
    same(interp, want)
    same(got, want)
    if isinstance(want, np.ndarray):
        assert got.shape == want.shape and got.dtype == want.dtype
    for a, b, c in zip(plain_args, interp_args, driver_args):  # in-place kernels mutate the caller's array alike
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(b, a)
            np.testing.assert_allclose(c, a, rtol=1e-10, atol=1e-10)


def test_second_input_reuses_the_driver() -> None:
    k = KERNELS["Floyd-Warshall"]
    _, args, driver = compiled("Floyd-Warshall")
    other = (np.random.default_rng(5).uniform(1, 10, args[0].shape),)
    want = k.fn(*copies(list(other)))
    same(driver(copies(list(other)))[0], want)


def test_csr_rows_become_prange_and_others_stay_serial() -> None:
    _graph, _, driver = compiled("CSR SpMV")
    assert len(driver.parallel) == 1 and "numba.prange" in driver.source
    assert [r.parallel for r in driver.regions()] == [True, False]
    for name in ("CRC-16", "Floyd-Warshall", "triangular solve", "LU decomposition"):
        assert compiled(name)[2].parallel == [], name


def test_explain_rows_show_trip_counts() -> None:
    _, args, driver = compiled("CRC-16")
    rows = [str(r) for r in driver.regions()]
    assert rows[0].startswith("%") and f"loop trips={args[0].shape[0]}" in rows[0]
    assert "loop trips=8" in rows[1] and rows[2].strip().endswith("cond")
    _, _, spmv = compiled("CSR SpMV")
    assert "trips=? " in str(spmv.regions()[1]) or str(spmv.regions()[1]).endswith("trips=?")


def test_bad_column_index_in_a_prange_loop_raises_after_the_loop() -> None:
    """Inside a prange body a bad index sets the loop's error flag (a raise would serialise the loop)."""
    _, args, driver = compiled("CSR SpMV")
    indptr, indices, data, x = copies(list(args))
    indices[len(indices) // 2] = x.shape[0] + 3
    assert "raise IndexError" in driver.source and driver.parallel
    with pytest.raises(IndexError):
        driver([indptr, indices, data, x])


@pytest.mark.parametrize("name", ["Floyd-Warshall", "CRC-16", "CSR SpMV", "triangular solve"])
def test_traced_drivers_copy_no_arrays_inside_loops(name: str, caplog: pytest.LogCaptureFixture) -> None:
    """Regression: the speculative store the tracer records for a data-dependent ``if`` was once kept alive as a
    possible error, and Floyd-Warshall copied its whole matrix in every iteration (3000x slower than numba)."""
    import jitgraph

    k = KERNELS[name]
    args = k.make(True)
    with caplog.at_level("DEBUG", logger="jitgraph.kernels"):
        got = jitgraph.compile(k.fn)(*copies(list(args)))
    same(got, k.fn(*copies(list(args))))
    drivers = [r.getMessage() for r in caplog.records if "loop driver" in r.getMessage()]
    in_loops = [line for d in drivers for line in d.splitlines() if ".copy()" in line and line.startswith(" " * 8)]
    assert drivers and not in_loops
