"""What the tracer cannot capture runs eagerly: right result, side effects once, reason at the user's line."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import jitgraph
from jitgraph import GraphBreakError, JitgraphError
from tests.tracer.helpers import assert_same, run_both

X = np.linspace(-1, 1, 6).astype(np.float32)


def line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if marker in line)


def data_dependent_if(x):
    y = x * 2
    if y.sum() > 0:  # BREAK
        return y
    return -y


def data_dependent_while(x):
    x = x + 3
    while np.max(x) > 1:  # BREAK (an early exit; a plain data-dependent while becomes a region)
        x = x / 2
        if x[0] < 0.5:
            break
    return x


def uses_item(x):
    return x * x.sum().tolist()  # BREAK (.item() of a one-element array is a Python number of the graph)


def uses_float(x):
    return x * complex(x.sum())  # BREAK (float() of a 0-d value is a Python number of the graph since issue 19)


def prints(x):
    y = x + 1
    print("hello from prints")  # BREAK
    return y


def appends(x, log):
    y = x * 3
    log.append(y.sum())  # BREAK
    return y


def unknown_function(x):
    return np.lexsort((x,)) + 1  # BREAK


def random_numbers(x):
    return x + np.random.rand(x.shape[0])  # BREAK


def try_block(x):
    try:
        y = x + 1  # BREAK
    except ValueError:
        y = x
    return y


def raises(x, n):
    if n > 2:
        raise ValueError("n too large")  # BREAK
    return x


def global_store(x):
    global _COUNTER
    _COUNTER = 1  # BREAK
    return x


def attribute_store(obj, x):
    obj.cache = x * 2  # BREAK
    return x


class Box:
    pass


BREAKS = [
    (data_dependent_while, (X,)),
    (uses_item, (X,)),
    (uses_float, (X,)),
    (unknown_function, (X,)),
    (try_block, (X,)),
]


@pytest.mark.parametrize("fn,args", BREAKS, ids=lambda c: getattr(c, "__name__", ""))
def test_break_falls_back_with_reason_at_the_line(fn, args):
    compiled = run_both(fn, *args, graphs=0)
    (reason,) = compiled.break_reasons()
    marker = "# BREAK"
    assert reason.filename == __file__
    assert reason.lineno == line_of(fn, marker), reason
    info = compiled.cache_info()
    assert info.misses == 1 and info.fallbacks == 2  # the decision is cached: no re-trace on the second call


def test_raise_statement():
    compiled = jitgraph.compile(raises, backend="eager")
    with pytest.raises(ValueError, match="n too large"):
        compiled(X, 3)
    (reason,) = compiled.break_reasons()
    assert reason.lineno == line_of(raises, "raise ValueError")
    np.testing.assert_array_equal(compiled(X, 1), X)  # other guards (n=1) still compile
    assert len(compiled.graphs()) == 1


def test_print_runs_exactly_once(capsys):
    compiled = jitgraph.compile(prints, backend="eager")
    np.testing.assert_array_equal(compiled(X), X + 1)
    assert capsys.readouterr().out.count("hello from prints") == 1
    compiled(X)
    assert capsys.readouterr().out.count("hello from prints") == 1
    # Issue 18: the print splits the function (two graphs around one eager call), no whole-function fallback.
    assert compiled.break_reasons() == [] and compiled.cache_info().fallbacks == 0
    (split,) = compiled.entries[0].traced.split_reasons
    assert split.lineno == line_of(prints, "# BREAK")


def test_append_to_callers_list_happens_once():
    """Issue 18: the append is replayed after the graph (one graph, no break), once per call."""
    log: list = []
    compiled = jitgraph.compile(appends, backend="eager")
    compiled(X, log)
    assert len(log) == 1 and np.isclose(log[0], (X * 3).sum()) and type(log[0]) is type((X * 3).sum())
    assert compiled.break_reasons() == [] and len(compiled.graphs()) == 1


def test_global_store_is_replayed():
    global _COUNTER
    _COUNTER = 0
    compiled = jitgraph.compile(global_store, backend="eager")
    compiled(X)
    assert _COUNTER == 1 and compiled.break_reasons() == []


def test_attribute_store_happens_once():
    box = Box()
    compiled = jitgraph.compile(attribute_store, backend="eager")
    compiled(box, X)
    np.testing.assert_array_equal(box.cache, X * 2)


def test_random_state_advances_once():
    np.random.seed(0)
    expected = random_numbers(X)
    np.random.seed(0)
    actual = jitgraph.compile(random_numbers, backend="eager")(X)
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("fn,args", [(data_dependent_if, (X,)), (data_dependent_while, (X,)), (prints, (X,))])
def test_fullgraph_raises_graph_break_error(fn, args, capsys):
    compiled = jitgraph.compile(fn, backend="eager", fullgraph=True)
    with pytest.raises(GraphBreakError) as info:
        compiled(*args)
    err = info.value
    assert isinstance(err, JitgraphError)
    assert err.filename == __file__ and err.lineno == line_of(fn, "# BREAK")
    assert f"{__file__}:{err.lineno}" in str(err)
    assert "hello" not in capsys.readouterr().out  # the tracer itself performs no side effect


# ---- the user's own errors keep their type ----------------------------------------------------------------------
def shape_mismatch(x, y):
    return x + y


def bad_inplace_cast(x):
    x += 0.5
    return x


def bad_matmul(a, b):
    return a @ b


def bad_reshape(x):
    return x.reshape(4, 4)


def bad_index(x):
    return x[10]


def missing_key(d):
    return d["nope"]


def int8_plus_300(x):
    return x + 300  # NEP 50: OverflowError, the Python int does not fit int8


def inplace_int8_overflow(x):
    x += 1000
    return x


ERRORS = [
    (shape_mismatch, (np.ones(3), np.ones(4))),
    (bad_inplace_cast, (np.arange(4),)),
    (bad_matmul, (np.ones((2, 3)), np.ones((2, 3)))),
    (bad_reshape, (np.ones(6),)),
    (bad_index, (np.ones(3),)),
    (missing_key, ({"a": np.ones(2)},)),
    (int8_plus_300, (np.arange(4, dtype=np.int8),)),
    (inplace_int8_overflow, (np.arange(4, dtype=np.int8),)),
    (int8_plus_300, (np.arange(4, dtype=np.uint8) * 0 + 200,)),
]


@pytest.mark.parametrize("fn,args", ERRORS, ids=lambda c: getattr(c, "__name__", ""))
@pytest.mark.parametrize("fullgraph", [False, True])
def test_user_errors_reach_the_user_with_numpys_type(fn, args, fullgraph):
    with pytest.raises(Exception) as eager:
        fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    compiled = jitgraph.compile(fn, backend="eager", fullgraph=fullgraph)
    with pytest.raises(type(eager.value)) as got:
        compiled(*args)
    assert str(got.value) == str(eager.value)


def test_inplace_int_array_is_unchanged_after_failed_cast():
    x = np.arange(4)
    with pytest.raises(np._core._exceptions._UFuncOutputCastingError):
        jitgraph.compile(bad_inplace_cast, backend="eager")(x)
    np.testing.assert_array_equal(x, np.arange(4))


def test_overlapping_argument_views_match_eager():
    def f(a, b):
        a += b
        return a

    base_e = np.arange(8.0)
    f(base_e[1:], base_e[:-1])
    base_c = np.arange(8.0)
    compiled = jitgraph.compile(f, backend="eager")
    compiled(base_c[1:], base_c[:-1])
    assert_same(base_e, base_c)
    assert "overlap" in compiled.break_reasons()[0].reason


@pytest.mark.parametrize("value", [np.array(["a", "b"]), np.array([1, "x"], dtype=object),
                                   np.arange(3).astype("datetime64[D]")], ids=["str", "object", "datetime"])
def test_unsupported_dtypes_run_eagerly(value):
    def f(x):
        return x[::-1]

    compiled = jitgraph.compile(f, backend="eager")
    np.testing.assert_array_equal(compiled(value), f(value))
    assert "dtype" in compiled.break_reasons()[0].reason


@pytest.mark.parametrize("x", [np.zeros((0, 3)), np.array([np.nan, np.inf, -np.inf, 1.0])], ids=["empty", "nan"])
def test_zero_size_and_non_finite_inputs(x):
    def f(x):
        return np.exp(x) * 2, x.sum(axis=0), np.maximum(x, 0)

    run_both(f, x)


def test_zero_size_reduction_error_keeps_numpys_type():
    def f(x):
        return x.max()

    with pytest.raises(ValueError, match="zero-size array"):
        jitgraph.compile(f, backend="eager")(np.zeros(0))


def test_random_numbers_have_a_clear_reason():
    compiled = jitgraph.compile(random_numbers, backend="eager")
    compiled(X)
    assert "draw advances the generator" in compiled.entries[0].traced.split_reasons[0].reason


def test_python_ints_that_fit_or_are_compared_stay_compiled():
    """Only an int that does not fit raises; one that fits wraps like NumPy, and comparisons take any int."""
    def fits(x):
        return x + 127, x < 300, x.astype(np.int16) + 300

    x = np.arange(-3, 4, dtype=np.int8)
    compiled = jitgraph.compile(fits)
    for got, want in zip(compiled(x), fits(x)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert not compiled.break_reasons()


def test_a_data_error_on_the_first_call_keeps_the_compiled_entry(caplog):
    """An index array out of range raises IndexError in NumPy and in the compiled kernel alike: that is the
    caller's error, reported as NumPy reports it, and not a reason to demote the entry to eager."""
    def gather_unused(x, idx):
        x[idx]
        return x * 2

    compiled = jitgraph.compile(gather_unused)
    x = np.arange(5.0)
    with caplog.at_level("WARNING", logger="jitgraph"), pytest.raises(IndexError, match="out of bounds"):
        compiled(x, np.array([0, 9]))
    assert not [r for r in caplog.records if "failed on the first run" in r.getMessage()]
    np.testing.assert_array_equal(compiled(x, np.array([0, 4])), x * 2)
    assert not compiled.break_reasons()
    with pytest.raises(IndexError, match="out of bounds"):
        compiled(x, np.array([-7]))
