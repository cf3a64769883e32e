"""Tracer tests run with JITGRAPH_STRICT=1, so an internal tracer error fails the test instead of falling back."""

from __future__ import annotations

import os

os.environ["JITGRAPH_STRICT"] = "1"
