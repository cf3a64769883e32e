"""The IR verifier: SSA form, topological order, closed regions and types re-inferred from the op table.

Every pass runs under it in tests (and under ``JITGRAPH_VERIFY=1``), so a pass that produces a bad graph is caught
at the pass, with the offending node and its neighbours printed, rather than as a wrong number much later.
"""

from __future__ import annotations

from jitgraph.errors import JitgraphError, VerifyError
from jitgraph.ir.graph import Graph, Node, TupleType
from jitgraph.ir.ops import OPS
from jitgraph.ir.printer import format_graph, node_names
from jitgraph.ir.types import TensorType, type_of


def _context(graph: Graph, bad: Node | None, radius: int = 2, line: str | None = None) -> str:
    """The printed graph around the offending line, marked ``-->``.

    The line is ``bad``'s definition, or (for return/mutate problems, or a node that is not in the graph) the first
    line starting with ``line``.
    """
    names = node_names(graph)
    lines = format_graph(graph).splitlines()
    target = names.get(bad) if bad is not None else None
    hit = next((k for k, text in enumerate(lines) if target and text.strip().startswith(f"{target} =")), None)
    if hit is None and line is not None:
        hit = next((k for k, text in enumerate(lines) if text.strip().startswith(line)), None)
    if hit is None:
        return "\n".join("    " + text for text in lines[:2 * radius + 1])
    lo, hi = max(0, hit - radius), min(len(lines), hit + radius + 1)
    return "\n".join(("--> " if k == hit else "    ") + lines[k] for k in range(lo, hi))


def _name(graph: Graph, node: Node) -> str:
    """``%k (op #uid)`` for a node of the graph, the node's repr for one outside it."""
    if node in graph.nodes:
        return f"{node_names(graph)[node]} ({node!r})"
    return repr(node)


def _fail(graph: Graph, node: Node | None, message: str, line: str | None = None) -> VerifyError:
    text = message if node is None and line is None else f"{message}\n{_context(graph, node, line=line)}"
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
            raise _fail(graph, node, f"node {_name(graph, node)} appears twice (SSA values are defined once)")
        if node.op not in OPS:
            raise _fail(graph, node, f"unknown op {node.op!r}")
        for operand in node.inputs:
            if operand not in seen:
                where = "later in the graph" if operand in graph.nodes else "outside this graph (regions are closed)"
                raise _fail(graph, node, f"{node.op} uses {_name(graph, operand)}, which is defined {where}")
        if node.op == "input":
            index = node.attrs.get("index")
            if not isinstance(index, int) or not 0 <= index < len(graph.inputs) or graph.inputs[index] is not node:
                raise _fail(graph, node, f"input node at position {position} is not graph.inputs[{index}]")
        elif node.op == "const":
            _check_const(graph, node)
        else:
            _check_type(graph, node)
        for region in node.regions:
            _verify(region, root)
        seen.add(node)
    for k, inp in enumerate(graph.inputs):
        if inp not in seen or inp.op != "input":
            raise _fail(graph, inp if inp in seen else None,
                        f"graph.inputs[{k}] = {inp!r} is not an input node of this graph", line="%0 =")
    for out in graph.outputs:
        if out not in seen:
            raise _fail(graph, None, f"output {out!r} is not defined in the graph", line="return")
    mutated: set[int] = set()
    for index, value in graph.mutations:
        if not isinstance(index, int) or not 0 <= index < len(graph.inputs):
            raise _fail(graph, None, f"mutation of input {index}, but the graph has {len(graph.inputs)} inputs",
                        line=f"mutate input[{index}] <-")
        target, new = graph.inputs[index].type, value.type
        problem = None
        if index in mutated:
            problem = f"input {index} is mutated twice; a graph writes each caller buffer once"
        elif value not in seen:
            problem = f"mutation value {value!r} is not defined in the graph"
        elif not (isinstance(target, TensorType) and isinstance(new, TensorType)) or \
                (target.shape, target.dtype) != (new.shape, new.dtype):
            problem = f"mutation writes {new} into input {index} of type {target}"
        elif target.weak:
            problem = f"mutation of input {index}, a Python scalar ({target}), which cannot be written in place"
        if problem is not None:
            names = node_names(graph)  # only on failure: naming prints the whole graph
            raise _fail(graph, None, problem, line=f"mutate {names.get(graph.inputs[index])} <- {names.get(value)}")
        mutated.add(index)


def _check_const(graph: Graph, node: Node) -> None:
    """A constant's type is its value's type: a wrong one would make every rule downstream wrong."""
    if "value" not in node.attrs:
        raise _fail(graph, node, "const node without a value")
    value = node.attrs["value"]
    try:
        expected = type_of(value)
    except TypeError:
        raise _fail(graph, node, f"const value of unsupported type {type(value).__name__}") from None
    if not _same_type(expected, node.type):
        raise _fail(graph, node, f"const is typed {node.type}, but its value has type {expected}")


def _check_type(graph: Graph, node: Node) -> None:
    try:
        expected = OPS[node.op].infer(tuple(i.type for i in node.inputs), node.attrs, node.regions)
    except JitgraphError as exc:
        raise _fail(graph, node, f"{node.op} rejects its operands: {exc.message}") from exc
    except Exception as exc:  # a malformed node (missing attr, wrong arity) breaks the rule itself
        raise _fail(graph, node, f"{node.op}'s type rule failed on this node: {type(exc).__name__}: {exc}") from exc
    if not _same_type(expected, node.type):
        raise _fail(graph, node, f"{node.op} is typed {node.type}, but its rule gives {expected}")


def _same_type(a: object, b: object) -> bool:
    """Types agree on shape, dtype and weakness; layout is advisory (passes may improve it)."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return (a.shape, a.dtype, a.weak) == (b.shape, b.dtype, b.weak)
    if isinstance(a, TupleType) and isinstance(b, TupleType):  # the same rule for each element
        return len(a.elements) == len(b.elements) and all(map(_same_type, a.elements, b.elements))
    return a == b
