"""CPU-backend tests share one temporary kernel cache per session (compiles are the slow part) and a helper that
compiles a graph once per test session."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

_CACHE = tempfile.mkdtemp(prefix="jitgraph-test-cache-")
os.environ["JITGRAPH_CACHE_DIR"] = _CACHE
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def cache_dir() -> str:
    return _CACHE
