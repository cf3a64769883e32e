"""The graph IR: types, nodes and graphs, the op table, the printer and the verifier."""

from jitgraph.ir.graph import Graph, GraphBuilder, Node, SourceLoc, TupleType, eliminate_dead, rebuild
from jitgraph.ir.ops import OPS, Op, OpKind, get_op, is_view_node
from jitgraph.ir.ops.indexing import Operand
from jitgraph.ir.printer import format_graph
from jitgraph.ir.types import TensorType, type_of
from jitgraph.ir.verifier import verify

__all__ = [
    "OPS", "Graph", "GraphBuilder", "Node", "Op", "OpKind", "Operand", "SourceLoc", "TensorType", "TupleType",
    "eliminate_dead", "format_graph", "get_op", "is_view_node", "rebuild", "type_of", "verify",
]
