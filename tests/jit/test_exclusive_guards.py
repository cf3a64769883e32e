"""Exclusive guard sets (jit/exclusive_guards.py): which pairs of entries can never match the same call, and the
group call trying the latest of such entries first while every call still runs the entry the generic path picks,
with eager NumPy's results and state."""

from __future__ import annotations

import numpy as np

import jitgraph
from jitgraph.jit.exclusive_guards import exclusive, facts, pairwise_exclusive
from jitgraph.tracer.guards import GuardSet, Source


def _set(*pairs: tuple[str, object]) -> GuardSet:
    """A guard set pinning each (path, value) as the tracer pins it: a dict's keys, a value, None."""
    g = GuardSet()
    for code, value in pairs:
        source = Source(code, code)
        if type(value) is dict:
            g.structure(source, value)
        else:
            g.equal(source, value)
    return g


def test_contradictions_on_one_path() -> None:
    empty, full = facts(_set(("A[0].m", {}))), facts(_set(("A[0].m", {"W": 1, "b": 2})))
    assert exclusive(empty, full) and exclusive(full, empty)
    assert exclusive(facts(_set(("A[0].t", 1))), facts(_set(("A[0].t", 2))))
    assert exclusive(facts(_set(("A[0].t", 1))), facts(_set(("A[0].t", True))))  # 1 == True, but other types
    assert exclusive(facts(_set(("A[0].name", "a"))), facts(_set(("A[0].name", None))))
    assert exclusive(facts(_set(("A[0].x", None))), facts(_set(("A[0].x", 3))))


def test_no_contradiction_keeps_the_order() -> None:
    # The same facts, other paths, floats (0.0 == -0.0), and keys that are floats are never called exclusive.
    assert not exclusive(facts(_set(("A[0].t", 1))), facts(_set(("A[0].t", 1))))
    assert not exclusive(facts(_set(("A[0].t", 1))), facts(_set(("A[0].u", 2))))
    assert not exclusive(facts(_set(("A[0].lr", 0.0))), facts(_set(("A[0].lr", -0.0))))
    assert not exclusive(facts(_set(("A[0].m", {0.0: 1}))), facts(_set(("A[0].m", {-0.0: 1}))))
    a, b, c = (facts(_set(("A[0].t", k))) for k in (1, 2, 1))
    assert pairwise_exclusive([a, b]) and not pairwise_exclusive([a, b, c])


class _Adagrad:
    """Its squared-gradient sums start as an empty dict: a first-call entry, then every later call's."""

    def __init__(self) -> None:
        self.sums: dict[str, np.ndarray] = {}

    def step(self, params, grads):
        for name, g in grads.items():
            if name not in self.sums:
                self.sums[name] = np.zeros_like(g)
            self.sums[name] += g * g
            params[name] -= 0.1 * g / (np.sqrt(self.sums[name]) + 1e-7)


def test_the_steady_state_entry_is_tried_first_and_calls_stay_eager_equal() -> None:
    rng = np.random.default_rng(1)
    step = jitgraph.compile(_Adagrad.step)
    comp, eager = _Adagrad(), _Adagrad()
    pc = {"W": rng.standard_normal((3, 2)), "b": np.zeros(2)}
    pe = {k: v.copy() for k, v in pc.items()}
    for _ in range(5):
        g = {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
        step(comp, pc, {k: v.copy() for k, v in g.items()})
        _Adagrad.step(eager, pe, g)
        for k, value in pe.items():
            np.testing.assert_allclose(pc[k], value, rtol=1e-12)
            np.testing.assert_allclose(comp.sums[k], eager.sums[k], rtol=1e-12)
    source = step._call.source
    assert source.index("# entry 2:") < source.index("# entry 1:")
    # A fresh optimiser (empty state) still runs the first call's entry: no new entry, the result eager's.
    info = step.cache_info()
    fresh, fresh_eager = _Adagrad(), _Adagrad()
    p2, p2e = {k: v.copy() for k, v in pc.items()}, {k: v.copy() for k, v in pc.items()}
    g = {"W": np.ones((3, 2)), "b": np.ones(2)}
    step(fresh, p2, g)
    _Adagrad.step(fresh_eager, p2e, g)
    for k, value in p2e.items():
        np.testing.assert_allclose(p2[k], value, rtol=1e-12)
    assert step.cache_info().misses == info.misses and step.cache_info().hits == info.hits + 1


def test_a_path_through_an_entrys_constant_is_not_compared() -> None:
    """A float is pinned by its bits, ``K[i](P) == K[j]``: ``K[i]`` is that entry's own constant, so the path is not
    compared across entries."""
    assert all("K[" not in path for path, _ in facts(_set(("A[0].lr", 0.5), ("A[0].t", 1))))


def test_a_fact_counts_only_beside_the_type_it_needs() -> None:
    """``P == 1`` against ``P == 2``, or other keys, without the path pinned to int or dict in both sets: an object
    of another class may answer either way, so the sets are not called exclusive."""
    def raw(*codes: str, constants: tuple = ()) -> dict:
        g = GuardSet()
        g.constants.extend(constants)
        for code in codes:
            g.add(code, code)
        return facts(g)

    assert not exclusive(raw("A[0].t == 1"), raw("A[0].t == 2"))
    assert not exclusive(raw("tuple(A[0].m) == K[0]", constants=((),)), raw("tuple(A[0].m) == K[0]", constants=(("W",),)))
    assert exclusive(raw("type(A[0].m) is dict and tuple(A[0].m) == K[0]", constants=((),)),
                     raw("type(A[0].m) is dict and tuple(A[0].m) == K[0]", constants=(("W",),)))
    assert not exclusive(raw("type(A[0].s) is dict and len(A[0].s) == 1"), raw("len(A[0].s) == 2"))
