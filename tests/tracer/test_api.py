"""The public API: compile's forms, explain's result, cache_info, errors, logging and unsupported Pythons."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import jitgraph
from jitgraph import GraphBreakError, JitgraphError
from jitgraph.errors import UnsupportedPythonError
from jitgraph.tracer import bytecode
from tests.tracer import programs as P


def double(x):
    return x * 2


def branchy(x):
    y = np.exp(x)
    if y.sum() > 1:  # a data-dependent branch with an early return: split, the rest traced per value seen
        return y - 1
    return y


def test_compile_forms():
    x = np.arange(3.0)
    plain = jitgraph.compile(double)
    configured = jitgraph.compile(backend="eager", fullgraph=True, cache_limit=2)(double)
    np.testing.assert_array_equal(plain(x), x * 2)
    np.testing.assert_array_equal(configured(x), x * 2)
    assert configured.fullgraph and configured.cache_limit == 2 and configured.backend == "eager"
    assert plain.__name__ == "double" and plain.__wrapped__ is double
    assert jitgraph.compile(plain) is plain

    @jitgraph.compile
    def decorated(x):
        return x + 1

    np.testing.assert_array_equal(decorated(x), x + 1)


def test_cache_info_fields():
    f = jitgraph.compile(double, backend="eager")
    f(np.ones(2))
    f(np.ones(2))
    info = f.cache_info()
    assert (info.hits, info.misses, info.recompiles, info.fallbacks, info.entries) == (1, 1, 0, 0, 1)


def test_explain_on_a_captured_function():
    rng = np.random.default_rng(0)
    params = P.init_mlp(rng)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = rng.integers(0, 4, 4)
    result = jitgraph.explain(P.mlp_train_step, backend="eager")(params, x, y, 0.1)
    assert result.graph_count == 1 and result.break_reasons == []
    graph = result.graphs[0]
    assert "mutate" in str(graph) and "matmul" in str(graph)
    assert any(n.loc is not None and n.loc.filename == P.__file__ for n in graph.nodes if n.op == "matmul")
    assert "type(params) is dict" in result.guards
    assert "x.shape == (4, 8)" in result.guards
    assert set(result.compile_times) >= {"trace", "passes", "backend"}
    text = str(result)
    assert text.startswith("Graph count: 1") and "Guards:" in text and "x.shape == (4, 8)" in text
    assert np.isfinite(result.output)


def test_explain_on_a_data_dependent_split():
    x = np.ones(3)
    result = jitgraph.explain(branchy, backend="eager")(x)
    assert result.graph_count == 2 and not result.break_reasons  # up to the branch, and the path taken
    (reason,) = result.split_reasons
    assert reason.filename == __file__ and reason.lineno == branchy.__code__.co_firstlineno + 2
    assert "data-dependent" in reason.reason
    assert f"{__file__}:{reason.lineno}" in str(result)
    np.testing.assert_allclose(result.output, branchy(x))


def test_explain_accepts_a_compiled_function():
    compiled = jitgraph.compile(double, backend="eager")
    result = jitgraph.explain(compiled)(np.ones(2))
    assert result.graph_count == 1 and compiled.cache_info().misses == 0


def test_errors_hierarchy():
    assert issubclass(GraphBreakError, JitgraphError)
    assert issubclass(UnsupportedPythonError, JitgraphError)


def test_unsupported_python_runs_eagerly_with_a_warning(monkeypatch):
    monkeypatch.setattr(bytecode, "SUPPORTED_VERSIONS", ())
    with pytest.raises(UnsupportedPythonError, match="no bytecode table for Python"):
        bytecode.check_version()
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        f = jitgraph.compile(double)
    np.testing.assert_array_equal(f(np.ones(2)), np.full(2, 2.0))
    with pytest.raises(UnsupportedPythonError):
        jitgraph.compile(double, fullgraph=True)


def test_logging_topics(caplog):
    f = jitgraph.compile(branchy, backend="eager")
    with caplog.at_level(logging.DEBUG, logger="jitgraph"):
        f(np.ones(2))
        f(np.ones(3))
        g = jitgraph.compile(double, backend="eager")
        g(np.ones(2))
    names = {r.name for r in caplog.records}
    assert {"jitgraph.breaks", "jitgraph.recompiles", "jitgraph.graph", "jitgraph.guards"} <= names
    breaks = [r.getMessage() for r in caplog.records if r.name == "jitgraph.breaks"]
    assert any(f"{__file__}:" in m for m in breaks)


def test_callable_object_can_be_compiled():
    model = P.Linear(np.eye(3, dtype=np.float32), np.ones(3, np.float32))
    f = jitgraph.compile(model, backend="eager")
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(f(x), model(x))
    assert len(f.graphs()) == 1


def listed(x):
    y = np.exp(x)
    return y.tolist()


def test_break_messages_show_the_source_line():
    result = jitgraph.explain(listed, backend="eager")(np.ones(3))
    assert "return y.tolist()" in str(result)
    with pytest.raises(GraphBreakError, match=r"if y\.sum\(\) > 1:"):  # a split is an error under fullgraph
        jitgraph.compile(branchy, backend="eager", fullgraph=True)(np.ones(3))
