"""A backend failure is remembered for the graph with sizes aside (issue 20): a new size of the same failing graph
runs eagerly at once instead of paying another compile that fails the same way."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import jitgraph
from jitgraph.jit import stages


def _scaled(x: np.ndarray) -> np.ndarray:
    return np.tanh(x) * 2.0 + 1.0


def _count_builds(monkeypatch: pytest.MonkeyPatch, fail_on: str) -> list[int]:
    """Every backend build is counted; it fails at compile time (``compile``) or on its first call (``run``)."""
    original = stages.get_backend
    builds: list[int] = []

    class Broken:
        def __init__(self, artifact: Any) -> None:
            self.artifact = artifact

        def __call__(self, leaves: list[Any]) -> Any:
            raise RuntimeError("backend bug on a run")

        def __getattr__(self, name: str) -> Any:
            return getattr(self.artifact, name)

    def get_backend(name: str) -> Any:
        def build(*args: Any, **kwargs: Any) -> Any:
            builds.append(1)
            if fail_on == "compile":
                raise RuntimeError("backend bug at compile")
            return Broken(original(name)(*args, **kwargs))
        return build

    monkeypatch.setattr(stages, "get_backend", get_backend)
    return builds


@pytest.mark.parametrize("fail_on", ["compile", "run"])
def test_failing_graph_is_not_compiled_again_for_new_sizes(monkeypatch: pytest.MonkeyPatch, fail_on: str) -> None:
    builds = _count_builds(monkeypatch, fail_on)
    f = jitgraph.compile(_scaled, backend="eager")
    for n in (3, 5, 7, 5, 3):
        x = np.linspace(-1.0, 1.0, n)
        np.testing.assert_array_equal(f(x), _scaled(x))
    assert len(builds) == 1
    assert [e.mode for e in f.entries] == ["eager"] * 3
    assert "at other sizes" in f.break_reasons()[-1].reason


def test_another_graph_still_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    builds = _count_builds(monkeypatch, "compile")
    f = jitgraph.compile(_scaled, backend="eager")
    g = jitgraph.compile(lambda x: x * 3.0, backend="eager")
    f(np.ones(3))
    f(np.ones(4))
    g(np.ones(3))
    x = np.ones((2, 2))  # another rank: another graph, compiled (and failing) once more
    f(x)
    assert len(builds) == 3
