"""The pass manager (placeholder: runs no passes yet; the passes issue fills DEFAULT_PIPELINE)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jitgraph.ir.graph import Graph
from jitgraph.ir.verifier import verify

PassFn = Callable[[Graph], Graph]
PASSES: dict[str, PassFn] = {}
DEFAULT_PIPELINE: tuple[str, ...] = ()


@dataclass
class PassReport:
    """What the pipeline did: per-pass wall time in seconds, in run order."""

    times: dict[str, float] = field(default_factory=dict)


def register_pass(name: str) -> Callable[[PassFn], PassFn]:
    def deco(fn: PassFn) -> PassFn:
        PASSES[name] = fn
        return fn

    return deco


def run_pipeline(graph: Graph, options: Mapping[str, Any] | None = None) -> tuple[Graph, PassReport]:
    report = PassReport()
    if os.environ.get("JITGRAPH_VERIFY") == "1":
        verify(graph)
    return graph, report
