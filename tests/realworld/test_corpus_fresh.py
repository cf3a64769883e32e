"""Issue 21's fresh corpus (tests/realworld/corpus_fresh.py): eager vs compiled on deep copies over three calls
(results, every array and object reachable from the arguments, identity), as the other corpora are run."""

from __future__ import annotations

import pytest

from . import corpus_fresh
from .harness import run_case


def test_names_are_unique() -> None:
    assert len({c.name for c in corpus_fresh.CASES}) == len(corpus_fresh.CASES) >= 30


@pytest.mark.parametrize("case", corpus_fresh.CASES, ids=lambda c: c.name)
def test_matches_eager_and_compiles_as_declared(case) -> None:
    out = run_case(case)
    assert not out.wrong, "\n".join(out.wrong)
    assert out.category == {"graph": "one graph", "eager": "eager"}[case.kind], out.breaks


@pytest.mark.parametrize("name", ["layernorm_backward[small]", "NesterovDict.step[small]", "ema_rows[small]",
                                  "softmax_cross_entropy_grad[small]", "AdaDelta.update[small]"])
def test_cpu_backend(name) -> None:
    (case,) = [c for c in corpus_fresh.CASES if c.name == name]
    out = run_case(case, backend="cpu")
    assert not out.wrong, "\n".join(out.wrong)
    assert out.category == "one graph", out.breaks
