"""The IR verifier: SSA form, topological order, closed regions and types re-inferred from the op table.

Every pass runs under it in tests (and under ``JITGRAPH_VERIFY=1``), so a pass that produces a bad graph is caught
at the pass, with the offending node and its neighbours printed, rather than as a wrong number much later.
"""

from __future__ import annotations

from jitgraph.errors import JitgraphError, VerifyError
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS
from jitgraph.ir.printer import format_graph, node_names
from jitgraph.ir.types import TensorType


def _context(graph: Graph, bad: Node, radius: int = 2) -> str:
    names = node_names(graph)
    lines = format_graph(graph).splitlines()
    target = names.get(bad)
    hit = next((k for k, line in enumerate(lines) if target and line.strip().startswith(f"{target} =")), None)
    if hit is None:
        return "\n".join("    " + line for line in lines[:2 * radius + 1])
    lo, hi = max(0, hit - radius), min(len(lines), hit + radius + 1)
    return "\n".join(("--> " if k == hit else "    ") + lines[k] for k in range(lo, hi))


def _fail(graph: Graph, node: Node | None, message: str) -> VerifyError:
    text = message if node is None else f"{message}\n{_context(graph, node)}"
    return VerifyError(text, hint="this is a jitgraph bug in the pass that produced this graph; "
                                  "report it, and run with backend='eager' meanwhile")


def verify(graph: Graph) -> Graph:
    """Check ``graph``; return it unchanged so the call chains (``verify(pass_(g))``)."""
    _verify(graph, graph)
    return graph


def _verify(graph: Graph, root: Graph) -> None:
    seen: set[Node] = set()
    for position, node in enumerate(graph.nodes):
        if node in seen:
            raise _fail(graph, node, f"node {node!r} appears twice (SSA values are defined once)")
        if node.op not in OPS:
            raise _fail(graph, node, f"unknown op {node.op!r}")
        for operand in node.inputs:
            if operand not in seen:
                where = "later in the graph" if operand in graph.nodes else "outside this graph (regions are closed)"
                raise _fail(graph, node, f"{node.op} uses {operand!r}, which is defined {where}")
        if node.op == "input":
            index = node.attrs.get("index")
            if index is None or index >= len(graph.inputs) or graph.inputs[index] is not node:
                raise _fail(graph, node, f"input node at position {position} is not graph.inputs[{index}]")
        elif node.op != "const":
            _check_type(graph, node)
        for region in node.regions:
            _verify(region, root)
        seen.add(node)
    for inp in graph.inputs:
        if inp not in seen:
            raise _fail(graph, None, f"graph input {inp!r} is not among the graph's nodes")
    for out in graph.outputs:
        if out not in seen:
            raise _fail(graph, out, f"output {out!r} is not defined in the graph")
    for index, value in graph.mutations:
        if not 0 <= index < len(graph.inputs):
            raise _fail(graph, value, f"mutation of input {index}, but the graph has {len(graph.inputs)} inputs")
        if value not in seen:
            raise _fail(graph, value, f"mutation value {value!r} is not defined in the graph")
        target, new = graph.inputs[index].type, value.type
        if not (isinstance(target, TensorType) and isinstance(new, TensorType)) or \
                (target.shape, target.dtype) != (new.shape, new.dtype):
            raise _fail(graph, value, f"mutation writes {new} into input {index} of type {target}")


def _check_type(graph: Graph, node: Node) -> None:
    try:
        expected = OPS[node.op].infer(tuple(i.type for i in node.inputs), node.attrs, node.regions)
    except JitgraphError as exc:
        raise _fail(graph, node, f"{node.op} rejects its operands: {exc.message}") from exc
    if not _same_type(expected, node.type):
        raise _fail(graph, node, f"{node.op} is typed {node.type}, but its rule gives {expected}")


def _same_type(a: object, b: object) -> bool:
    """Types agree on shape, dtype and weakness; layout is advisory (passes may improve it)."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return (a.shape, a.dtype, a.weak) == (b.shape, b.dtype, b.weak)
    return a == b
