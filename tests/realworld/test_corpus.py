"""Issue 18's corpus: stateful from-scratch ML code, eager vs compiled on deep copies over three calls (results,
every array and object reachable from the arguments, the globals it writes, identity of stored arguments)."""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph

from . import corpus
from .harness import run_case

BY_KIND = {kind: [c for c in corpus.CASES if c.kind == kind] for kind in ("graph", "refused", "split", "eager")}


def test_corpus_is_big_enough() -> None:
    assert len(corpus.CASES) >= 40


@pytest.mark.parametrize("case", BY_KIND["graph"], ids=lambda c: c.name)
def test_stateful_code_compiles_to_one_graph_per_call(case: corpus.Case) -> None:
    out = run_case(case)
    assert not out.wrong, "\n".join(out.wrong)
    assert out.eager_calls == 0 and out.graphs >= 1, out.breaks
    # A dict or list the trace reads grows on the first calls (keys guarded): at most one entry per call.
    assert out.graphs <= 3


@pytest.mark.parametrize("case", BY_KIND["refused"], ids=lambda c: c.name)
def test_stores_that_run_user_code_break_with_a_reason(case: corpus.Case) -> None:
    out = run_case(case)
    assert not out.wrong, "\n".join(out.wrong)
    assert out.eager_calls == 3 and out.breaks and ("__setattr__" in out.breaks[0] or "descriptor" in out.breaks[0]
                                                    or "property" in out.breaks[0])


@pytest.mark.parametrize("case", BY_KIND["split"], ids=lambda c: c.name)
def test_uncapturable_calls_split_the_function(case: corpus.Case) -> None:
    """A print, logging call or np.random draw in the middle: graphs around one eager call, no fallback."""
    out = run_case(case)
    assert not out.wrong, "\n".join(out.wrong)
    assert out.eager_calls == 0 and out.splits == 1 and out.graphs == 2, out.breaks


def test_no_case_of_this_corpus_runs_eagerly() -> None:
    """The data-dependent cases (np.unique, a mask read, an early return) now split and resume; nothing here is
    left to a whole-function fallback (the numeric corpus keeps one such case, with its reason)."""
    assert BY_KIND["eager"] == []


def test_explain_shows_two_graphs_and_the_split_reason() -> None:
    f = jitgraph.compile(corpus.with_print, backend="eager")
    f(corpus.arr(5, 4), corpus.arr(4, 2, seed=1))
    traced = f.entries[0].traced
    text = str(traced)
    assert "graph 1 of 2" in text and "graph 2 of 2" in text
    assert "print() runs eagerly between graphs" in text
    (reason,) = traced.split_reasons
    assert reason.lineno == corpus.with_print.__code__.co_firstlineno + 2
    text = str(f.explain())
    assert "segment 0" in text and "segment 1" in text and "print() runs eagerly between graphs" in text


def test_fullgraph_still_refuses_a_split() -> None:
    f = jitgraph.compile(corpus.with_print, backend="eager", fullgraph=True)
    with pytest.raises(jitgraph.GraphBreakError, match="print"):
        f(corpus.arr(5, 4), corpus.arr(4, 2, seed=1))


def test_a_split_prints_once_per_call(capsys: pytest.CaptureFixture[str]) -> None:
    f = jitgraph.compile(corpus.with_print, backend="eager")
    x, w = corpus.arr(5, 4), corpus.arr(4, 2, seed=1)
    for _ in range(3):
        f(x, w)
    assert capsys.readouterr().out.count("hidden mean") == 3


def test_a_stored_argument_is_the_same_object() -> None:
    layer, X = corpus.Dense(4, 3), corpus.arr(5, 4)
    f = jitgraph.compile(corpus.Dense.forward, backend="eager")
    for _ in range(3):
        f(layer, X)
        assert layer.layer_input is X
    assert f.cache_info().hits == 2


def test_reads_after_a_store_see_the_stored_value() -> None:
    box = corpus.Box()
    f = jitgraph.compile(corpus.store_then_read_new_dict, backend="eager")
    x = np.arange(4.0)
    assert f(box, x) == (x * x).sum()
    assert list(box.cache) == ["X", "sq"] and box.cache["X"] is x


def test_a_graph_that_raises_applies_no_side_effect() -> None:
    """The stores are made after the whole graph has run: a run-time check that raises leaves the object alone,
    and the eager rerun makes each store once."""

    class Holder:
        def __init__(self) -> None:
            self.before = None

    def f(obj, x, d):
        obj.before = x * 2
        return x / d  # Python float division: ZeroDivisionError at d == 0.0, a run-time check in the graph

    h = Holder()
    compiled = jitgraph.compile(f, backend="eager")
    compiled(h, 1.0, 2.0)
    h.before = None
    with pytest.raises(ZeroDivisionError):
        compiled(h, 3.0, 0.0)
    assert h.before == 6.0  # made once, by the eager rerun, before it raised -- as eager code does


def test_counter_attribute_is_a_runtime_value() -> None:
    opt = corpus.Adam()
    f = jitgraph.compile(corpus.Adam.update, backend="eager")
    w, g = np.ones(3), np.arange(3.0)
    for _ in range(5):
        f(opt, w, g)
    assert opt.t == 5 and type(opt.t) is int
    assert f.cache_info().entries == 2  # the first call (m is None), then one graph for every later step


def test_traced_stage_lists_the_replayed_stores() -> None:
    traced = jitgraph.compile(corpus.Dense.forward, backend="eager").trace(corpus.Dense(4, 3), corpus.arr(5, 4))
    assert "side effects (replayed on objects after the graph): A[0].layer_input =" in str(traced)
