"""Issue 17, item 4 (driver part): exceptions in the right order. When a call raises, the in-place updates that
eager NumPy performs before the failing operation must have happened, and those after it must not -- on the first
call of an entry and on every later one. Each case runs the eager function and the compiled one on equal copies of
the arguments and compares the exception (type and message), the result and every argument afterwards."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jitgraph
from jitgraph.jit import effects, stages

BACKENDS = ["eager", "cpu"]


@pytest.fixture(autouse=True)
def strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JITGRAPH_STRICT", "1")  # a backend bug raises instead of falling back to eager


def outcome(fn: Callable[..., Any], args: tuple) -> tuple[Any, str | None]:
    try:
        return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - compared below
        return None, f"{type(exc).__name__}: {exc}"


def same_as_eager(fn: Callable[..., Any], compiled: Callable[..., Any], make: Callable[[], tuple]) -> str | None:
    """Run both on fresh equal arguments; assert equal exception, result and arguments. Returns the exception."""
    eager_args, jit_args = make(), make()
    want, want_exc = outcome(fn, eager_args)
    got, got_exc = outcome(compiled, jit_args)
    assert got_exc == want_exc
    if want_exc is None:
        np.testing.assert_array_equal(got, want)
    for a, b in zip(jit_args, eager_args):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg="an argument differs from eager NumPy's after the call")
    return want_exc


def scale_then_domain_error(x: np.ndarray, beta: float, t: int) -> np.ndarray:
    x *= 2
    return x * math.sqrt(1 - beta ** t)


def scale_then_fail_then_update(x: np.ndarray, z: np.ndarray, beta: float, t: int) -> np.ndarray:
    x *= 2  # happens in eager NumPy
    y = x * math.sqrt(1 - beta ** t)  # raises for beta > 1
    z += 1  # does not
    return y


def increment_then_negative_power(x: np.ndarray) -> np.ndarray:
    x += 1
    return x ** np.array(-1)


def increment_then_store(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    x += 1
    x[idx] = 0
    return x * 2


def increment_then_gather(x: np.ndarray, y: np.ndarray, idx: np.ndarray) -> np.ndarray:
    x += 1
    return y[idx]


@pytest.mark.parametrize("backend", BACKENDS)
def test_update_before_a_failed_check_happens(backend: str) -> None:
    """``x *= 2`` then ``math.sqrt`` of a negative number (beta = 1.1, a float argument): eager doubles x, then
    raises ValueError; the graph's check runs before its kernel, so the compiled call raised with x untouched --
    on the first call and on every call of a warm entry."""
    f = jitgraph.compile(scale_then_domain_error, backend=backend)
    for beta in (0.9, 1.1, 1.1, 0.5, 1.2):
        exc = same_as_eager(scale_then_domain_error, f, lambda beta=beta: (np.arange(4.0), beta, 3))
        assert (exc is not None) == (beta > 1)
    assert [e.mode for e in f.entries] == ["graph"]  # the data error is the caller's: the entry stays compiled


@pytest.mark.parametrize("backend", BACKENDS)
def test_update_after_the_failing_operation_does_not_happen(backend: str) -> None:
    f = jitgraph.compile(scale_then_fail_then_update, backend=backend)
    for beta in (1.1, 0.9, 1.1):
        same_as_eager(scale_then_fail_then_update, f, lambda beta=beta: (np.arange(4.0), np.zeros(4), beta, 3))
    assert [e.mode for e in f.entries] == ["graph"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_update_before_an_integer_negative_power_happens(backend: str) -> None:
    """``x += 1; x ** np.array(-1)`` on an int array: eager increments x, then raises; the fused kernel raised
    before (or in the middle of) its write."""
    f = jitgraph.compile(increment_then_negative_power, backend=backend)
    for _ in range(3):
        exc = same_as_eager(increment_then_negative_power, f, lambda: (np.arange(4),))
        assert exc is not None and exc.startswith("ValueError")
    assert [e.mode for e in f.entries] == ["graph"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_store_and_gather_out_of_range(backend: str) -> None:
    store = jitgraph.compile(increment_then_store, backend=backend)
    gather = jitgraph.compile(increment_then_gather, backend=backend)
    for bad in (False, True, True, False):
        k = 9 if bad else 1
        assert (same_as_eager(increment_then_store, store, lambda k=k: (np.zeros(3), np.array([0, k])))
                is not None) == bad
        assert (same_as_eager(increment_then_gather, gather, lambda k=k: (np.zeros(3), np.arange(3.0), np.array([k])))
                is not None) == bad


def adam_like(p: np.ndarray, g: np.ndarray, lr: float, beta: float, t: int) -> None:
    p -= (lr / (1 - beta ** t)) * g  # a Python float division: raises ZeroDivisionError when beta ** t == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_warm_calls_copy_nothing_when_every_check_runs_before_the_first_write(
        backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The common case (an optimizer step whose only check is on a scalar, before the update kernel) reruns
    eagerly when it raises but copies no argument on any call, and runs on the fast path like a graph that cannot
    raise (its runner catches the raise); only a graph that may raise after a write pays for a snapshot."""
    copies: list[int] = []
    original = effects.snapshot

    def counting(leaves: list[Any], indices: tuple[int, ...]) -> Any:
        copies.append(len(indices))
        return original(leaves, indices)

    monkeypatch.setattr(effects, "snapshot", counting)
    f = jitgraph.compile(adam_like, backend=backend)
    make = (lambda: (np.ones(5), np.arange(5.0), 0.1, 0.9, 3))
    same_as_eager(adam_like, f, make)
    (entry,) = f.entries
    assert entry.on_raise == effects.RERUN and entry.fast  # the fast path catches the raise and reruns
    copies.clear()
    for _ in range(5):
        same_as_eager(adam_like, f, make)
    assert copies == []
    same_as_eager(adam_like, f, lambda: (np.ones(5), np.arange(5.0), 0.1, 1.0, 3))  # ZeroDivisionError
    assert copies == [] and [e.mode for e in f.entries] == ["graph"]

    power = jitgraph.compile(increment_then_negative_power, backend=backend)
    same_as_eager(increment_then_negative_power, power, lambda: (np.arange(1, 4),))
    assert power.entries[0].on_raise == effects.SNAPSHOT

    plain = jitgraph.compile(lambda x, y: np.add(x, y, out=x), backend=backend)
    plain(np.ones(3), np.ones(3))
    assert plain.entries[0].on_raise == effects.FAST and plain.entries[0].fast


def test_a_graph_that_raises_where_numpy_does_not_is_demoted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without JITGRAPH_STRICT, a warm graph that raises where eager NumPy succeeds (a backend bug, simulated
    here) gives NumPy's result with NumPy's effects, and the entry runs eagerly from then on."""
    monkeypatch.delenv("JITGRAPH_STRICT")
    f = jitgraph.compile(scale_then_domain_error, backend="eager")
    same_as_eager(scale_then_domain_error, f, lambda: (np.arange(4.0), 0.9, 3))
    (entry,) = f.entries

    def broken(leaves: list[Any]) -> Any:
        leaves[0][...] = -1.0  # a half-done write, then a failure
        raise ValueError("backend bug")

    monkeypatch.setattr(entry, "compiled", broken)
    monkeypatch.setattr(entry, "on_raise", effects.SNAPSHOT)
    monkeypatch.setattr(entry, "fast", effects.runs_fast(effects.SNAPSHOT))  # as Entry.use sets it
    same_as_eager(scale_then_domain_error, f, lambda: (np.arange(4.0), 0.9, 3))
    assert entry.mode == "eager" and "backend bug" in str(entry.break_reason)
    same_as_eager(scale_then_domain_error, f, lambda: (np.arange(4.0), 0.9, 3))


def test_a_first_run_that_fails_in_the_backend_runs_the_call_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without JITGRAPH_STRICT, a graph whose first run fails where NumPy succeeds: the mutation is undone, the
    call runs eagerly exactly once (x incremented once, not twice), and the entry is eager from then on."""
    monkeypatch.delenv("JITGRAPH_STRICT")
    original = stages.get_backend

    class Broken:
        """The real artifact, but its call fails after writing x in place."""

        def __init__(self, artifact: Any) -> None:
            self.artifact = artifact

        def __call__(self, leaves: list[Any]) -> Any:
            self.artifact(leaves)
            raise RuntimeError("backend bug")

        def __getattr__(self, name: str) -> Any:
            return getattr(self.artifact, name)

    def get_backend(name: str) -> Any:
        return lambda *args, **kwargs: Broken(original(name)(*args, **kwargs))

    monkeypatch.setattr(stages, "get_backend", get_backend)
    f = jitgraph.compile(increment_then_store, backend="eager")
    for _ in range(2):
        same_as_eager(increment_then_store, f, lambda: (np.zeros(3), np.array([0, 1])))
    assert [e.mode for e in f.entries] == ["eager"]


class _Holder:
    pass


def _append_then_divide(x, h):
    t = float(x.sum())
    h.append(t)
    return 1.0 / t


def _store_then_divide(x, o):
    t = float(x.sum())
    o.t = t
    return 1.0 / t


def _append_then_gather_in_loop(x, h):
    h.append(1)
    out = np.zeros(3)
    for i in range(len(x)):
        out[i] = np.arange(5.0)[x[i]]
    return out


def _append_then_solve(x, h):
    h.append(1)
    return np.linalg.solve(x, np.ones(2))


def _append_update_then_gather(x, w, h):
    h.append(float(w.sum()))
    for i in range(len(x)):
        w[i] += np.arange(5.0)[x[i]]
    return w


def _state(value):
    return vars(value) if isinstance(value, _Holder) else value


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("fn", "make_state", "good", "bad"), [
    (_append_then_divide, list, [1.0, 2.0], [1.0, -1.0]),
    (_store_then_divide, _Holder, [1.0, 2.0], [1.0, -1.0]),
    (_append_then_gather_in_loop, list, [0, 1, 2], [0, 7, 2]),
    (_append_then_solve, list, [[2.0, 1.0], [1.0, 3.0]], [[1.0, 2.0], [2.0, 4.0]]),
], ids=lambda v: getattr(v, "__name__", None) or "")
def test_object_stores_before_a_data_error_are_made(fn, make_state, good, bad, backend):
    """Found by a probe corpus: a graph that writes no argument array was FAST, so its data error reached the
    caller straight from the graph, and the stores to objects before it -- replayed only after a graph that
    returns -- were lost (``h.append(t); return 1.0 / t`` left ``h`` empty). Replayed stores now make such a graph
    rerun eagerly when it raises, counting reads at a computed scalar index (``a[x[i]]``) as raising too."""
    compiled = jitgraph.compile(fn, backend=backend, cache=False)
    for _ in range(3):
        for values in (good, bad):
            eager_state, jit_state = make_state(), make_state()
            want, want_exc = outcome(fn, (np.array(values), eager_state))
            got, got_exc = outcome(compiled, (np.array(values), jit_state))
            assert (got_exc is None) == (want_exc is None) and type(got) is type(want)
            if want_exc is not None:
                assert got_exc.split(":")[0] == want_exc.split(":")[0]
            assert repr(_state(jit_state)) == repr(_state(eager_state))


@pytest.mark.parametrize("backend", BACKENDS)
def test_object_store_and_array_update_before_an_index_error(backend):
    compiled = jitgraph.compile(_append_update_then_gather, backend=backend, cache=False)
    for _ in range(3):
        for x in ([0, 1, 2], [0, 9, 2]):
            eager = (np.array(x), np.ones(3), [])
            jit = (np.array(x), np.ones(3), [])
            _, want_exc = outcome(_append_update_then_gather, eager)
            _, got_exc = outcome(compiled, jit)
            assert (got_exc is None) == (want_exc is None)
            np.testing.assert_array_equal(jit[1], eager[1])
            assert jit[2] == eager[2]
