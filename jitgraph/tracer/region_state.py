"""The part of the trace context that loop and branch regions use (declared here, held by ``TraceContext``).

While a region body is traced, ``tx.builder`` is a :class:`BodyBuilder`: ops go into the region, and graph inputs
and constants go to the root graph, from which the region captures them. Whether a trace is inside a region is
therefore a fact about the builder (``TraceContext.in_region``), which restoring a snapshot puts back exactly.
:class:`RegionState` holds the facts regions learn on the way (induction variables known to be non-negative) that
the symbolic-slice lowering reads. Nothing here imports the rest of the tracer, so the context can hold it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jitgraph.ir.graph import GraphBuilder, Node
from jitgraph.ir.ops.control import RegionBuilder
from jitgraph.ir.types import TensorType


class BodyBuilder:
    """Stands in for ``tx.builder`` while a body is traced: ops go into the region; graph inputs (an array global
    first read in the body) and constants go to the root graph, from which the region captures them."""

    def __init__(self, region: RegionBuilder, root: GraphBuilder) -> None:
        object.__setattr__(self, "region", region)
        object.__setattr__(self, "root", root)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.region, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.region, name, value)
        if name == "loc":
            self.root.loc = value

    @property
    def inputs(self) -> list[Node]:
        return self.root.inputs

    @property
    def input_names(self) -> list[str]:
        return self.root.input_names

    def input(self, type_: Any, name: str = "") -> Node:
        return self.root.input(type_, name)

    def const(self, value: Any, type_: TensorType | None = None) -> Node:
        return self.root.const(value, type_)


def enter_region(builder: GraphBuilder | BodyBuilder) -> tuple[RegionBuilder, BodyBuilder]:
    """A new region nested in whatever ``builder`` builds now, and the builder that records into it."""
    parent = builder.region if isinstance(builder, BodyBuilder) else builder
    root = builder.root if isinstance(builder, BodyBuilder) else builder
    region = RegionBuilder(parent)
    return region, BodyBuilder(region, root)


@dataclass
class RegionState:
    """Facts the region tracers record for later lowerings.

    ``nonneg``: induction variables of ``for`` loops that count up from a non-negative start, so a slice bounded
    by one (``a[:i]``) never wraps around (the symbolic-slice lowering relies on it).
    ``int_bounds``: known bounds on the magnitude of Python ints (induction variables; others memoised by
    :func:`jitgraph.tracer.python_ints.bound`), None where none is known.
    """

    nonneg: set[Node] = field(default_factory=set)
    int_bounds: dict[Node, int | None] = field(default_factory=dict)
