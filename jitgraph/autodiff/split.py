"""A joint graph cut in two at its minimum cut: a forward graph that also returns the residuals, and a backward
graph that starts from them (``vjp``: the forward runs now, the backward when ``vjp_fn`` is called).

Why: a joint graph recomputes nothing, but it needs the cotangent up front. ``vjp`` hands the cotangent over
later, so the forward values the backward reads must outlive the forward call. The cut (:mod:`partition`) says
which: the forward returns exactly the saved values, and the backward recomputes the cheap rest (elementwise and
shape ops) from them and from the arguments, which ``vjp_fn`` still holds.

Input layouts (the dispatch key lists leaves in this order):

* joint:    argument leaves, cotangents, inputs the tracer added (globals);
* forward:  argument leaves, globals  ->  the function's outputs, then the residuals;
* backward: argument leaves, residuals, cotangents, globals  ->  one gradient per differentiated leaf.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitgraph.autodiff.reverse import JointGraph, fresh_output
from jitgraph.ir.graph import Graph, GraphBuilder, Node, eliminate_dead
from jitgraph.ir.types import TensorType


@dataclass(frozen=True)
class SplitGraphs:
    forward: Graph
    backward: Graph
    residuals: tuple[Node, ...]  # joint-graph nodes, in the order the forward returns them


def can_split(joint: JointGraph) -> bool:
    """Only array residuals can cross (a region's tuple value cannot be returned): loops keep the joint path."""
    return joint.cut is not None and all(isinstance(n.type, TensorType) for n in joint.cut.saved)


def split(joint: JointGraph, n_leaves: int, n_cotangents: int) -> SplitGraphs:
    graph = joint.graph
    assert joint.cut is not None
    residuals = joint.cut.saved
    ct_inputs = set(graph.inputs[n_leaves:n_leaves + n_cotangents])
    extras = graph.inputs[n_leaves + n_cotangents:]

    # forward: every joint node that reads no cotangent, then dead-code elimination keeps what it returns
    fb = GraphBuilder()
    fmap = {n: fb.input(n.type, graph.input_names[n.attrs["index"]]) for n in graph.inputs if n not in ct_inputs}
    backward_side = _reads_cotangent(graph, ct_inputs)
    for n in graph.nodes:
        if n.op != "input" and n not in backward_side:
            fmap[n] = fb.add(Node(n.op, tuple(fmap[i] for i in n.inputs), n.type, n.attrs, n.regions, n.loc))
    outputs = [fmap[o] for o in graph.outputs[:joint.n_forward]]
    for r in residuals:
        outputs.append(fresh_output(fb, fmap[r], outputs))
    mutations = [(i - n_cotangents if i >= n_leaves + n_cotangents else i, fmap[n]) for i, n in graph.mutations]
    forward = eliminate_dead(fb.build(outputs, mutations))

    # backward: arguments, residuals, cotangents, globals; everything else it needs is recomputed
    bb = GraphBuilder()
    bmap: dict[Node, Node] = {}
    for n in graph.inputs[:n_leaves]:
        bmap[n] = bb.input(n.type, graph.input_names[n.attrs["index"]])
    for k, r in enumerate(residuals):
        bmap[r] = bb.input(r.tensor_type.with_(layout="C", weak=False), f"residual[{k}]")
    for n in graph.inputs[n_leaves:n_leaves + n_cotangents]:
        bmap[n] = bb.input(n.type, graph.input_names[n.attrs["index"]])
    for n in extras:
        bmap[n] = bb.input(n.type, graph.input_names[n.attrs["index"]])
    grads = graph.outputs[joint.n_forward:]
    needed = _needed(grads, bmap)
    for n in graph.nodes:
        if n in needed and n not in bmap:
            bmap[n] = bb.add(Node(n.op, tuple(bmap[i] for i in n.inputs), n.type, n.attrs, n.regions, n.loc))
    final: list[Node] = []
    for gnode in grads:
        final.append(fresh_output(bb, bmap[gnode], final))
    return SplitGraphs(forward, eliminate_dead(bb.build(final)), residuals)


def _reads_cotangent(graph: Graph, cts: set[Node]) -> set[Node]:
    side = set(cts)
    for n in graph.nodes:
        if any(i in side for i in n.inputs):
            side.add(n)
    return side


def _needed(roots: tuple[Node, ...], available: dict[Node, Node]) -> set[Node]:
    needed: set[Node] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in needed or n in available:
            continue
        needed.add(n)
        stack.extend(n.inputs)
    return needed
