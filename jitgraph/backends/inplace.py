"""Which kernel outputs are written straight into the caller's buffers: the one in-place-write planner.

A graph says ``mutations``: "after the call, input *i* holds the value of node *n*". The safe default is the eager
interpreter's: compute *n* into a fresh buffer, then copy it into the caller's array. When *n* is a kernel's
output, the kernel can instead write it straight into that array (an optimizer step then updates its weights with
no copy at all). Both compiling backends ask this module which mutations may be written that way; each adds only
what its own kernels can promise (``kernel_ok``).

A write of kernel output *k* into input *i*'s buffer is planned when

* the value is the only mutation of input *i*, and has the input's shape and dtype;
* no view of the input escapes (is returned), so nobody sees the buffer change under them;
* no node other than the kernel reads the input (or any view of it) after the kernel has run, and the kernel reads
  it through no other view than the input itself (it would read elements it has already overwritten);
* the backend says its kernel reads the input only where it writes it (``kernel_ok``).

Callers' arrays that overlap each other are only known at call time; the backends check that per call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jitgraph.ir.fusion_groups import is_whole_setitem
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.memory import views_of

# (the kernel's node, its body output position, the input node written) -> whether the kernel may write it there
KernelCheck = Callable[[Node, int, Node], bool]


@dataclass(frozen=True)
class InplaceWrite:
    """Kernel ``node`` writes its body output ``output`` into the caller's argument ``argument``. ``through`` is
    the ``x[...] = v`` node the write stands for, when the mutation's value is such an assignment of the kernel's
    output (the kernel then writes ``v`` straight into ``x``)."""

    node: Node
    output: int
    argument: int
    through: Node | None = None


def _producer(value: Node) -> tuple[Node, int]:
    """The node that computes ``value`` and the position of ``value`` among its results."""
    if value.op == "tuple_get":
        return value.inputs[0], value.attrs["index"]
    return value, 0


def whole_assignment(node: Node) -> bool:
    """``x[...] = v`` (or ``x[:] = v``) of a ``v`` with x's shape and dtype: the result *is* ``v``."""
    if not is_whole_setitem(node):
        return False
    x, v = node.inputs[0].tensor_type, node.inputs[1].tensor_type
    return (x.shape, x.dtype) == (v.shape, v.dtype)


def plan_inplace(graph: Graph, kernel_ok: KernelCheck, *, through_assignments: bool = False) -> list[InplaceWrite]:
    """The mutations of ``graph`` that a kernel writes straight into the caller's buffer (see the module doc).

    ``through_assignments``: also plan ``x[...] = kernel_output`` (a backend that runs such an assignment outside
    its kernels, as the CUDA backend does, saves the copy by having the kernel write into ``x``)."""
    position = {n: k for k, n in enumerate(graph.nodes)}
    roots = set(graph.outputs)
    users = graph.users()
    counts: dict[int, int] = {}
    for i, _ in graph.mutations:
        counts[i] = counts.get(i, 0) + 1
    planned: list[InplaceWrite] = []
    for index, value in graph.mutations:
        target = graph.inputs[index]
        through = None
        if through_assignments and whole_assignment(value) and value.inputs[0] is target:
            through, value = value, value.inputs[1]
        kernel, k = _producer(value)
        if counts[index] != 1 or kernel.op in ("input", "const"):
            continue
        if (value.tensor_type.shape, value.tensor_type.dtype) != (target.tensor_type.shape, target.tensor_type.dtype):
            continue
        aliases = views_of(graph, target)
        if aliases & roots or (through is not None and through in roots):
            continue  # the caller would see the buffer change under a returned view
        if any(a is not target and a in kernel.inputs for a in aliases):
            continue  # the kernel also reads it through a view: elements other than the ones it writes
        readers = [n for n in graph.nodes if any(i in aliases for i in n.inputs) and n not in aliases
                   and n is not through]
        if any(position[r] > position[kernel] for r in readers):
            continue  # someone reads the old value after the kernel wrote the new one
        if through is not None and any(position[u] > position[kernel] and u is not through and u.op != "tuple_get"
                                       for u in users[value]):
            continue  # v is read after x[...] = v by another name: v keeps its own buffer
        if kernel_ok(kernel, k, target):
            planned.append(InplaceWrite(kernel, k, index, through))
    return planned
