"""Measured tier-down (jit/tiering.py, issue 21): a graph entry is timed against the user's function over its first
calls and runs eagerly where the graph is not faster; each entry decides on its own. Every call is compared with
eager NumPy (values, mutated arguments, exceptions). Timings are made one-sided where a decision is asserted: a
stubbed compiled graph that sleeps, or a Python loop whose eager run is hundreds of times slower than its graph."""

from __future__ import annotations

import time

import numpy as np
import pytest

import jitgraph
from jitgraph import device_arrays
from jitgraph.jit import eager_mode, tiering
from jitgraph.jit.effects import SNAPSHOT
from tests.realworld import corpus, corpus_numeric, harness
from tests.thread_storm import storm


def sum_squares(x):
    acc = 0.0
    for i in range(x.shape[0]):  # eagerly a Python loop over NumPy scalars; compiled, one small loop
        acc = acc + x[i] * x[i]
    return acc


class _Slowed:
    """A compiled graph made slower by ``seconds`` a run (the dispatch reads ``entry.compiled`` per call); the rest
    of the backend protocol (explain) is the graph's own."""

    def __init__(self, inner, seconds):
        self.inner, self.seconds = inner, seconds

    def __call__(self, *args):
        time.sleep(self.seconds)
        return self.inner(*args)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _slowed(entry, seconds=2e-3):
    """Slow down the entry's graph on the slow path and on the runner that times its fast path (tiering.Probe)."""
    entry.compiled = _Slowed(entry.compiled, seconds)
    probe = entry.probe
    if probe.graph_run is not None:
        probe.graph_run = _Slowed(probe.graph_run, seconds)


def _drive(cf, x, calls=tiering.PROBE_CALLS + 2):
    for _ in range(calls):
        np.testing.assert_allclose(cf(x), cf.fn(x), rtol=1e-12)


def test_small_call_tiers_down_and_a_large_call_of_the_same_function_stays_compiled():
    cf = jitgraph.compile(sum_squares, tier_down=True)
    small = np.arange(3.0)
    cf(small)  # the first run, where kernels compile: not measured
    first = cf.entries[0]
    assert first.mode == "graph" and first.probe is not None and not first.fast
    assert first.probe.graph_run is not None and first.probe.eager_run is not None  # timed as a call runs either way
    _slowed(first)
    _drive(cf, small)
    assert first.mode == "eager" and first.probe is None
    assert first.measured.startswith("measured: compiled ") and first.measured.endswith("runs eagerly "
                                                                                        "(tier_down=False keeps the graph)")
    assert "eager" in first.break_reason.reason and first.break_reason.filename == sum_squares.__code__.co_filename

    large = np.linspace(0.0, 1.0, 3000)  # every entry eager: eager mode checks one call in CHECK_EVERY
    _drive(cf, large, eager_mode.CHECK_EVERY + tiering.PROBE_CALLS + 2)
    second = cf.entries[1]
    assert second.mode == "graph" and second.probe is None and second.fast
    assert second.measured.endswith("runs compiled")

    info = cf.cache_info()
    assert (info.entries, info.tiered_down) == (2, 1)
    text = str(cf.explain())
    assert "entry 1: measured: compiled" in text and "entry 2: measured: compiled" in text
    assert "runs eagerly" in text and "runs compiled" in text
    # After the decision: the small call runs the function, the large one the graph.
    fallbacks = cf.cache_info().fallbacks
    _drive(cf, small, 2)
    _drive(cf, large, 2)
    assert cf.cache_info().fallbacks == fallbacks + 2


def test_probe_decides_on_median_and_minimum_with_a_margin():
    """A graph that wins is not tiered down by one slow sample, nor by a tie inside the margin."""
    def decide(compiled, eager):
        probe = tiering.Probe("f", 1)
        entry = type("E", (), {"mode": "graph", "on_raise": "fast", "fast": False, "probe": probe, "measured": None,
                               "demote": lambda self, reason: setattr(self, "mode", "eager")})()
        probe.compiled, probe.eager = list(compiled), list(eager)
        probe._maybe_decide(entry)
        return entry.mode, entry.measured

    n, most, early = tiering.PROBE_RUNS, tiering.MAX_RUNS, tiering.EARLY_RUNS
    assert decide([10e-6] * (n - 1) + [1e-3], [12e-6] * n)[0] == "graph"  # one preempted compiled run
    assert decide([10e-6] * n, [9.9e-6] * n)[0] == "graph"  # inside the margin
    assert decide([10e-6] * n, [5e-6] * (n - 1) + [20e-6])[0] == "eager"
    assert decide([10e-6] * n, [5e-6] * (n - 2) + [20e-6] * 2)[0] == "eager"  # 7/9 of the pairs agree
    # 2/3 of the pairs: the medians say eager, the pairs not yet: more samples, then the graph is kept
    assert decide([10e-6] * n, [5e-6] * (n - 3) + [20e-6] * 3) == ("graph", None)
    mode, measured = decide([10e-6] * most, [5e-6] * (most - 6) + [20e-6] * 6)
    assert mode == "graph" and measured.endswith("runs compiled")
    # Every run waits for the scheduler (milliseconds where the work is microseconds): medians and minimums fall
    # on eager's side by chance, the pairs come out near even.
    stalls_c, stalls_e = [8e-3, 12e-3, 16e-3] * (most // 3), ([4e-3, 8e-3, 12e-3, 16e-3] * most)[:most]
    assert decide(stalls_c, stalls_e)[0] == "graph"
    assert decide([10e-6] * early, [30e-6] * early)[0] == "graph"  # clear after a block each: the large call's case
    assert decide([30e-6] * early, [10e-6] * early) == ("graph", None)  # a demotion waits for PROBE_RUNS
    assert decide([10e-6] * early, [15e-6] * early) == ("graph", None)  # not clear yet: undecided


def scatter_and_sum(x, idx, v):
    x[idx] = v  # an index array: may raise after an earlier write, so the entry snapshots x (effects.SNAPSHOT)
    x *= 2.0
    return x.sum()


def test_a_mutating_entry_that_may_raise_is_probed_exactly():
    cf = jitgraph.compile(scatter_and_sum, tier_down=True)
    x_e, x_c = np.arange(6.0), np.arange(6.0)
    idx, v = np.array([1, 4]), np.array([7.0, 8.0])
    assert cf(x_c, idx, v) == scatter_and_sum(x_e, idx, v)
    assert not cf.entries[0].fast  # never on the fast path: the slow path, with its snapshot, is timed
    for k in range(tiering.PROBE_CALLS + 2):
        if k in (4, 7):  # an index out of range on a graph turn, an eager turn: NumPy's exception, x as it leaves it
            bad = np.array([1, 9])
            with pytest.raises(IndexError) as eager_exc:
                scatter_and_sum(x_e, bad, v)
            with pytest.raises(IndexError) as comp_exc:
                cf(x_c, bad, v)
            assert str(comp_exc.value) == str(eager_exc.value)
        else:
            assert cf(x_c, idx, v) == scatter_and_sum(x_e, idx, v)
        np.testing.assert_array_equal(x_c, x_e)
    entry = cf.entries[0]
    assert entry.probe is None and entry.measured is not None
    if entry.mode == "graph":
        assert entry.on_raise == SNAPSHOT and not entry.fast  # fast stays what on_raise allows


def double(x):
    return x * 2.0


def none_when_large(x):
    s = np.abs(x).max()
    if s > 10.0:  # a data-dependent return of another kind of value: resumed after the branch (jit/resume.py)
        return None
    return np.tanh(x) / s


@pytest.mark.parametrize("how", ["off", "fullgraph", "eager backend"])
def test_entries_not_measured(how):
    kwargs = {"off": {}, "fullgraph": {"fullgraph": True, "tier_down": True},
              "eager backend": {"backend": "eager", "tier_down": True}}[how]
    cf = jitgraph.compile(double, **kwargs)  # "off": the test suite sets JITGRAPH_TIER_DOWN=0
    x = np.arange(1.0, 5.0)
    _drive(cf, x)
    entry = cf.entries[0]
    assert (entry.mode, entry.probe, entry.measured) == ("graph", None, None)
    assert tiering.why_not(cf, entry) == {"off": "tier-down is off", "fullgraph": "fullgraph=True",
                                           "eager backend": "backend 'eager'"}[how]


def test_a_resumed_graph_is_measured_and_its_new_parts_are_not_timed():
    """A graph resumed after a data-dependent break (jit/resume.py) is measured; the calls that traced a new part
    after the break (the other side of ``s > 10``) are not timed, and every call equals eager."""
    cf = jitgraph.compile(none_when_large, tier_down=True)
    small, large = np.arange(1.0, 5.0), np.arange(1.0, 5.0) * 10
    cf(small)
    entry = cf.entries[0]
    assert tiering.why_not(cf, entry) is None and entry.probe is not None
    for k in range(tiering.PROBE_CALLS + 2):
        x = large if k in (3, 11) else small  # the other path, first traced on a timed call
        out, ref = cf(x), none_when_large(x)
        assert (out is None and ref is None) or np.array_equal(out, ref)
    assert entry.probe is None and entry.measured is not None
    assert entry.mode == "eager" or len(entry.compiled.root.children) == 2


def test_a_call_that_traced_a_new_part_is_not_timed():
    compiled = type("Artifact", (), {"retraces": 0})()
    entry = type("E", (), {"mode": "graph", "on_raise": "fast", "fast": False, "compiled": compiled})()
    probe = tiering.Probe("f", 1)

    def graph():
        compiled.retraces += 1  # as ResumableArtifact does when a call resumes on a new value
        return 1

    for _ in range(tiering.BLOCK):  # the first block runs the graph
        probe.run(entry, graph, lambda: 2, (), {})
    assert probe.compiled == []
    for _ in range(tiering.BLOCK):  # the eager block is timed
        probe.run(entry, graph, lambda: 2, (), {})
    assert len(probe.eager) == tiering.BLOCK - tiering.DISCARD


def test_gradients_are_not_measured():
    g = jitgraph.grad(lambda x: (x * x).sum(), tier_down=True)
    x = np.arange(4.0)
    for _ in range(4):
        np.testing.assert_allclose(g(x), 2 * x)
    assert g.entries[0].probe is None and g.entries[0].mode == "graph"


def test_the_environment_variable_switches_it_when_the_option_is_not_given(monkeypatch):
    monkeypatch.setenv("JITGRAPH_TIER_DOWN", "1")
    assert tiering.enabled({}) and not tiering.enabled({"tier_down": False})
    monkeypatch.setenv("JITGRAPH_TIER_DOWN", "0")
    assert not tiering.enabled({}) and tiering.enabled({"tier_down": True})


def test_threads_during_the_probe_decide_once(monkeypatch):
    cf = jitgraph.compile(double, tier_down=True)
    x = np.arange(5.0)
    cf(x)
    _slowed(cf.entries[0], 1e-4)
    decisions = []
    real = tiering.Probe._decide

    def counting(self, entry, demote, *samples):
        decisions.append(demote)
        real(self, entry, demote, *samples)

    monkeypatch.setattr(tiering.Probe, "_decide", counting)

    def worker(_: int) -> None:
        for _ in range(tiering.PROBE_CALLS):
            np.testing.assert_array_equal(cf(x), x * 2.0)

    storm(4, worker)
    assert len(decisions) == 1 and cf.entries[0].probe is None


CORPUS = ("Tanh.forward", "Adam.update", "AdamDict.step", "with_random", "coo_spmv", "embedding_backward")


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_functions_stay_exact_through_the_probe_and_after(name, monkeypatch):
    """Issue 18/19 corpus cases (tests/realworld), eager vs compiled on deep copies, every call compared (results,
    arguments, objects, globals, identity), over the whole probe and past its decision."""
    monkeypatch.setenv("JITGRAPH_TIER_DOWN", "1")
    case = next(c for c in corpus.CASES + corpus_numeric.CASES if c.name == name)
    out = harness.run_case(case, backend="cpu", calls=tiering.PROBE_CALLS + 4)
    assert out.wrong == []


class _Scaler:
    """State a guard reads: ``self.k`` (a float) and ``self.table`` (a dict of arrays)."""

    def __init__(self, k):
        self.k, self.table = k, {"w": np.arange(4.0)}

    def apply(self, x):
        return x * self.k + self.table["w"]


def test_a_demoted_entry_takes_every_call_of_its_layout_without_its_guards(monkeypatch):
    """Once measured slower, an entry checks the layout alone: a call whose guards it would have failed (another
    ``k``, another dict) runs the function too, equal to eager, instead of tracing a graph to measure again."""
    monkeypatch.setattr(device_arrays, "may_exist", lambda: False)  # as a CPU-only process (test_eager_mode.py)
    cf = jitgraph.compile(_Scaler.apply, tier_down=True)
    x, s = np.arange(4.0), _Scaler(2.0)
    cf(s, x)
    entry = cf.entries[0]
    _slowed(entry)
    for _ in range(tiering.PROBE_CALLS + 2):
        np.testing.assert_array_equal(cf(s, x), _Scaler.apply(s, x))
    assert entry.mode == "eager" and entry.check is None
    assert hasattr(cf._call, "checked")  # every entry eager: eager mode (jit/eager_mode.py)
    assert "self.k" not in cf._call.checked.source  # the runner checks the layout, not the guards
    for other in (_Scaler(3.5), _Scaler(-1.0)):
        other.table = {"w": np.ones(4), "b": np.zeros(4)}
        np.testing.assert_array_equal(cf(other, x), _Scaler.apply(other, x))
    info = cf.cache_info()
    assert (info.entries, info.recompiles, info.tiered_down) == (1, 0, 1)
    y = np.arange(6.0).reshape(2, 3)  # another layout: traced and measured afresh
    s2 = _Scaler(2.0)
    s2.table = {"w": np.ones(3)}
    for _ in range(eager_mode.CHECK_EVERY):  # eager mode checks one call in CHECK_EVERY
        np.testing.assert_array_equal(cf(s2, y), _Scaler.apply(s2, y))
    assert cf.cache_info().entries == 2
