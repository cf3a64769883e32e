"""Dead-code elimination: drop every node that no output and no mutation depends on.

The IR is functional, so liveness is plain reachability from the roots: the outputs *and* the mutation values
(an in-place update of a caller's array is observable even when the function returns nothing). Inputs always
stay, since they are the calling convention. Region bodies are cleaned too, with their own outputs as roots.
"""

from __future__ import annotations

from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.graph import eliminate_dead as _drop_unreachable
from jitgraph.passes.manager import register_pass


@register_pass("eliminate_dead")
def eliminate_dead(graph: Graph) -> Graph:
    graph = _drop_unreachable(graph)
    if not any(n.regions for n in graph.nodes):
        return graph
    mapping: dict[Node, Node] = {}
    nodes = []
    for node in graph.nodes:
        inputs = tuple(mapping.get(i, i) for i in node.inputs)
        regions = tuple(eliminate_dead(r) for r in node.regions)
        if inputs != node.inputs or any(a is not b for a, b in zip(regions, node.regions)):
            new = Node(node.op, inputs, node.type, node.attrs, regions, node.loc)
            mapping[node] = new
            node = new
        nodes.append(node)
    return Graph(tuple(nodes), graph.inputs, tuple(mapping.get(o, o) for o in graph.outputs),
                 tuple((i, mapping.get(n, n)) for i, n in graph.mutations), graph.input_names)
