"""Run-time extents: which sizes the loop driver reads from its arguments instead of writing them as literals.

A graph's types are static, so a loop ``for t in range(xs.shape[0])`` is traced with the constant bound 2000 and,
written as a literal, every new length would be a new Numba compile. Where a loop bound equals an extent of an input
array, the driver instead reads that extent at run time (``n0_0 = xs.shape[0]``) and writes the variable wherever
the value is a trip count or an extent (loop nests, ``np.empty`` shapes, index checks). Graphs that differ only in
such sizes then generate the *same* source, and :mod:`.driver` compiles a source once: the second length costs a
trace and code generation, not a Numba compile.

Correctness does not depend on which input an extent is read from: the generated source is correct for the graph it
was generated from (the variable holds exactly the literal it replaces, since the arguments have the graph's
shapes), and a compiled source is reused only for a graph that generates the identical text.

Which sizes (the ``dynamic_dims`` backend option): ``"loops"``, the values of constant loop bounds (start and stop,
in every nested region) that are an input's extent, so the extents a trip count depends on move with it; ``"all"``,
every input extent of 2 or more; anything else, none. Sizes 0 and 1 stay literal: broadcasting and emptiness depend
on them, and guards key on them anyway.

When: a literal extent lets LLVM prove and fold more (the LU row's index checks: 20 ms with literal sizes, 37 ms with
run-time ones), so :mod:`.driver` compiles a graph with literal sizes first, as ``torch.compile`` does, and the
run-time version only when a graph arrives whose run-time source matches an earlier graph's but whose sizes differ
(``automatic dynamic``: two Numba compiles for any number of lengths); ``dynamic_dims="all"`` from the caller asks
for run-time extents at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from jitgraph.ir.graph import Graph
from jitgraph.ir.types import TensorType


def loop_bounds(graph: Graph) -> set[int]:
    """The integer constants used as ``loop`` start/stop bounds anywhere in ``graph`` (regions included)."""
    found: set[int] = set()
    for node in graph.nodes:
        if node.op == "loop":
            for bound in node.inputs[:2]:
                value = bound.attrs.get("value") if bound.op == "const" else None
                if isinstance(value, int | np.integer) and not isinstance(value, bool):
                    found.add(int(value))
        for region in node.regions:
            found |= loop_bounds(region)
    return found


def plan(graph: Graph, params: list[str], options: Mapping[str, Any]) -> list[tuple[int, str, str]]:
    """``(value, variable, expression)`` per run-time extent, first input dimension first (one variable per
    value)."""
    mode = options.get("dynamic_dims")
    if mode not in ("all", "loops"):
        return []
    wanted = None if mode == "all" else loop_bounds(graph)
    chosen: dict[int, tuple[str, str]] = {}
    for k, (node, param) in enumerate(zip(graph.inputs, params)):
        t = node.type
        if not isinstance(t, TensorType):
            continue
        for d, extent in enumerate(t.shape):
            if extent >= 2 and extent not in chosen and (wanted is None or extent in wanted):
                chosen[extent] = (f"n{k}_{d}", f"{param}.shape[{d}]")
    return [(value, name, expr) for value, (name, expr) in chosen.items()]
