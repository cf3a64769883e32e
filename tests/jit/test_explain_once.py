"""``explain`` is built in one place from a compiled function's cache entries: ``CompiledFunction.explain()`` and
``jitgraph.explain(fn)(*args)`` agree, and they show the very graphs the cache holds (nothing traced twice)."""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph
from jitgraph.inspect.result import ExplainResult
from jitgraph.jit import explain_builder


def captured(x, w):
    return np.tanh(x @ w).sum(axis=0)


def breaks(x):
    y = x + 1.0
    if y.sum() > 0:  # a data-dependent branch on a host value: a region, or a break
        print("positive")
    return y


@pytest.mark.parametrize("fn, args", [(captured, (np.ones((4, 3)), np.ones((3, 2)))), (breaks, (np.ones(3),))],
                         ids=["captured", "breaks"])
def test_method_and_function_agree(fn, args):
    cf = jitgraph.compile(fn, backend="eager")
    out = cf(*args)
    by_method = cf.explain(output=out)
    by_function = jitgraph.explain(fn, backend="eager")(*args)
    assert isinstance(by_method, ExplainResult) and isinstance(by_function, ExplainResult)
    assert by_method.graph_count == by_function.graph_count
    assert [str(b) for b in by_method.break_reasons] == [str(b) for b in by_function.break_reasons]
    assert by_method.guards == by_function.guards
    assert [str(g) for g in by_method.graphs] == [str(g) for g in by_function.graphs]
    np.testing.assert_allclose(by_function.output, fn(*args))


def test_the_result_holds_the_caches_own_objects():
    cf = jitgraph.compile(captured, backend="eager")
    cf(np.ones((4, 3)), np.ones((3, 2)))
    result = cf.explain()
    (entry,) = cf.entries
    assert result.graphs[0] is entry.traced_graph and result.optimized_graphs[0] is entry.graph
    assert result.compiled_graphs[0] is entry.compiled and result.pass_reports[0] is entry.pass_report
    assert [e.mode for e in result.entries] == ["graph"] and result.entries[0].guards == entry.guard_texts


def test_jitgraph_explain_goes_through_the_one_builder(monkeypatch):
    calls = []
    real = explain_builder.build_explain

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(explain_builder, "build_explain", counting)
    monkeypatch.setattr("jitgraph.jit.inspection.build_explain", counting)
    jitgraph.explain(captured, backend="eager")(np.ones((4, 3)), np.ones((3, 2)))
    assert calls == [1]


def test_explain_of_a_compiled_function_borrows_its_options_not_its_cache():
    cf = jitgraph.compile(captured, backend="eager", math="libm")
    result = jitgraph.explain(cf)(np.ones((4, 3)), np.ones((3, 2)))
    assert result.graph_count == 1 and cf.cache_info().misses == 0
