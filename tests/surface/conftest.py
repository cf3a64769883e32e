"""Surface tests run with JITGRAPH_STRICT=1, so an internal tracer error fails the test instead of falling back."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _strict_tracer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JITGRAPH_STRICT", "1")
