"""Issue 17, item 4 (the tracer's part): an in-place write into a read-only array raises where NumPy raises it,
after exactly the effects eager code makes before it and none after. The trace sees the read-only flag and runs
such a call eagerly; the graph traced for writeable arrays is guarded on their writeability.

Each case runs the compiled function and the plain function on equal copies of the arguments and compares the
exception (type and message) and every argument afterwards; warm cases first fill the cache with writeable arrays.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jitgraph
from jitgraph.tracer import trace
from jitgraph.tracer.dynamic_ints import DynamicInt

BACKENDS = ["eager", "cpu"]


def readonly(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


def outcome(fn: Callable[..., Any], args: tuple) -> tuple[Any, list[np.ndarray]]:
    """(result or (exception type, message), the arguments' contents afterwards)."""
    try:
        result: Any = fn(*args)
    except Exception as exc:  # noqa: BLE001 - compared with eager's
        result = (type(exc), str(exc))
    return result, [np.array(a, copy=True) for a in args if isinstance(a, np.ndarray)]


def copies(args: tuple) -> tuple:
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            c = a.copy()
            c.flags.writeable = a.flags.writeable
            out.append(c)
        else:
            out.append(a)
    return tuple(out)


def assert_like_eager(compiled: Callable[..., Any], fn: Callable[..., Any], args: tuple) -> None:
    got, got_args = outcome(compiled, copies(args))
    want, want_args = outcome(fn, copies(args))
    if isinstance(want, tuple) and want and isinstance(want[0], type):
        assert got == want
    else:
        np.testing.assert_array_equal(got, want)
    for g, w in zip(got_args, want_args, strict=True):
        np.testing.assert_array_equal(g, w)


def b_then_a(a, b):
    b *= 2
    a *= 2


def a_then_b(a, b):
    a *= 2
    b *= 2


def setitem_second(a, b):
    a += 1
    b[...] = 3.0
    return a + b


def slice_store(a, b):
    a[0] = 5.0
    b[1:] = 0.0


def out_argument(a, b):
    np.multiply(a, 2, out=a)
    np.add(b, 1, out=b)
    return a


def copyto_second(a, b):
    a -= 1
    np.copyto(b, a)


def through_a_view(a, b):
    a += 1
    b.T[0] += 1
    return a


def read_only_is_read(a, b):
    a += b  # b is only read: fine eagerly and compiled
    return a * b


def in_a_loop(a, b):
    for i in range(3):
        a += 1
        b[i] = 0.0
    return a


def in_a_branch(a, b):
    a += 1
    if a.sum() > 0:
        b += 1
    return a


CASES = [in_a_loop, in_a_branch, b_then_a, a_then_b, setitem_second, slice_store, out_argument, copyto_second,
         through_a_view, read_only_is_read]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_read_only_argument_cold(fn: Callable[..., Any], backend: str) -> None:
    compiled = jitgraph.compile(fn, backend=backend)
    args = (np.arange(1.0, 5.0), readonly(np.arange(4.0)))
    assert_like_eager(compiled, fn, args)
    assert_like_eager(compiled, fn, args)  # the cached entry behaves the same


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_read_only_argument_after_writeable_calls(fn: Callable[..., Any], backend: str) -> None:
    compiled = jitgraph.compile(fn, backend=backend)
    for _ in range(2):
        assert_like_eager(compiled, fn, (np.arange(1.0, 5.0), np.arange(4.0)))
    assert_like_eager(compiled, fn, (np.arange(1.0, 5.0), readonly(np.arange(4.0))))
    # and writeable again: the graph entry still serves (no third trace)
    assert_like_eager(compiled, fn, (np.arange(1.0, 5.0), np.arange(4.0)))
    assert compiled.cache_info().entries <= 2


def test_read_only_view_arguments() -> None:
    """Read-only views NumPy hands out (broadcast_to) are refused the same way."""
    def f(a, b):
        a += 1
        b += 1

    compiled = jitgraph.compile(f, backend="eager")
    assert_like_eager(compiled, f, (np.zeros(3), np.broadcast_to(np.ones(3), (3,))))


def test_read_only_inside_a_container() -> None:
    def f(pair):
        pair[1] *= 0.5
        pair[0] *= 2

    compiled = jitgraph.compile(f, backend="eager")
    a, b = np.ones(3), readonly(np.ones(3))
    with pytest.raises(ValueError, match="read-only"):
        compiled([a, b])
    np.testing.assert_array_equal(a, np.ones(3))


G = readonly(np.arange(3.0))


def write_global(a):
    a += 1
    G[...] = 0.0


def test_read_only_global() -> None:
    compiled = jitgraph.compile(write_global, backend="eager")
    assert_like_eager(compiled, write_global, (np.zeros(3),))
    np.testing.assert_array_equal(G, np.arange(3.0))


def test_guard_text_and_break_reason() -> None:
    result = trace(b_then_a, (np.ones(2), readonly(np.ones(2))), {})
    assert result.breaks is not None and result.breaks.user_error is not None
    assert "read-only" in result.breaks.reason
    texts = [g.text for g in result.guards.guards]
    assert "b is not writeable (it is written in place)" in texts
    ok = trace(b_then_a, (np.ones(2), np.ones(2)), {})
    assert {"a is writeable (it is written in place)", "b is writeable (it is written in place)"} <= \
        {g.text for g in ok.guards.guards}
    only_read = trace(read_only_is_read, (np.ones(2), readonly(np.ones(2))), {})
    assert only_read.breaks is None
    assert [g.text for g in only_read.guards.guards if "writeable" in g.text] == \
        ["a is writeable (it is written in place)"]  # b is only read: its flag does not matter


# ---- the flag the driver needs for the other two cases of item 4 ------------------------------------------------
BETA = 1.1


def sqrt_after_update(x, t):
    x *= 2
    return x * math.sqrt(1 - BETA ** t)


def power_after_update(x):
    x += 1
    return x ** np.array(-1)


def test_may_raise_lists_the_run_time_checks() -> None:
    result = trace(power_after_update, (np.ones(3, dtype=np.int64),), {})
    assert result.graph is not None and result.graph.mutations
    assert [what for what, _, _ in result.extra["may_raise"]] == ["power"]
    assert result.extra["may_raise"][0][2] == power_after_update.__code__.co_firstlineno + 2
    plain = trace(a_then_b, (np.ones(3), np.ones(3)), {})
    assert plain.extra["may_raise"] == []


def test_may_raise_names_a_domain_check() -> None:
    result = trace(sqrt_after_update, (np.ones(3), DynamicInt(2)), {})
    assert result.graph is not None
    (what, filename, lineno), = result.extra["may_raise"]
    assert what.startswith("check (ValueError: math domain error")
    assert filename == __file__ and lineno == sqrt_after_update.__code__.co_firstlineno + 2


# The two cases on a cached (warm) call: the driver reruns a raising graph eagerly (jit/effects.py), restoring the
# mutated inputs first where a check runs after a write.
def test_domain_error_after_an_update_warm() -> None:
    compiled = jitgraph.compile(sqrt_after_update, backend="eager")
    for t in (0, 1, 2, 3):  # t changes: traced as a runtime int, so the domain check runs in the graph
        assert_like_eager(compiled, sqrt_after_update, (np.ones(3), t))


def test_negative_integer_power_after_an_update_warm() -> None:
    compiled = jitgraph.compile(power_after_update, backend="eager")
    for _ in range(2):
        assert_like_eager(compiled, power_after_update, (np.ones(3, dtype=np.int64),))
