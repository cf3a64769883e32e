"""Data-dependent graph breaks that split and resume (issue 18, jitgraph/jit/resume.py): a boolean-mask read,
np.unique/np.nonzero, a branch on ``float(...)``/``.item()`` that cannot become a cond, a data-dependent early
return -- at top level, in an inlined helper and in a loop. Each is compared with eager NumPy on deep copies
(return value, mutated arrays, the objects' ``__dict__``) over three calls with different data, so both paths of
a data-dependent ``if`` run; plus the per-segment recompile limit, ``fullgraph=True`` and explain."""

from __future__ import annotations

import copy
import logging

import numpy as np
import pytest

import jitgraph
import jitgraph.jit.resume
import jitgraph.tracer.resume
from jitgraph.errors import GraphBreakError


def _same(expected, actual, path="result"):
    assert type(expected) is type(actual), f"{path}: {type(actual)} != {type(expected)}"
    if isinstance(expected, np.ndarray | np.generic):
        assert expected.dtype == actual.dtype and np.shape(expected) == np.shape(actual), path
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12, err_msg=path)
    elif isinstance(expected, tuple | list):
        assert len(expected) == len(actual), path
        for i, (e, a) in enumerate(zip(expected, actual)):
            _same(e, a, f"{path}[{i}]")
    elif isinstance(expected, dict):
        assert list(expected) == list(actual), path
        for k in expected:
            _same(expected[k], actual[k], f"{path}[{k!r}]")
    elif hasattr(expected, "__dict__") and not callable(expected):
        _same(vars(expected), vars(actual), f"{path}.__dict__")
    elif type(expected) is float:
        assert actual == pytest.approx(expected, rel=1e-12, abs=1e-12, nan_ok=True), path
    else:
        assert expected == actual, f"{path}: {actual} != {expected}"


def _against_eager(fn, calls, method=None):
    """Run ``fn`` eagerly and compiled on deep copies of each call's arguments; compare everything."""
    compiled = jitgraph.compile(fn) if method is None else None
    state = calls[0][0] if method is not None else None
    eager_state, compiled_state = copy.deepcopy(state), copy.deepcopy(state)
    if method is not None:
        compiled = jitgraph.compile(getattr(compiled_state, method))
    for args in calls:
        if method is not None:
            args = args[1:]
        a, b = copy.deepcopy(args), copy.deepcopy(args)
        expected = getattr(eager_state, method)(*a) if method is not None else fn(*a)
        actual = compiled(*b)
        _same(expected, actual)
        _same(list(a), list(b), "arguments")
        if method is not None:
            _same(eager_state, compiled_state, "self")
    return compiled


def _split_no_fallback(compiled):
    info = compiled.cache_info()
    result = compiled.explain()
    assert info.fallbacks == 0 and result.break_reasons == [], result.break_reasons
    assert result.split_reasons, "expected a split"
    return result


def _data(seed, n=12):
    return np.random.default_rng(seed).standard_normal(n)


# ---- the break kinds ----------------------------------------------------------------------------------------
def mask_read(x):
    y = x * 2.0
    pos = y[y > 0]
    return pos.sum() + y.mean(), pos * 3.0


def unique_counts(x):
    y = np.round(x * 2.0)
    values, counts = np.unique(y, return_counts=True)
    return values * 2.0, counts + 1


def nonzero_mean(x, out):
    y = x - 0.25
    (idx,) = np.nonzero(y > 0)
    out += 1.0  # written in place: after the break, in the last graph
    return idx * 2, y.sum() / (idx.size + 1)


def best_loss(x, best):
    loss = float((x * x).sum())
    if loss < best:
        return x * 2.0, loss
    y = x * 3.0
    return y + best, best


def item_branch(x):
    s = (x * x).mean().item()
    scale = 1.0
    if s > 1.0:
        scale = np.sqrt(s)
    return x / scale


def early_none(x):
    y = x * 2.0
    if y.sum() > 0:
        return None
    return y + 1.0


def _helper(v):
    kept = np.sort(v[v > 0.5])  # sorted: a cut (only reduced, x[mask] stays in the graph)
    return kept.sum()


def nested(x):
    a = np.tanh(x)
    total = _helper(a) + _helper(-a)
    return a * total


def loop_of_masks(x):
    acc = 0.0
    for k in range(3):
        part = np.sort(x[x > k * 0.5])
        acc = acc + part.sum()
    return acc * x


class Tracker:
    def __init__(self):
        self.best = 1e9
        self.w = np.linspace(0.0, 1.0, 12)
        self.history = []

    def step(self, x):
        loss = float(((x - self.w) ** 2).sum())
        self.w = self.w - 0.1 * (self.w - x)
        if loss < self.best:
            self.best = loss
            self.history.append(loss)
        return self.w * 2.0


def solved_then_masked(x, a):
    w = np.linalg.solve(a, x[:3])
    kept = x[x > w.mean()]
    return kept * 2.0, w


def printed_then_masked(x):
    y = x + 1.0
    print("step", y.shape)
    big = y[y > 1.0]
    return big.mean() if big.size else y.sum()


def written_then_masked(x):
    x *= 2.0  # an argument written before the break, read after it
    kept = x[x > 0]
    return kept * 2.0, x  # returned: a cut (only reduced, x[mask] stays in the graph: tracer/selections.py)


def divides_by_count(x):
    kept = x[x > 0]
    return float(kept.sum()) / kept.size  # ZeroDivisionError (Python numbers) when nothing is kept


def method_nonzero_inverse(x):
    y = np.round(x)
    values, inverse = np.unique(y, return_inverse=True)
    (where,) = (y > 0).nonzero()
    return values[inverse] * 2.0, where, values.size


CALLS = {
    "solved_then_masked": (solved_then_masked, [(_data(s), np.eye(3) * 2.0 + 0.1) for s in (1, 2, 3)]),
    "method_nonzero_inverse": (method_nonzero_inverse, [(_data(s) * 2,) for s in (1, 2, 3)]),
    "written_then_masked": (written_then_masked, [(_data(s),) for s in (1, 2, 3)]),
    "mask_read": (mask_read, [(_data(s),) for s in (1, 2, 3)]),
    "unique_counts": (unique_counts, [(_data(s),) for s in (1, 2, 3)]),
    "nonzero_mean": (nonzero_mean, [(_data(s), np.zeros(4)) for s in (1, 2, 3)]),
    "best_loss": (best_loss, [(_data(1), 20.0), (_data(2), 5.0), (_data(3), 20.0)]),
    "item_branch": (item_branch, [(_data(1) * 3,), (_data(2) * 0.1,), (_data(3) * 3,)]),
    "early_none": (early_none, [(np.abs(_data(1)),), (-np.abs(_data(2)),), (np.abs(_data(3)),)]),
    "nested": (nested, [(_data(s),) for s in (1, 2, 3)]),
    "loop_of_masks": (loop_of_masks, [(_data(s),) for s in (1, 2, 3)]),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_break_kind_against_eager(name) -> None:
    fn, calls = CALLS[name]
    compiled = _against_eager(fn, calls)
    _split_no_fallback(compiled)


def test_exception_after_the_break_is_eagers(capsys) -> None:
    compiled = jitgraph.compile(divides_by_count)
    _same(divides_by_count(_data(1)), compiled(_data(1)))
    with pytest.raises(ZeroDivisionError):
        divides_by_count(-np.abs(_data(2)))
    with pytest.raises(ZeroDivisionError):
        compiled(-np.abs(_data(2)))


def test_print_runs_once_per_call(capsys) -> None:
    """A print before a data-dependent break: no resume (a later call the tree could not take could not rerun
    eagerly without printing twice), so the break stands and every call is eager's, printing once."""
    compiled = _against_eager(printed_then_masked, [(_data(s),) for s in (1, 2, 3)])
    assert capsys.readouterr().out == "step (12,)\n" * 6  # three eager calls, three compiled calls
    assert "boolean mask index" in str(compiled.explain())


def drawn_masked(x):
    noise = np.random.normal(size=x.shape)
    y = x + noise
    kept = y[y > 0]
    return kept.sum() * 2.0, y


def test_a_draw_before_the_break() -> None:
    compiled = jitgraph.compile(drawn_masked)
    for seed in (1, 2, 3):
        x = np.linspace(-1.0, 1.0, 16)
        np.random.seed(seed)
        expected = drawn_masked(x.copy())
        after = np.random.normal()
        np.random.seed(seed)
        _same(expected, compiled(x.copy()))
        assert np.random.normal() == after  # the generator advanced exactly as eagerly



def test_values_not_held_at_the_cut_are_recomputed(monkeypatch) -> None:
    """The segment before a cut outputs what the interpreter still holds there; a resumed part that reads
    anything else reruns its own segments up to the cut (pure), so the answer stays exact."""
    monkeypatch.setattr(jitgraph.tracer.resume, "live_nodes", lambda tx: [])

    def reads_earlier(x):
        z = np.tanh(x) * 3.0
        kept = np.sort(x[x > 0])
        return kept.sum() + z  # z: computed before the cut, read after it

    compiled = _against_eager(reads_earlier, [(_data(s),) for s in (1, 2, 3)])
    _split_no_fallback(compiled)
    artifact = compiled.entries[0].compiled
    assert any(node.replay for node in artifact.variants())


def test_object_state_and_both_branches() -> None:
    tracker = Tracker()
    xs = [np.linspace(0.0, 1.0, 12) + 0.01, np.full(12, 5.0), np.linspace(0.0, 1.0, 12)]
    compiled = _against_eager(None, [(tracker, x) for x in xs], method="step")
    info = compiled.cache_info()
    assert info.fallbacks == 0


# ---- recompile limit per segment, fullgraph, explain ------------------------------------------------------
def test_recompile_limit_counts_per_segment(caplog) -> None:
    compiled = jitgraph.compile(mask_read, cache_limit=2)  # the function's own limit reaches its segments
    with caplog.at_level(logging.INFO, logger="jitgraph.breaks"):
        for n in (1, 2, 3, 4):  # four sizes of x[x > 0] at one cut: two children, then eager for new ones
            x = np.concatenate([np.ones(n), -np.ones(8 - n)])
            _same(mask_read(x.copy()), compiled(x))
    assert compiled.cache_info().entries == 1  # one function entry: the limit is the segment's
    text = str(compiled.explain())
    assert "recompile limit" in text
    x = np.concatenate([np.ones(1), -np.ones(7)])
    _same(mask_read(x.copy()), compiled(x))  # a value seen before still runs compiled


def test_fullgraph_turns_the_break_into_an_error() -> None:
    compiled = jitgraph.compile(mask_read, fullgraph=True)
    with pytest.raises(GraphBreakError, match="boolean mask"):
        compiled(_data(1))


def test_explain_shows_segments_and_reasons() -> None:
    compiled = jitgraph.compile(best_loss)
    compiled(_data(1), 20.0)
    compiled(_data(2), 0.5)
    result = compiled.explain()
    text = str(result)
    assert result.split_reasons and "data-dependent branch" in result.split_reasons[0].reason
    assert f"{__file__}:{best_loss.__code__.co_firstlineno + 2}" in text
    assert "resumed for the branch taken" in text and "resumed for the branch not taken" in text
    assert result.graph_count >= 3  # the graph up to the branch, and one per branch seen


class _Counter:
    def __init__(self):
        self.n = 0
        self.hist = []


def _step_then_assert(s, x):
    s.n += 1
    s.hist.append(s.n)
    x -= 1
    assert (x >= 0).all(), "went negative"
    return x * 2


def test_assert_after_effects_raises_once_with_each_effect_once():
    """Found by a probe corpus: once compiled on calls that pass the assert, a call that fails it ran the function
    eagerly inside the artifact's error handler, which took the AssertionError for a segment's failure and ran the
    function eagerly a second time: ``x -= 1``, ``s.n += 1`` and the append happened twice."""
    compiled = jitgraph.compile(_step_then_assert)
    for _ in range(2):
        compiled(_Counter(), np.array([2.0, 3.0]))
    for x0 in ([0.5, 3.0], [0.25, -4.0]):
        eager_s, comp_s = _Counter(), _Counter()
        eager_x, comp_x = np.array(x0), np.array(x0)
        with pytest.raises(AssertionError, match="went negative"):
            _step_then_assert(eager_s, eager_x)
        with pytest.raises(AssertionError, match="went negative"):
            compiled(comp_s, comp_x)
        np.testing.assert_array_equal(comp_x, eager_x)
        assert (comp_s.n, comp_s.hist) == (eager_s.n, eager_s.hist) == (1, [1])
    assert compiled(_Counter(), np.array([5.0])).tolist() == [8.0]
