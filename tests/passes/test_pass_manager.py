"""The pass manager: registration, the pipeline, JITGRAPH_DUMP, timing, PassError and the verifier after each pass."""

from __future__ import annotations

import numpy as np
import pytest
from passes_helpers import build, f32, golden

from jitgraph.errors import PassError
from jitgraph.ir import Graph, Node
from jitgraph.ir.graph import is_lowered
from jitgraph.passes import DEFAULT_PIPELINE, PassReport, manager, register_pass, run_pipeline


@pytest.fixture
def scratch_passes():
    """Register throwaway passes for one test and remove them afterwards."""
    before = dict(manager.PASSES)
    yield register_pass
    manager.PASSES.clear()
    manager.PASSES.update(before)


def small_graph() -> Graph:
    return build(lambda b, x: b.op("exp", b.op("negative", b.op("negative", x))), f32(2))


def test_default_pipeline_is_one_ordered_tuple() -> None:
    assert isinstance(DEFAULT_PIPELINE, tuple)
    order = [DEFAULT_PIPELINE.index(n) for n in ("fold_constants", "simplify", "eliminate_common",
                                                 "eliminate_dead", "layout", "fuse")]
    assert order == sorted(order)
    for name in ("fold_constants", "simplify", "eliminate_common", "eliminate_dead", "layout"):
        assert name in manager.PASSES


def test_registered_pass_runs_with_or_without_options(scratch_passes) -> None:
    seen = []

    @scratch_passes("record_plain")
    def plain(graph):
        seen.append("plain")
        return graph

    @scratch_passes("record_options")
    def with_options(graph, options):
        seen.append(options["flag"])
        return graph

    graph = small_graph()
    out, report = run_pipeline(graph, {"passes": ["record_plain", "record_options"], "flag": 7})
    assert out is graph and seen == ["plain", 7]
    assert [r.name for r in report.records] == ["record_plain", "record_options"]


def test_unknown_pass_is_an_error() -> None:
    with pytest.raises(PassError, match="unknown pass 'no_such_pass'"):
        run_pipeline(small_graph(), {"passes": ("simplify", "no_such_pass")})


def test_default_pipeline_lowers_the_graph() -> None:
    """The default pipeline's output carries its memory plan (what backends take); a custom list without
    ``plan_memory`` does not."""
    lowered, _ = run_pipeline(small_graph())
    assert is_lowered(lowered) and lowered.memory is not None
    simplified, _ = run_pipeline(small_graph(), {"passes": ("simplify",)})
    assert not is_lowered(simplified)


def test_report_times_every_pass() -> None:
    graph = small_graph()
    _, report = run_pipeline(graph)
    names = [r.name for r in report.records]
    assert names == list(DEFAULT_PIPELINE)
    assert all(r.seconds >= 0 for r in report.records)
    assert report.times.keys() == set(names) and report.total_seconds == pytest.approx(sum(report.times.values()))
    text = str(report)
    for name in names:
        assert name in text
    assert report.records[1].nodes_before == 4 and report.records[1].nodes_after == 2  # simplify: --x -> x
    assert isinstance(report, PassReport)


def test_dump_prints_ir_before_and_after_named_passes(monkeypatch, capsys) -> None:
    monkeypatch.setenv("JITGRAPH_DUMP", "simplify")
    run_pipeline(small_graph(), {"passes": ("fold_constants", "simplify", "eliminate_dead")})
    err = capsys.readouterr().err
    assert "--- IR before simplify ---" in err and "--- IR after simplify (" in err
    assert "fold_constants" not in err and "eliminate_dead" not in err
    before = err.split("--- IR before simplify ---\n")[1].split("--- IR after")[0].strip()
    after = err.split(" ms) ---\n")[1].strip()
    assert before == golden("""
        %0 = input[x0] : f32[2]
        %1 = negative(%0) : f32[2]
        %2 = negative(%1) : f32[2]
        %3 = exp(%2) : f32[2]
        return %3
    """)
    assert after == golden("""
        %0 = input[x0] : f32[2]
        %1 = exp(%0) : f32[2]
        return %1
    """)


def test_dump_all(monkeypatch, capsys) -> None:
    monkeypatch.setenv("JITGRAPH_DUMP", "all")
    run_pipeline(small_graph(), {"passes": ("simplify", "layout")})
    err = capsys.readouterr().err
    assert err.count("--- IR before") == 2 and "IR after layout" in err


def test_exception_in_pass_becomes_pass_error_with_name_and_context(scratch_passes) -> None:
    @scratch_passes("crash")
    def crash(graph):
        raise KeyError("boom")

    with pytest.raises(PassError) as info:
        run_pipeline(small_graph(), {"passes": ("simplify", "crash")})
    text = str(info.value)
    assert "pass 'crash' failed: KeyError: 'boom'" in text
    assert "%1 = exp(%0) : f32[2]" in text  # the graph the pass was given
    assert "JITGRAPH_DUMP=crash" in text
    assert isinstance(info.value.__cause__, KeyError)


def _mistyped_exp(graph: Graph) -> Graph:
    """A deliberately broken pass: it retypes exp's result as float64 without changing anything else."""
    nodes, mapping = [], {}
    for n in graph.nodes:
        inputs = tuple(mapping.get(i, i) for i in n.inputs)
        new = n
        if n.op == "exp":
            new = Node("exp", inputs, n.tensor_type.with_(dtype=np.float64), n.attrs, n.regions, n.loc)
        mapping[n] = new
        nodes.append(new)
    return Graph(tuple(nodes), graph.inputs, tuple(mapping.get(o, o) for o in graph.outputs), (),
                 graph.input_names)


def test_verifier_after_each_pass_catches_a_broken_pass(scratch_passes, monkeypatch) -> None:
    scratch_passes("mistype")(_mistyped_exp)
    with pytest.raises(PassError) as info:
        run_pipeline(small_graph(), {"passes": ("simplify", "mistype", "layout")})
    text = str(info.value)
    assert "pass 'mistype' produced an invalid graph" in text and "exp is typed f64[2]" in text
    # Without the verifier the same pipeline goes through: it is the verifier that caught it.
    monkeypatch.setenv("JITGRAPH_VERIFY", "0")
    out, _ = run_pipeline(small_graph(), {"passes": ("simplify", "mistype")})
    assert str(out.outputs[0].type) == "f64[2]"
    with pytest.raises(PassError):
        run_pipeline(small_graph(), {"passes": ("mistype",), "verify": True})


def test_pass_returning_non_graph_is_an_error(scratch_passes) -> None:
    scratch_passes("returns_none")(lambda graph: None)
    with pytest.raises(PassError, match="returned NoneType"):
        run_pipeline(small_graph(), {"passes": ("returns_none",)})


def test_pass_times_are_logged_on_the_perf_topic(caplog) -> None:
    import logging

    with caplog.at_level(logging.DEBUG, logger="jitgraph.perf"):
        run_pipeline(small_graph(), {"passes": ("simplify",)})
    assert any("pass times" in r.getMessage() and "simplify" in r.getMessage() for r in caplog.records)
