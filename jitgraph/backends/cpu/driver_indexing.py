"""The driver's spelling of indexing: ``x[idx]`` and ``x[idx] = v`` as Python indexing, in place where that is safe.

The reference implementations (``ir/ops/indexing.py``) rebuild the index tuple from the spec on every call and
``setitem`` copies the whole array first (the IR's ``setitem`` is functional). Per call that cost 2 us a
``getitem`` and 3 us a ``setitem`` where eager NumPy's own ``x[1:-1]`` costs 0.3 us: a stencil loop such as
``u[1:-1] = u[1:-1] + a * (u[2:] - 2 * u[1:-1] + u[:-2])`` unrolled ten times ran at half eager speed, all of it in
those calls. The driver writes the index as a constant tuple instead (operands inline), and an assignment whose
target buffer dies with it (the memory plan's last reader; the driver made that buffer, nobody else sees it) is
NumPy's own ``x[idx] = v`` into that buffer, with no copy: what the eager program did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jitgraph.backends.cpu.numpy_calls import is_array, writes_into
from jitgraph.ir.fusion_groups import EPILOGUE_HEADS
from jitgraph.ir.graph import Node
from jitgraph.ir.memory import MemoryPlan
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.ops.indexing import Operand, index_shape
from jitgraph.ir.types import TensorType

# Non-ufunc ops whose NumPy call always returns a new array of its own (never a view of an operand): the values an
# in-place assignment may write into once they are dead. (``einsum`` is missing on purpose: it may return a view.)
_FRESH = frozenset((
    "astype", "clip", "copy", "where", "concatenate", "stack", "matmul", "dot", "outer",
    "setitem", "scatter_add", "cumsum", "cumprod", "sort", "argsort",
))
_FRESH_KINDS = (OpKind.CREATION, OpKind.REDUCTION)


def index_expr(node: Node, args: list[str], ns: dict[str, Any], name: str) -> str | None:
    """The Python index of the getitem/setitem ``node`` (``args``: the driver's names for its inputs), as
    ``build_index`` makes it: the spec's constant entries from ``ns``, a scalar operand as ``int(v)``, an index
    array as it is. None when an operand is not a tensor (the reference function then runs)."""
    first = 1 if node.op == "getitem" else 2
    spec = tuple(node.attrs["spec"])
    if not any(isinstance(e, Operand) for e in spec):
        ns[f"I{name}"] = spec
        return f"I{name}"
    parts = []
    for j, entry in enumerate(spec):
        if isinstance(entry, Operand):
            operand = node.inputs[first + entry.k]
            if not isinstance(operand.type, TensorType):
                return None
            var = args[first + entry.k]
            parts.append(f"int({var})" if operand.type.ndim == 0 else var)
        else:
            ns[f"I{name}_{j}"] = entry
            parts.append(f"I{name}_{j}")
    return "(" + ", ".join(parts) + ",)"


def getitem_line(node: Node, args: list[str], var: str, ns: dict[str, Any]) -> str | None:
    """``v = x[idx]`` for a getitem of an ndarray, or None (the reference function runs)."""
    index = index_expr(node, args, ns, var)
    if index is None or not is_array(node.inputs[0]):
        return None
    return f"    {var} = {args[0]}[{index}]  # getitem"


def setitem_lines(node: Node, args: list[str], var: str, ns: dict[str, Any], in_place: bool) -> list[str] | None:
    """``x[idx] = v`` into ``x`` itself (``in_place``: see :func:`writes_in_place`) or into a copy of it, or None
    (the reference function runs)."""
    index = index_expr(node, args, ns, var)
    if index is None or not is_array(node.inputs[0]):
        return None
    target = args[0] if in_place else f"np.array({args[0]}, copy=True)"
    how = "in place: the target's buffer dies here" if in_place else "into a copy"
    return [f"    {var} = {target}", f"    {var}[{index}] = {args[1]}  # setitem {how}"]


def writes_in_place(graph_nodes: Sequence[Node], k: int, memory: MemoryPlan,
                    fresh_groups: Mapping[Node, frozenset[int]]) -> bool:
    """Whether the setitem ``graph_nodes[k]`` may assign into its target's own buffer: the target is a buffer the
    driver made this call (a fresh array: see :func:`fresh_value`; not an input, constant or output) whose last
    reader, views of it included, is this node (the memory plan releases it here; for one output of a fused group,
    the group, whose outputs are distinct arrays, is released when its last output's last reader has run)."""
    node = graph_nodes[k]
    if node.op != "setitem":
        return False
    x = node.inputs[0]
    owner = x.inputs[0] if x.op == "tuple_get" else x  # one output of a group: the plan releases the group
    return (is_array(x) and x.type.dtype == node.type.dtype and owner in memory.release_after.get(k, ()) and
            fresh_value(x, fresh_groups))


def fresh_value(node: Node, fresh_groups: Mapping[Node, frozenset[int]]) -> bool:
    """Whether the driver's value of ``node`` is an array of its own, sharing memory with no input, constant or
    other value: made by a NumPy call that never returns a view of an operand, or a fused group's output at a
    position ``fresh_groups`` lists for it (the driver's judgement of its groups: see :func:`fresh_outputs`)."""
    if node.op == "tuple_get":
        group = node.inputs[0]
        return group.op == "fused" and node.attrs["index"] in fresh_groups.get(group, ())
    if node.op == "fused":
        return len(node.regions[0].outputs) == 1 and 0 in fresh_groups.get(node, ())
    op = OPS[node.op]
    return not op.is_view and (isinstance(op.impl, np.ufunc) or node.op in _FRESH or op.kind in _FRESH_KINDS)


def fresh_outputs(node: Node, as_numpy: bool, into_inputs: Sequence[int]) -> frozenset[int]:
    """The positions of the fused ``node``'s outputs that are new arrays. A kernel's are (fresh buffers, or the BLAS
    product it made) except the kernel outputs it writes into a caller's buffer (``into_inputs``: indices among the
    outputs other than the BLAS product); a group run as NumPy calls (``as_numpy``) returns new arrays only where an
    op inside it made them (not a group input passed through), and only once each."""
    outputs = node.regions[0].outputs
    if not as_numpy:
        head = next((n for n in node.regions[0].nodes if n.op in EPILOGUE_HEADS), None)
        kernel_outputs = [o for o in outputs if o is not head]
        written = {kernel_outputs[k] for k in into_inputs}
        return frozenset(k for k, o in enumerate(outputs) if o not in written)
    body_inputs = set(node.regions[0].inputs)
    return frozenset(k for k, o in enumerate(outputs) if outputs.count(o) == 1 and o.op not in ("input", "const")
                     and o not in body_inputs and fresh_value(o, {}))


def assignments_into(nodes: Sequence[Node], in_place: set[Node], numpy_groups: Mapping[Node, Any],
                     roots: set[Node], views: Any) -> dict[Node, Node]:
    """``{producer: assignment}``: values computed straight into their target by NumPy's ``out=`` where the driver
    would compute them into a temporary and then assign ``x[idx] = v`` in place (the ``x[idx] += v`` of a col2im,
    ``out[:, :, i, j] = patch.sum(...)`` of a direct convolution): no temporary, no copy.

    Only where that is the same: the assignment is in place (:func:`writes_in_place`) with a constant basic index
    whose target is an array of the value's shape and dtype; the value is read by the assignment alone, and is
    computed just before it (nothing reads ``x`` in between) by one NumPy call that can write into an array
    (``numpy_calls.writes_into``): a plain reduction that reads no view of ``x``, or the last op of a group run as
    NumPy calls (a ufunc: NumPy computes overlapping operands as if through a temporary).
    ``views(x)``: ``x`` and the values that share its buffer."""
    readers: dict[Node, int] = {}
    for n in nodes:
        for i in n.inputs:
            readers[i] = readers.get(i, 0) + 1
    found: dict[Node, Node] = {}
    for k, node in enumerate(nodes):
        if node not in in_place or len(node.inputs) != 2 or any(isinstance(e, Operand) for e in node.attrs["spec"]):
            continue
        x, value = node.inputs
        before = next((n for n in reversed(nodes[:k]) if n.op != "const"), None)
        if before is not value or readers.get(value) != 1 or value in roots or not isinstance(value.type, TensorType):
            continue
        target = index_shape(x.type.shape, tuple(node.attrs["spec"]), ())  # checked when the graph was built
        if value.type.weak or value.type.ndim == 0 or target != value.type.shape or value.type.dtype != x.type.dtype:
            continue
        if value in numpy_groups:
            body = value.regions[0]
            members = [m for m in body.nodes if m.op not in ("input", "const")]
            if len(body.outputs) == 1 and members and body.outputs[0] is members[-1] and \
                    OPS[members[-1].op].kind is OpKind.ELEMENTWISE and writes_into(members[-1]):
                found[value] = node
        elif value.op != "fused" and OPS[value.op].kind is OpKind.REDUCTION and writes_into(value) and \
                value.inputs[0] not in views(x):
            found[value] = node
    return found
