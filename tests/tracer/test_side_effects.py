"""Issue 18 in the tracer: stores into Python objects recorded and replayed after the graph, and graph breaks that
split around print/logging/np.random calls (inside inlined calls and unrolled loops too)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import jitgraph
from tests.tracer.helpers import run_both

X = np.arange(4.0)


class Box:
    pass


def store_read_store(obj, x):
    obj.a = x * 2
    obj.b = obj.a + 1  # a read after the store sees the stored value
    obj.a = obj.b * 3  # the last store wins
    return obj.a


def dict_methods(d, x):
    d.update(y=x * 2)
    d.setdefault("z", x + 1)
    old = d.pop("w")
    del d["v"]
    return old


def list_methods(lst, x):
    lst.append(x)
    lst.insert(0, x * 2)
    lst.extend([x + 1, 3])
    return lst.pop()


G_VALUE = 1.0


def rebinds_global(x):
    global G_VALUE
    G_VALUE = x.sum()
    return G_VALUE * 2  # reads the rebound value


def test_attribute_stores_in_program_order() -> None:
    run_both(store_read_store, Box(), X)


def test_dict_methods_on_an_argument() -> None:
    run_both(dict_methods, {"w": np.ones(2), "v": 1}, X)


def test_list_methods_on_an_argument() -> None:
    run_both(list_methods, [np.zeros(4)], X)


def test_global_rebinding_is_replayed_and_read_back() -> None:
    global G_VALUE
    G_VALUE = 1.0
    compiled = jitgraph.compile(rebinds_global, backend="eager")
    assert compiled(X) == X.sum() * 2
    assert G_VALUE == X.sum() and type(G_VALUE) is np.float64
    assert compiled.break_reasons() == []


def test_store_inside_a_data_dependent_branch_still_matches_eager() -> None:
    def f(obj, x):
        if x.sum() > 0:  # a break: the whole call runs eagerly, the store happens once
            obj.v = x
        return x

    box = Box()
    jitgraph.compile(f, backend="eager")(box, X)
    assert box.v is X


def _helper(h):
    print("inner", h.sum())
    return h + 1


def split_in_a_call(x):
    return _helper(x * 2) * 3


def split_in_a_loop(x):
    for i in range(3):
        x = x * 2
        print("step", i, x.sum())
    return x


def draws_in_a_loop(x):
    for _ in range(3):
        x = x + np.random.rand(4)
    return x


@pytest.mark.parametrize("fn,segments", [(split_in_a_call, 2), (split_in_a_loop, 4), (draws_in_a_loop, 4)])
def test_splits_inside_calls_and_unrolled_loops(fn, segments, capsys) -> None:
    compiled = jitgraph.compile(fn, backend="eager")
    for seed in range(2):
        np.random.seed(seed)
        expected = fn(X)
        np.random.seed(seed)
        np.testing.assert_array_equal(compiled(X), expected)
    assert compiled.cache_info().fallbacks == 0
    assert len(compiled.entries[0].traced.split.segments) == segments
    out = capsys.readouterr().out.splitlines()
    assert out[: len(out) // 2] == out[len(out) // 2:]  # the compiled calls print what eager prints


def test_a_check_after_the_eager_call_refuses_the_split() -> None:
    def f(x, d):
        print("before")
        return x / (d - 1.0)  # a computed Python float divisor: a run-time check after the print

    compiled = jitgraph.compile(f, backend="eager")
    compiled(1.0, 2.0)
    (reason,) = compiled.break_reasons()
    assert "after an eager call" in reason.reason


def test_a_container_reached_through_two_paths_is_not_written_through_one() -> None:
    def f(a, b, x):
        a.items.append(x)
        return len(b.items)

    a, b = Box(), Box()
    a.items = b.items = [1]
    compiled = jitgraph.compile(f, backend="eager")
    assert compiled(a, b, X) == 2 and len(a.items) == 2
    assert "two paths" in compiled.break_reasons()[0].reason or "another path" in compiled.break_reasons()[0].reason


def setattr_loop(obj, grads):
    for name in ("W", "b"):
        setattr(obj, name, getattr(obj, name) - 0.1 * grads[name])
    return obj.W.sum()


def test_setattr_with_constant_names() -> None:
    layer = Box()
    layer.W, layer.b = np.ones((2, 2)), np.zeros(2)
    compiled = run_both(setattr_loop, layer, {"W": np.ones((2, 2)), "b": np.ones(2)})
    assert compiled.break_reasons() == []


def timed(x):
    t0 = time.perf_counter()
    y = np.tanh(x) * 2
    return y, time.perf_counter() - t0 >= 0  # Python floats compare to a Python bool


def reseeds(x):
    np.random.seed(3)
    return x + np.random.rand(4)


@pytest.mark.parametrize("fn", [timed, reseeds])
def test_clock_readings_and_seeding_split(fn) -> None:
    compiled = run_both(fn, X)
    assert compiled.cache_info().fallbacks == 0 and compiled.entries[0].traced.split is not None


def test_comparing_python_float_arguments_gives_a_python_bool() -> None:
    run_both(lambda a: (a >= 0, a < -1.0), 1.5)


def _store_view_in_dict(obj, x):
    obj["v"] = x[::2]
    return obj["v"]


def _store_transpose_on_attr(box, x):
    box.xv = x.reshape(2, -1).T
    return box.xv


def _store_list_on_attr(box, x):
    box.h = [x * 2, x + 1]
    return box.h


def _store_two_return_pair(box, x):
    box.a = x * 2
    box.b = x[1:]
    return box.a, box.b, x[1:]


@pytest.mark.parametrize(("fn", "make", "stored"), [
    (_store_view_in_dict, dict, lambda o, r: o["v"] is r),
    (_store_transpose_on_attr, Box, lambda o, r: o.xv is r),
    (_store_list_on_attr, Box, lambda o, r: o.h is r),
    (_store_two_return_pair, Box, lambda o, r: (o.a is r[0], o.b is r[1], o.b is r[2])),
], ids=["dict_view", "attr_view", "attr_list", "pair"])
def test_a_stored_and_returned_object_is_one_object(fn, make, stored):
    """Found by a probe corpus: the replay built the stored value and the result built the return value, each from
    the same spec, so ``self.h = [...]; return self.h`` returned a second list (the caller's ``result.append(0)``
    did not reach ``self.h``) and a stored view was another view object. The replay now stores the returned object;
    a value that is only equal (``x[1:]`` sliced twice) stays a separate object, as in NumPy."""
    compiled = jitgraph.compile(fn, cache=False)
    for _ in range(3):
        eager_obj, jit_obj = make(), make()
        want, got = fn(eager_obj, np.arange(6.0)), compiled(jit_obj, np.arange(6.0))
        assert stored(jit_obj, got) == stored(eager_obj, want)
        if isinstance(want, list):
            want.append(0)
            got.append(0)
            assert len(jit_obj.h) == len(eager_obj.h) == 3
