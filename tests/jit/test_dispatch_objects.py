"""Generated runners (jitgraph/jit/dispatch.py) for calls whose arguments hold user objects, dicts and lists: every
call is checked against eager NumPy, and the runner against the generic key lookup (``_find``): a runner takes a
call exactly when the generic path would pick its entry. "The runner was used" is seen by the generic path
(``_dispatch``) not being called."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jitgraph
from jitgraph.jit.dispatch import MISS, runner_source
from jitgraph.jit.guard_code import straight_line
from jitgraph.tracer.keys import make_key


class Layer:
    def __init__(self, W: Any, scale: float = 2.0) -> None:
        self.W = W
        self.scale = scale


class SubLayer(Layer):
    pass


class Slotted:
    __slots__ = ("W", "scale")

    def __init__(self, W: Any, scale: float = 2.0) -> None:
        self.W = W
        self.scale = scale


class Dynamic:
    """Attributes through ``__getattr__``: the key cannot be mirrored in straight-line code (no runner)."""

    def __init__(self, W: Any) -> None:
        self.__dict__["_d"] = {"W": W, "scale": 2.0}

    def __getattr__(self, name: str) -> Any:
        try:
            return self._d[name]
        except KeyError:
            raise AttributeError(name) from None


class Accumulator:
    def __init__(self, n: int) -> None:
        self.total = np.zeros(n)
        self.last = None
        self.history = {"first": np.zeros(n)}

    def step(self, x: np.ndarray) -> float:
        self.total += x
        self.last = x * 2.0
        self.history["first"] = self.history["first"] + x
        return float(self.total.sum())

    compiled_step = jitgraph.compile(step)


def forward(layer: Any, x: np.ndarray) -> np.ndarray:
    return x * layer.W + layer.scale


def combine(params: dict, xs: list) -> np.ndarray:
    out = params["a"] - params["b"]
    for x in xs:
        out = out + x
    return out


def counted(f: Any) -> list[int]:
    """Counts the calls that reach the generic path (``_dispatch``): a call no runner took."""
    calls = [0]
    generic = f._dispatch

    def dispatch(args: tuple, kwargs: dict) -> Any:
        calls[0] += 1
        return generic(args, kwargs)

    f._dispatch = dispatch
    return calls


def runner_pick_matches_generic(f: Any, args: tuple) -> int | None:
    """The entry index a runner takes for ``args``, asserted equal to the generic path's (for pure functions: a
    runner that takes a call runs it)."""
    leaves: list = []
    found = f._find(make_key(args, {}, leaves), leaves, args, {})
    taken = next((k for k, run in enumerate(f._runners) if run(args, {}) is not MISS), None)
    if taken is not None:
        assert found is not None and found[0] is f.entries[taken]
    else:
        assert found is None or f.entries.index(found[0]) >= len(f._runners), "a runner missed its own entry"
    return taken


@pytest.mark.parametrize("cls", [Layer, Slotted])
def test_object_argument_runs_through_the_runner(cls: type) -> None:
    f = jitgraph.compile(forward)
    layer, x = cls(np.arange(4.0)), np.ones(4)
    np.testing.assert_array_equal(f(layer, x), forward(layer, x))
    source = runner_source(f.entries[0])
    assert source is not None and f"layer: a {cls.__qualname__}" in source
    assert ("__cuda_array_interface__" in source) == (cls is Layer)  # a slotted instance has no dict to hold it
    generic = counted(f)
    for k in range(3):
        layer.W = np.arange(4.0) + k  # a new array of the same layout: the same entry
        np.testing.assert_array_equal(f(layer, x), forward(layer, x))
    assert generic[0] == 0 and f.cache_info().entries == 1


@pytest.mark.parametrize("change", ["shape", "dtype", "float", "list", "scale", "subclass", "strided"])
def test_attribute_changes_miss_the_runner(change: str) -> None:
    f = jitgraph.compile(forward, backend="eager")
    layer, x = Layer(np.arange(4.0)), np.ones(4)
    f(layer, x)
    if change == "shape":
        layer.W, x = np.arange(3.0), np.ones(3)
    elif change == "dtype":
        layer.W = np.arange(4, dtype=np.float32)
    elif change == "float":
        layer.W = 3.0
    elif change == "list":
        layer.W = [1.0, 2.0, 3.0, 4.0]
    elif change == "scale":
        layer.scale = 5.0
    elif change == "subclass":
        layer = SubLayer(layer.W)
    elif change == "strided":
        layer.W = np.arange(8.0)[::2]
    runner = f._runners[0]
    assert runner((layer, x), {}) is MISS
    expected = forward(copy.deepcopy(layer), x.copy())
    np.testing.assert_array_equal(f(layer, x), expected)
    assert f.cache_info().entries == 2
    assert runner_pick_matches_generic(f, (layer, x)) == 1


def test_instance_with_a_device_interface_is_not_taken() -> None:
    f = jitgraph.compile(forward, backend="eager")
    layer, x = Layer(np.arange(4.0)), np.ones(4)
    f(layer, x)
    odd = Layer(np.arange(4.0))
    odd.__cuda_array_interface__ = {}  # the key's walk takes it for a device array: not this entry
    assert f._runners[0]((odd, x), {}) is MISS
    assert f._runners[0]((Layer(np.arange(4.0)), x), {}) is not MISS


def test_getattr_class_has_no_runner_but_runs_right() -> None:
    f = jitgraph.compile(forward, backend="eager")
    obj, x = Dynamic(np.arange(4.0)), np.ones(4)
    for _ in range(2):
        np.testing.assert_array_equal(f(obj, x), forward(obj, x))
    assert all(e.runner is None for e in f.entries)


def test_dicts_and_lists_key_order_and_length() -> None:
    f = jitgraph.compile(combine, backend="eager", cache_limit=16)
    a, b = np.arange(3.0), np.ones(3)
    calls = [({"a": a, "b": b}, [a]), ({"b": b, "a": a}, [a]), ({"a": a, "b": b}, [a, b]), ({"a": a, "b": b}, []),
             ({"a": a, "b": b, "c": a}, [a]), ({"a": a, "b": b}, (a,)), ({"a": a, "b": b}, [a])]
    for params, xs in calls:
        runner_pick_matches_generic(f, (params, xs))
        np.testing.assert_array_equal(f(params, xs), combine(params, xs))
    assert f.cache_info().entries == 6  # the last call is the first's again
    generic = counted(f)
    np.testing.assert_array_equal(f({"a": b, "b": a}, [b]), combine({"a": b, "b": a}, [b]))
    assert generic[0] == 0


def test_mutated_object_and_aliasing_with_an_attribute() -> None:
    eager, comp = Accumulator(3), Accumulator(3)
    f = Accumulator.compiled_step
    f.reset()
    for k in range(3):  # a method call: the bound object is the first argument
        x = np.arange(3.0) + k
        assert comp.compiled_step(x.copy()) == eager.step(x.copy())
        np.testing.assert_array_equal(comp.total, eager.total)
        np.testing.assert_array_equal(comp.last, eager.last)
        np.testing.assert_array_equal(comp.history["first"], eager.history["first"])
    generic = counted(f)
    comp.compiled_step(np.ones(3))
    eager.step(np.ones(3))
    assert generic[0] == 0
    # Distinct arrays owning their memory, the attribute's among them, pass on one test (no owner ids).
    assert "type(x0) is ndarray and x0.base is None" in runner_source(f.entries[-1])
    # The argument is the attribute the function updates in place (then a view of it): not the traced aliasing.
    for alias in (lambda acc: acc.total, lambda acc: acc.total[:]):
        assert f._runners[0]((comp, alias(comp)), {}) is MISS
        assert comp.compiled_step(alias(comp)) == eager.step(alias(eager))
        np.testing.assert_array_equal(comp.total, eager.total)
        np.testing.assert_array_equal(comp.last, eager.last)
        np.testing.assert_array_equal(comp.history["first"], eager.history["first"])
    assert generic[0] > 0


def _attribute(kind: str, base: np.ndarray) -> Any:
    return {
        "f8[4]": lambda: np.arange(4.0),
        "f4[4]": lambda: np.arange(4, dtype=np.float32),
        "f8[3]": lambda: np.arange(3.0),
        "f8[::2]": lambda: np.arange(8.0)[::2],
        "base[:4]": lambda: base[:4],
        "base[2:6]": lambda: base[2:6],
        "float": lambda: 1.5,
        "int": lambda: 2,
        "list": lambda: [1.0, 2.0],
        "dict": lambda: {"k": 1.0},
    }[kind]()


KINDS = ["f8[4]", "f4[4]", "f8[3]", "f8[::2]", "base[:4]", "base[2:6]", "float", "int", "list", "dict"]


def scaled_sum(layer: Any, x: Any) -> Any:
    w = layer.W
    if isinstance(w, dict):
        w = w["k"]
    elif isinstance(w, list):
        w = w[0]
    return np.sum(x * w) + layer.scale


@given(st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from(["f8[4]", "base[:4]", "base[4:]", "W"]),
                          st.sampled_from([Layer, SubLayer, Slotted])), min_size=2, max_size=6))
def test_runners_pick_the_entry_the_generic_path_finds(calls: list[tuple[str, str, type]]) -> None:
    f = jitgraph.compile(scaled_sum, backend="eager", cache_limit=64)
    for w_kind, x_kind, cls in calls:
        base = np.arange(8.0)
        layer = cls(_attribute(w_kind, base))
        x = {"f8[4]": np.arange(4.0), "base[:4]": base[:4], "base[4:]": base[4:], "W": layer.W}[x_kind]
        args = (layer, x)
        try:
            expected = scaled_sum(layer, x)
        except Exception as exc:  # noqa: BLE001 - the compiled call must raise the same
            with pytest.raises(type(exc)):
                f(*args)
            continue
        runner_pick_matches_generic(f, args)
        np.testing.assert_allclose(f(*args), expected)


class Reads:
    """Counts reads of its attributes (for the guard rewrite alone: a runner never takes such a class)."""

    def __init__(self, **values: Any) -> None:
        object.__setattr__(self, "reads", {})
        for k, v in values.items():
            object.__setattr__(self, k, v)

    def __getattribute__(self, name: str) -> Any:
        reads = object.__getattribute__(self, "reads")
        reads[name] = reads.get(name, 0) + 1
        return object.__getattribute__(self, name)


GUARDS = ["type(A[0].m) is dict and tuple(A[0].m) == K[0]",
          "type(A[0].m['W']) is ndarray and A[0].m['W'].shape == K[1] and A[0].m['W'].dtype == K[2]",
          "A[0].lr > 0.5 if A[0].flag else A[0].rate < 1 < A[0].lr",
          "A[0].rate == 0.25"]


@pytest.mark.parametrize("values", [
    {"m": {"W": np.ones(3)}, "lr": 1.0, "flag": True, "rate": 0.25},
    {"m": {"W": np.ones(3)}, "lr": 2.0, "flag": False, "rate": 0.25},
    {"m": {"W": np.ones(3)}, "lr": 0.1, "flag": True, "rate": 0.25},
    {"m": {"W": np.ones(3, np.float32)}, "lr": 1.0, "flag": True, "rate": 0.25},
    {"m": {"V": np.ones(3)}, "lr": 1.0, "flag": True, "rate": 0.25},
    {"m": [1.0], "lr": 1.0, "flag": True, "rate": 0.25},
])
def test_guard_rewrite_agrees_and_reads_each_path_once(values: dict) -> None:
    ns: dict[str, Any] = {"K": [("W",), (3,), np.dtype(np.float64)], "ndarray": np.ndarray}
    held, extras = straight_line(GUARDS, ["A[0].m['W']", "A[0].lr"], {"A[0]": "a0"}, ns)
    assert "is K2 or" in held and held.count("a0.m") == 1

    def run(code: str, obj: Reads) -> Any:
        try:
            return eval(code, {**ns, "a0": obj, "A": (obj,)})
        except Exception as exc:  # noqa: BLE001 - a guard that raises fails
            return type(exc)

    original = " and ".join(f"({g})" for g in GUARDS)
    expected, obj = run(original, Reads(**values)), Reads(**values)
    got = run(f"({held}) and ({', '.join(extras)},)", obj)
    if expected is True:
        assert got == (values["m"]["W"], values["lr"])
        assert obj.reads["m"] == 1  # rate and lr: read in a branch first (kept), then bound at a sure read
    else:
        assert not got or got is expected


def test_guards_check_structure_before_array_properties() -> None:
    """Types, dict keys and values first, shapes and dtypes after: an optimiser whose ``m`` holds other keys fails
    at its keys, before any array of ``w`` is looked at (and the conjunction is the same either way)."""
    ns: dict[str, Any] = {"K": [("W",), (3,), np.dtype(np.float64), ("a", "b")], "ndarray": np.ndarray}
    guards = ["type(A[0].w) is ndarray", "A[0].w.shape == K[1]", "A[0].w.dtype == K[2]",
              "type(A[0].m) is dict", "tuple(A[0].m) == K[0]"]
    held, _ = straight_line(guards, [], {"A[0]": "a0"}, ns)
    assert held.index("tuple(") < held.index(".shape") and held.index("tuple(") < held.index(".dtype")
    for m, w in (({"W": 1}, np.ones(3)), ({"V": 1}, np.ones(3)), ({"W": 1}, np.ones(4)), ({"W": 1}, [1.0])):
        obj = Reads(m=m, w=w)
        want = eval(" and ".join(f"({g})" for g in guards), {**ns, "A": (obj,)})
        assert bool(eval(held, {**ns, "a0": obj})) == bool(want)


def test_guard_rewrite_leaves_unmodelled_code_alone() -> None:
    ns: dict[str, Any] = {"K": []}
    held, extras = straight_line(["all(x > 0 for x in A[0].m)", "A[0].m"], ["A[0].m"], {"A[0]": "a0"}, ns)
    assert held == "(all((x > 0 for x in a0.m))) and (a0.m)" and extras == ["a0.m"]


class Momentum:
    def __init__(self) -> None:
        self.v = None
        self.lr = 0.1

    def step(self, w: np.ndarray, g: np.ndarray) -> float:
        if self.v is None:
            self.v = np.zeros_like(w)
        self.v = 0.9 * self.v + g
        w -= self.lr * self.v
        return float(w.sum())


def test_entries_of_one_key_share_a_group_call() -> None:
    """Entry 1 (``self.v is None``) and entry 2 (an array) have one key: the call checks the layout once, then each
    entry's guards in publication order; a state that matches entry 1 again runs entry 1, aliasing a third."""
    f = jitgraph.compile(Momentum.step)
    opt, ref = Momentum(), Momentum()
    w, w_ref = np.ones(4), np.ones(4)

    def check(g: np.ndarray, g_ref: np.ndarray) -> None:
        assert f(opt, w, g) == Momentum.step(ref, w_ref, g_ref)
        np.testing.assert_array_equal(w, w_ref)
        np.testing.assert_array_equal(opt.v, ref.v)

    for k in range(3):
        check(np.full(4, k + 1.0), np.full(4, k + 1.0))
    assert f.cache_info().entries == 2 and f._call.__name__ == "call_group_1"
    generic = counted(f)
    check(np.ones(4), np.ones(4))
    opt.v = ref.v = None  # entry 1's state again: its tail, tried first, takes it
    hits = f.cache_info().hits
    check(np.ones(4), np.ones(4))
    assert generic[0] == 0 and f.cache_info().hits == hits + 1
    check(w, w_ref)  # the gradient is the weights: other aliasing, a third entry of the same key
    assert generic[0] == 1 and f.cache_info().entries == 3
    check(w, w_ref)
    check(np.ones(4), np.ones(4))
    source = f._call.source
    assert generic[0] == 1 and source.index("# entry 1:") < source.index("# entry 2:") < source.index("# entry 3:")
    check(np.ones(4, np.float32), np.ones(4, np.float32))  # another layout: past the group, the generic path
    assert generic[0] == 2
    check(np.ones(4, np.float32), np.ones(4, np.float32))  # now past the group, entry 4's runner
    assert generic[0] == 2 and f.cache_info().entries == 4


def add_attribute(layer: Any, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + layer.W * y


def _aliased(kind: str, x: np.ndarray) -> np.ndarray:
    return {
        "x": lambda: x,
        "copy": lambda: x.copy(),
        "view": lambda: x[:],
        "strided": lambda: np.lib.stride_tricks.as_strided(x, x.shape, x.strides),
        "reversed": lambda: x[::-1],
    }[kind]()


@given(st.lists(st.tuples(st.sampled_from(["x", "copy", "view", "strided", "reversed"]),
                          st.sampled_from(["x", "copy", "W"]), st.sampled_from([0, 3])), min_size=2, max_size=6))
def test_arrays_passed_twice_pick_the_entry_the_generic_path_finds(calls: list[tuple[str, str, int]]) -> None:
    """Entries traced with an argument that is also an attribute (``layer.W is x``): the runner checks identity,
    then owners, and asks ``alias_pattern`` where those cannot decide (views, foreign memory, empty arrays)."""
    f = jitgraph.compile(add_attribute, backend="eager", cache_limit=64)
    for w_kind, y_kind, n in calls:
        x = np.arange(float(n))
        layer = Layer(_aliased(w_kind, x))
        y = {"x": x, "copy": x.copy(), "W": layer.W}[y_kind]
        args = (layer, x, y)
        runner_pick_matches_generic(f, args)
        np.testing.assert_array_equal(f(*args), add_attribute(layer, x, y))


class _Counter:
    def __init__(self) -> None:
        self.w = np.arange(4.0)
        self.t = 3

    def step(self, x: np.ndarray) -> np.ndarray:
        self.w *= 0.5
        return self.w * self.t + x


def test_a_number_read_from_an_attribute_keeps_the_one_test_aliasing_path() -> None:
    """An int attribute beside an array attribute: the runner's first aliasing test accepts it (a number has no
    memory), and passing the attribute's own array as the argument still goes to the exact check, like eager."""
    eager, comp = _Counter(), _Counter()
    f = jitgraph.compile(_Counter.step)
    for k in range(3):
        x = np.ones(4) * k
        np.testing.assert_array_equal(f(comp, x), eager.step(x))
        np.testing.assert_array_equal(comp.w, eager.w)
    source = runner_source(f.entries[-1])
    assert "type(x0) is int or type(x0) is float" in source or "type(x1) is int or type(x1) is float" in source
    np.testing.assert_array_equal(f(comp, comp.w), eager.step(eager.w))
    np.testing.assert_array_equal(comp.w, eager.w)
