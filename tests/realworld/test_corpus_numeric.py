"""Issue 19's corpus extension (tests/realworld/corpus_numeric.py): from-scratch ML and scientific NumPy, eager vs
compiled on deep copies over three calls (results, every array and object reachable from the arguments, identity),
as the issue 18 corpus is run."""

from __future__ import annotations

import pytest

from . import corpus_numeric
from .harness import run_case

BY_KIND = {kind: [c for c in corpus_numeric.CASES if c.kind == kind] for kind in ("graph", "split", "eager")}


def test_the_extension_has_thirty_functions_or_more() -> None:
    assert len(corpus_numeric.CASES) >= 30
    assert len({c.name for c in corpus_numeric.CASES}) == len(corpus_numeric.CASES)


@pytest.mark.parametrize("case", BY_KIND["graph"], ids=lambda c: c.name)
def test_compiles_to_one_graph_and_matches_eager(case) -> None:
    out = run_case(case)
    assert not out.wrong, "\n".join(out.wrong)
    assert out.eager_calls == 0 and out.splits == 0 and out.graphs >= 1, out.breaks
    assert out.graphs <= 3  # a stateful object (the optimiser's first step) may add one entry


def test_every_function_is_one_graph() -> None:
    """Since the CSR idiom's data-valued slice bounds compile (the last function that split or ran eagerly), the
    extension declares every function a graph; a new function that is not one graph declares its kind here and in
    a test of its own."""
    assert [c.name for c in corpus_numeric.CASES if c.kind != "graph"] == []


@pytest.mark.parametrize("name", ["gp_predict", "pca_eigh", "histogram_equalize", "Convolution.forward",
                                  "kalman_update"])
def test_cpu_backend(name) -> None:
    (case,) = [c for c in corpus_numeric.CASES if c.name == name]
    out = run_case(case, backend="cpu")
    assert not out.wrong, "\n".join(out.wrong)
    assert out.category == "one graph", out.breaks
