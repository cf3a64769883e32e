"""The per-call path of a small cached call (issue 21, "never slower than NumPy"): what the driver and the dispatch
runner leave out, and that leaving it out changes no result.

* the driver sets NumPy's error state only when one of its NumPy calls can warn (``np.maximum`` never does);
* a Python constant reaches a ufunc as the NumPy scalar NumPy itself converts it to, where that is exact;
* the runner calls the driver directly and builds an array / tuple / list result inline, yet a stub or a demotion
  of the entry still takes effect at once;
* an in-place graph checks its arguments' overlap by memory owners (and not at all after the runner's check);
* the cost model counts a row max over a computed value as the compare chain the kernel runs.

Values are compared with eager NumPy (bit for bit where the same NumPy loops run); no timings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgraph
from jitgraph.ir.ops.cost import GroupWork, OpWork, numpy_is_enough
from jitgraph.jit.breaks import BreakReason


@pytest.fixture(autouse=True)
def cost_model_on(monkeypatch):
    """The suite's conftest sets JITGRAPH_SMALL_KERNELS=1; the small-call path is about the default."""
    monkeypatch.setenv("JITGRAPH_SMALL_KERNELS", "0")


def _driver(compiled) -> str:
    return compiled.entries[-1].compiled.driver_source


def _same(got, want) -> None:
    assert type(got) is type(want)
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def relu(x):
    return np.maximum(x, 0)


def clamp_low(x):
    return np.minimum(np.maximum(x, 0.1), 3) > 0.5


def scaled(x):
    return x * 0.1 + 3


def huge(x):
    return np.maximum(x, 1e300)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_quiet_driver_has_no_errstate_and_matches_eager(dtype):
    x = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -1.5, 0.05, 2.0, 7.0], dtype=dtype)
    for fn in (relu, clamp_low):
        compiled = jitgraph.compile(fn)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(2):  # the first call compiles, the second goes through the runner
                _same(compiled(x), fn(x))
        assert "_ERRSTATE" not in _driver(compiled)


def test_driver_that_may_warn_keeps_the_errstate():
    x = np.array([1000.0, -1.0, 0.0, np.nan], dtype=np.float32)
    compiled = jitgraph.compile(lambda v: np.exp(v) * 2)
    with np.errstate(all="ignore"):
        want = np.exp(x) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="warn"):
            for _ in range(2):
                _same(compiled(x), want)
    assert "_ERRSTATE" in _driver(compiled)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_constants_as_numpy_scalars_match_eager(dtype):
    x = np.linspace(-3, 3, 11).astype(dtype)
    for fn in (relu, clamp_low, scaled):
        compiled = jitgraph.compile(fn)
        compiled(x)
        _same(compiled(x), fn(x))


def test_constant_out_of_the_dtype_range_is_left_as_numpy_gets_it():
    x = np.linspace(-3, 3, 11).astype(np.float32)
    compiled = jitgraph.compile(huge)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = huge(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the cast overflows: the compiled call stays silent, under the errstate
        compiled(x)
        _same(compiled(x), want)
    assert "_ERRSTATE" in _driver(compiled)


def test_integer_arrays_keep_their_constants():
    x = np.arange(-5, 6, dtype=np.int32)
    compiled = jitgraph.compile(lambda v: np.maximum(v, 2) * 3)
    compiled(x)
    _same(compiled(x), np.maximum(x, 2) * 3)


def pair(a, b):
    return a + b, a - b


def as_list(a, b):
    return [np.maximum(a, b), a]


def one_tuple(a):
    return (np.abs(a),)


def test_inline_results_match_eager():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(8), rng.standard_normal(8)
    for fn, args in ((pair, (a, b)), (as_list, (a, b)), (one_tuple, (a,))):
        compiled = jitgraph.compile(fn)
        compiled(*args)
        _same(compiled(*args), fn(*args))
        assert compiled.cache_info().hits == 1


def test_a_stubbed_or_demoted_entry_takes_effect_at_once():
    x = np.arange(6.0)
    compiled = jitgraph.compile(relu)
    compiled(x)
    entry = compiled.entries[0]
    marker = np.full(6, 42.0)
    real, entry.compiled = entry.compiled, lambda leaves: [marker]
    assert compiled(x) is marker
    entry.compiled = real
    _same(compiled(x), relu(x))
    entry.demote(BreakReason("test", None, None))
    y = np.arange(6.0) - 3
    _same(compiled(y), relu(y))
    assert compiled.cache_info().fallbacks == 1


def test_a_returned_scalar_goes_through_the_builder():
    x = np.arange(6.0)
    compiled = jitgraph.compile(lambda v: np.maximum(v, 1).sum())
    compiled(x)
    got = compiled(x)
    assert type(got) is np.float64 and got == np.maximum(x, 1).sum()


def step(p, g, m):
    m *= 0.9
    m += g
    p -= 0.1 * m


def _step_args(kind: str):
    base = np.arange(40.0)
    if kind == "distinct":
        return np.arange(16.0), np.ones(16), np.linspace(0, 1, 16)
    if kind == "disjoint views":  # one owner, no overlap: decided pair by pair
        return base[:16], base[16:32], np.linspace(0, 1, 16)
    if kind == "overlapping views":
        return base[:16], base[2:18], base[4:20]
    strided = np.lib.stride_tricks.as_strided(base, (16,), (8,))  # memory through a non-array object
    return strided, base[1:17], np.ones(16)


@pytest.mark.parametrize("kind", ["distinct", "disjoint views", "overlapping views", "foreign"])
def test_in_place_updates_with_shared_memory_match_eager(kind):
    compiled = jitgraph.compile(step)
    for _ in range(3):  # the compiling call, then runner or generic hits
        got, want = _step_args(kind), _step_args(kind)
        compiled(*got)
        step(*want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_overlap_check_of_the_backend_itself():
    compiled = jitgraph.compile(step)
    compiled(*_step_args("distinct"))
    graph = compiled.entries[0].compiled
    if not graph.inplace:
        pytest.skip("no in-place plan for this graph")
    assert not graph._overlapping(list(_step_args("distinct")))
    assert not graph._overlapping(list(_step_args("disjoint views")))
    assert graph._overlapping(list(_step_args("overlapping views")))


def _row_max(chained: bool, itemsize: int, rows: int = 1024, cols: int = 256, op: str = "max") -> GroupWork:
    n = rows * cols
    return GroupWork(ops=(OpWork("absolute", n, False, n), OpWork(op, n, True, n, chained)), scalar_ops=0,
                     elements=n, arrays=2, itemsize=itemsize, parallel_from=10**9)


@pytest.mark.parametrize("itemsize", [4, 8])
def test_compare_chain_costs_the_kernel_more(itemsize):
    """``np.abs(x).max(axis=1)`` over (1024, 256): the row loop's vectorised max makes the kernel win in both dtypes
    (43 / 74 us against NumPy's 175 / 299 us, as measured); an argmax over a computed value keeps its scalar lanes,
    priced so that NumPy's calls win."""
    assert _row_max(True, itemsize).kernel_us() > _row_max(False, itemsize).kernel_us()
    assert numpy_is_enough(_row_max(True, itemsize)) is None
    assert numpy_is_enough(_row_max(False, itemsize)) is None
    assert numpy_is_enough(_row_max(True, itemsize, op="argmax")) is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_max_of_a_computed_value_is_one_row_loop_kernel(dtype):
    """The max of ``abs(x)`` along rows: a kernel whose sweep is one loop over the row (no blocks: the vectorised
    fold), NumPy's values exactly, NaN propagated like NumPy's."""
    x = np.random.default_rng(1).standard_normal((1024, 256)).astype(dtype)
    x[7, 100] = np.nan
    chained = jitgraph.compile(lambda v: np.abs(v).max(axis=1))
    direct = jitgraph.compile(lambda v: v.max(axis=1) * 2)
    _same(chained(x), np.abs(x).max(axis=1))
    _same(direct(x), x.max(axis=1) * 2)
    assert not chained.entries[0].compiled.numpy_groups
    assert not direct.entries[0].compiled.numpy_groups
    (kernel,) = chained.entries[0].compiled.kernels.values()
    assert "for i1 in range(n1):" in kernel.source and "jb" not in kernel.source
