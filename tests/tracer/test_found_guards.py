"""Stale guards found by fuzzing: each test compiles once, changes a value the trace specialised on, calls again and
compares with eager NumPy. Before the fix the second call silently reused the first entry."""

from __future__ import annotations

import collections
import contextlib
import enum
import typing

import numpy as np
import pytest

import jitgraph
from tests.tracer.helpers import TRACER_ONLY, assert_same

pytestmark = pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")


def compiled(fn):
    return jitgraph.compile(fn, backend="eager", **TRACER_ONLY)


def check_twice(fn, first: tuple, second: tuple, graphs: int | None = None):
    """Call compiled ``fn`` on ``first`` then on ``second``; both must match eager."""
    cf = compiled(fn)
    assert_same(fn(*first), cf(*first))
    assert_same(fn(*second), cf(*second), path="second call")
    if graphs is not None:
        assert len(cf.graphs()) == graphs, [str(b) for b in cf.break_reasons()]
    return cf


# ---- 1. arguments keyed by type only ---------------------------------------------------------------------------
def test_stale_guard_slice_argument():
    x = np.arange(6.0)
    cf = check_twice(lambda x, s: x[s], (x, slice(0, 2)), (x, slice(3, 6)), graphs=2)
    assert cf.recompile_reasons() == ["s: slice(0, 2, None) -> slice(3, 6, None)"]
    check_twice(lambda x, s: x[s], (x, slice(0, 6, 2)), (x, slice(0, 6, 3)))
    check_twice(lambda x, s: x[s], (x, slice(None, 2)), (x, slice(np.int64(1), 2)))


def test_stale_guard_range_argument():
    def f(x, r):
        t = x * 0
        for i in r:
            t = t + i
        return t

    x = np.arange(3.0)
    check_twice(f, (x, range(3)), (x, range(5)), graphs=2)
    check_twice(f, (x, range(0, 6, 2)), (x, range(0, 6, 3)), graphs=2)


@pytest.mark.parametrize("kind", [set, frozenset])
def test_stale_guard_set_argument(kind):
    x = np.arange(3.0)
    check_twice(lambda x, s: x * len(s), (x, kind({1, 2})), (x, kind({1, 2, 3})), graphs=2)
    check_twice(lambda x, s: x * sum(s), (x, kind({1, 2})), (x, kind({1, 5})), graphs=2)
    check_twice(lambda x, s: x * len(s), (x, kind({(1, 2)})), (x, kind({(1, 2), (3, 4)})), graphs=2)


def test_stale_guard_set_argument_float_sign():
    x = np.ones(2)
    check_twice(lambda x, s: x / sum(s), (x, {0.0}), (x, {-0.0}), graphs=2)


def test_set_argument_mutation_is_not_replayed():
    def f(x, s):
        s.add(3)
        return x * len(s)

    cf = compiled(f)
    for call in ("first call", "second call"):
        s_eager, s_comp = {1}, {1}
        assert_same(f(np.ones(2), s_eager), cf(np.ones(2), s_comp), path=call)
        assert s_comp == s_eager == {1, 3}, call


P = collections.namedtuple("P", "a b")


class Q(typing.NamedTuple):
    a: float
    b: int


def _unpack(x, c):
    a, b = c
    return x * a + b


@pytest.mark.parametrize("fn", [lambda x, c: x * c.a, lambda x, c: x * c[1], _unpack], ids=["attr", "item", "unpack"])
@pytest.mark.parametrize("cls", [P, Q])
def test_stale_guard_namedtuple_argument(fn, cls):
    x = np.arange(3.0)
    check_twice(fn, (x, cls(2, 3)), (x, cls(5, 7)), graphs=2)


def test_namedtuple_argument_arrays_are_inputs():
    x = np.arange(3.0)
    cf = check_twice(lambda x, c: x * c.a + c.b, (x, P(np.ones(3), 1.5)), (x, P(np.full(3, 2.0), 2.5)), graphs=1)
    assert cf.cache_info().hits == 1


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Mode(str, enum.Enum):
    A = "a"
    B = "b"


class MyInt(int):
    pass


class MyFloat(float):
    pass


class MyStr(str):
    pass


@pytest.mark.parametrize("fn", [lambda x, n: x * n, lambda x, n: x.reshape(n, -1), lambda x, n: x[n]],
                         ids=["mul", "reshape", "index"])
@pytest.mark.parametrize("make", [Level, MyInt], ids=["intenum", "int_subclass"])
def test_stale_guard_int_subclass_argument(fn, make):
    x = np.arange(6.0)
    check_twice(fn, (x, make(1)), (x, make(2)), graphs=2)


def test_stale_guard_float_subclass_argument():
    x = np.arange(3.0)
    check_twice(lambda x, n: x * n, (x, MyFloat(2.0)), (x, MyFloat(3.0)), graphs=2)
    cf = check_twice(lambda x, n: np.ones(1) / (x[:1] * 0 + n), (x, MyFloat(0.0)), (x, MyFloat(-0.0)), graphs=2)
    assert cf.recompile_reasons() == ["n: 0.0 -> -0.0"]


def test_stale_guard_enum_and_str_subclass_argument():
    x = np.arange(3.0)
    check_twice(lambda x, m: x * 2 if m is Color.RED else x, (x, Color.RED), (x, Color.GREEN), graphs=2)
    check_twice(lambda x, m: x * 2 if m == "a" else x, (x, Mode.A), (x, Mode.B), graphs=2)
    check_twice(lambda x, m: x * 2 if m == "a" else x, (x, MyStr("a")), (x, MyStr("b")), graphs=2)


def test_container_subclass_argument_runs_eagerly():
    class MyList(list):
        pass

    x = np.ones(2)
    cf = check_twice(lambda x, v: x * v[0], (x, MyList([2])), (x, MyList([3])), graphs=0)
    assert "cannot guard" in str(cf.break_reasons()[0])


def test_stale_guard_dtype_byte_order():
    x = np.arange(3.0)
    cf = compiled(lambda x, d: x.astype(d))
    assert_same(x.astype(np.float32), cf(x, np.dtype(np.float32)))
    out = cf(x, np.dtype(">f4"))
    assert out.dtype == np.dtype(">f4")
    np.testing.assert_array_equal(out, x.astype(">f4"))


def test_stale_guard_dtype_datetime_unit():
    cf = compiled(lambda x, d: np.zeros(3, d))
    x = np.arange(3)
    assert cf(x, np.dtype("datetime64[s]")).dtype == np.dtype("datetime64[s]")
    out = cf(x, np.dtype("datetime64[ms]"))
    assert out.dtype == np.dtype("datetime64[ms]")
    np.testing.assert_array_equal(out, np.zeros(3, "datetime64[ms]"))


# ---- 1. globals guarded by type only ---------------------------------------------------------------------------
SL = slice(0, 2)
ST = {1, 2}
LEVEL = Level.LOW
NT = P(2.0, 3)


def uses_global_slice(x):
    return x[SL]


def uses_global_set(x):
    return x * sum(ST)


def uses_global_enum(x):
    return x * LEVEL


def uses_global_namedtuple(x):
    return x * NT.a + NT[1]


@contextlib.contextmanager
def rebound(name, value):
    """The module global ``name`` set to ``value`` for the block, then restored."""
    saved = globals()[name]
    globals()[name] = value
    try:
        yield
    finally:
        globals()[name] = saved


def recompiles_on_rebinding(fn, x, name, value, reason):
    """``fn`` compiled, called, then called again with global ``name`` rebound: eager results both times."""
    cf = compiled(fn)
    assert_same(fn(x), cf(x))
    with rebound(name, value):
        assert_same(fn(x), cf(x), path="second call")
        assert cf.recompile_reasons() == [reason]


def test_stale_guard_global_slice_rebound():
    recompiles_on_rebinding(uses_global_slice, np.arange(6.0), "SL", slice(3, 6),
                            "guard failed: SL == slice(0, 2, None) (now slice(3, 6, None))")


def test_stale_guard_global_set_mutated():
    x = np.arange(3.0)
    cf = compiled(uses_global_set)
    assert_same(uses_global_set(x), cf(x))
    try:
        ST.add(10)
        assert_same(uses_global_set(x), cf(x), path="second call")
    finally:
        ST.discard(10)


def test_stale_guard_global_enum_and_namedtuple_rebound():
    global LEVEL, NT
    x = np.arange(3.0)
    cf, cg = compiled(uses_global_enum), compiled(uses_global_namedtuple)
    assert_same(uses_global_enum(x), cf(x))
    assert_same(uses_global_namedtuple(x), cg(x))
    try:
        LEVEL, NT = Level.HIGH, P(5.0, 7)
        assert_same(uses_global_enum(x), cf(x), path="second call")
        assert_same(uses_global_namedtuple(x), cg(x), path="second call")
    finally:
        LEVEL, NT = Level.LOW, P(2.0, 3)


# ---- 2. float constants compared with == -----------------------------------------------------------------------
Z = 0.0
Z32 = np.float32(0.0)
NAN = float("nan")


def div_global(x):
    return x / Z


def div_global32(x):
    return x / Z32


def add_nan(x):
    return x + NAN


def div_default(x, d=0.0):
    return x / d


def test_float_guard_negative_zero_global():
    recompiles_on_rebinding(div_global, np.ones(1), "Z", -0.0, "guard failed: Z == 0.0 (now -0.0)")


def test_float_guard_negative_zero_numpy_global():
    x = np.ones(1, np.float32)
    cf = compiled(div_global32)
    assert_same(div_global32(x), cf(x))
    with rebound("Z32", np.float32(-0.0)):
        assert_same(div_global32(x), cf(x), path="second call")


def test_float_guard_negative_zero_default_argument():
    x = np.ones(1)
    cf = compiled(div_default)
    assert_same(div_default(x), cf(x))
    try:
        div_default.__defaults__ = (-0.0,)
        assert_same(div_default(x), cf(x), path="second call")
    finally:
        div_default.__defaults__ = (0.0,)


def test_float_guard_complex_negative_zero_argument():
    x = -np.ones(1, complex)
    check_twice(lambda x, c: np.sqrt(x + c), (x, complex(0.0, 0.0)), (x, complex(0.0, -0.0)), graphs=2)


def test_float_guard_nan_global_is_reused():
    x = np.ones(2)
    cf = compiled(add_nan)
    for _ in range(10):
        assert_same(add_nan(x), cf(x))
    info = cf.cache_info()
    assert (info.misses, info.entries, info.hits, info.fallbacks) == (1, 1, 9, 0)
    assert "NAN == nan" in cf.entries[0].guard_texts


def test_found_guard_texts_are_readable():
    cf = compiled(lambda x, s, r, e: x[s] * len(r) * e)
    cf(np.arange(6.0), slice(0, 2), range(3), Level.LOW)
    texts = cf.entries[0].guard_texts
    for text in ["s == slice(0, 2, None)", "r == range(0, 3)", "type(e) is Level", "e == <Level.LOW: 1>"]:
        assert text in texts
    cg = compiled(uses_global_set)
    cg(np.ones(2))
    assert "ST == {1, 2}" in cg.entries[0].guard_texts
