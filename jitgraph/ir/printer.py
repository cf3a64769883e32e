"""Deterministic, compact text form of a graph: one line per node, ``%3 = add(%1, %2) : f32[64,128]``.

Node names are positions (``%0`` upwards, continuing through region bodies), never object ids, so the same graph
prints the same text in every process. Tests assert on this text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from jitgraph.ir.types import short_dtype

if TYPE_CHECKING:  # the printer reads nodes and graphs but needs neither class at run time (graph.py imports it)
    from jitgraph.ir.graph import Graph, Node


def format_value(value: Any) -> str:
    """Print an attr or constant value compactly and deterministically."""
    if isinstance(value, slice):
        parts = ["" if p is None else format_value(p) for p in (value.start, value.stop, value.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if value.step is not None else "")
    if value is Ellipsis:
        return "..."
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return short_dtype(np.dtype(value))
    if isinstance(value, tuple):
        inner = ", ".join(format_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return f"{short_dtype(value.dtype)}({value.item()!r})"
        if 0 < value.size <= 8:
            # Element by element rather than np.array2string: no alignment padding, and no dependence on the
            # process-wide np.set_printoptions state.
            return f"{short_dtype(value.dtype)}{_nested(value)}"
        return f"<{short_dtype(value.dtype)}{list(value.shape)} array>"
    if isinstance(value, np.generic):
        return f"{short_dtype(value.dtype)}({value.item()!r})"
    return repr(value)


def _nested(array: np.ndarray) -> str:
    if array.ndim == 0:
        return repr(array.item())
    return "[" + ",".join(_nested(sub) for sub in array) + "]"


class _Namer:
    def __init__(self) -> None:
        self.names: dict[Node, str] = {}

    def name(self, node: Node) -> str:
        if node not in self.names:
            self.names[node] = f"%{len(self.names)}"
        return self.names[node]


def _node_line(node: Node, namer: _Namer, graph: Graph) -> str:
    lhs = namer.name(node)
    if node.op == "input":
        index = node.attrs["index"]
        # A malformed index must still print: the verifier shows this very line when rejecting it.
        ok = isinstance(index, int) and 0 <= index < len(graph.input_names)
        label = graph.input_names[index] if ok else str(index)
        return f"{lhs} = input[{label}] : {node.type}"
    if node.op == "const":
        return f"{lhs} = const({format_value(node.attrs['value'])}) : {node.type}"
    args = [namer.name(i) for i in node.inputs]
    args += [f"{k}={format_value(v)}" for k, v in node.attrs.items()]
    return f"{lhs} = {node.op}({', '.join(args)}) : {node.type}"


def _format(graph: Graph, namer: _Namer, indent: str) -> list[str]:
    lines = []
    for node in graph.nodes:
        line = indent + _node_line(node, namer, graph)
        if node.regions:
            line += " {"
            lines.append(line)
            for k, region in enumerate(node.regions):
                if k:
                    lines.append(indent + "} {")
                lines.extend(_format(region, namer, indent + "  "))
            lines.append(indent + "}")
        else:
            lines.append(line)
    lines.append(indent + "return " + ", ".join(namer.name(o) for o in graph.outputs))
    for index, node in graph.mutations:
        ok = isinstance(index, int) and 0 <= index < len(graph.inputs)  # malformed graphs must still print
        target = namer.name(graph.inputs[index]) if ok else f"input[{index}]"
        lines.append(indent + f"mutate {target} <- {namer.name(node)}")
    return lines


def format_graph(graph: Graph) -> str:
    return "\n".join(_format(graph, _Namer(), ""))


def node_names(graph: Graph) -> dict[Node, str]:
    """The ``%k`` name of every node (regions included), as :func:`format_graph` prints it."""
    namer = _Namer()
    _format(graph, namer, "")
    return namer.names
