"""Forward mode (``jvp``) as the transpose of reverse mode: no second rule table.

Why: a VJP ``ct -> J^T ct`` is linear in ``ct``, so the gradient of ``u(ct) = <J^T ct, t>`` with respect to
``ct`` is ``J t``, the JVP. Differentiating the backward graph once more (with the same VJP rules: the backward
is made of ordinary ops) gives forward mode for every op that has a VJP rule. The cotangents are zero constants:
the result does not depend on their value (linearity), and the nodes that read them are dead afterwards.

The cost is the forward, the backward and its transpose: about three forward passes, where a dedicated JVP table
would need one. Good enough for directional derivatives and checks; ``jvp`` of a large model is better served by
reverse mode.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jitgraph.autodiff.emit import Emitter, is_float, shape_of
from jitgraph.autodiff.errors import DifferentiationError
from jitgraph.autodiff.reverse import (
    JointGraph,
    backward,
    check_differentiable,
    copy_forward,
    fresh_output,
    history_for,
    new_index,
)
from jitgraph.ir.graph import Graph, GraphBuilder, Node, eliminate_dead
from jitgraph.ir.types import TensorType


def jvp_graph(graph: Graph, wrt: Sequence[int], tangent_types: Sequence[TensorType], insert_at: int,
              max_trips: int | None = None) -> JointGraph:
    """A graph of the inputs plus one tangent per ``wrt`` input (inserted before input ``insert_at``) that returns
    the forward's outputs, then one tangent per output (zeros for outputs that are not floats)."""
    names = list(graph.input_names)
    check_differentiable(graph, wrt, names)
    if len(tangent_types) != len(wrt):
        raise DifferentiationError(f"jvp: {len(tangent_types)} tangent leaves for {len(wrt)} primal leaves",
                                   hint="pass tangents with the same structure as the primals")
    for i, t in zip(wrt, tangent_types):
        primal = graph.inputs[i].tensor_type
        if t.shape != primal.shape:
            raise DifferentiationError(f"jvp: the tangent of {names[i]} has shape {t.shape}, the primal "
                                       f"{primal.shape}")
    builder = GraphBuilder()
    mapping, tangents = copy_forward(builder, graph, names, insert_at, tangent_types, "tangent",
                                     history_for(graph, wrt), max_trips)
    forward = [mapping[n] for n in graph.nodes]
    outputs = [mapping[o] for o in graph.outputs]
    wrt_nodes = [mapping[graph.inputs[i]] for i in wrt]
    e = Emitter(builder)
    float_outputs = list(dict.fromkeys(o for o in outputs if is_float(o)))
    cts = [builder.const(np.zeros(shape_of(o), o.tensor_type.dtype)) for o in float_outputs]
    grads = backward(builder, forward + cts, wrt_nodes, list(zip(float_outputs, cts)))
    u: Node | None = None
    for g, t in zip(grads, tangents):
        term = e.sum(e.mul(g, t), tuple(range(len(shape_of(g)))))
        u = term if u is None else e.add(u, term)
    final = list(outputs)
    if u is None or not float_outputs:
        tangent_of = {}
    else:
        transposed = backward(builder, list(builder.nodes), cts, [(u, builder.const(np.ones((), u.tensor_type.dtype)))])
        tangent_of = dict(zip(float_outputs, transposed))
    for out in outputs:
        tangent = tangent_of.get(out)
        final.append(fresh_output(builder, e.zeros_like(out) if tangent is None else tangent, final))
    mutations = [(new_index(i, insert_at, len(tangents)), mapping[n]) for i, n in graph.mutations]
    joint = eliminate_dead(builder.build(final, mutations))
    readers = {n for node in joint.nodes for n in node.inputs}
    if any(c in readers for c in cts):
        raise DifferentiationError("jvp: the transposed backward still reads its cotangent (a rule that is not "
                                   "linear in its cotangent); this is a bug in a derivative rule")
    return JointGraph(joint, len(outputs), tuple(wrt))
