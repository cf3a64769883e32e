"""Control-flow ops: ``loop``, ``while`` and ``cond`` nodes that own body graphs (regions).

Why regions instead of unrolling: a Python loop of a few thousand iterations unrolled into the graph makes trace
and compile time explode, and a loop whose bounds come from data cannot be unrolled at all.

Conventions (every region is *closed*: a body reads only its own inputs, so a body is an ordinary Graph):

* ``loop(start, stop, step, *carried, *invariants; carried=k)``: one region ``body(i, *carried, *invariants) ->
  carried'``. ``i`` is the symbolic induction variable (a Python int, ``pyint[]``); start/stop/step are integer
  scalars, so data-dependent bounds (CSR row pointers) are plain operands. The node is tuple-typed, one element
  per carried value; ``tuple_get`` projects. Arrays are carried functionally (``setitem`` returns a new array);
  backends turn that into an in-place store when the old value is dead.
* ``while(*carried, *invariants; carried=k)``: regions ``(test, body)``; ``test(*carried, *invariants) -> b1[]``
  runs before every iteration, ``body`` has the loop's signature minus the induction variable.
* ``cond(pred, *operands)``: regions ``(then, else)``, both ``(*operands) -> results`` with identical types.

A carried value must keep its type (shape, dtype, weakness) from one iteration to the next; the front end widens
and retraces, or falls back, when it does not. :class:`RegionBuilder` builds bodies by *capturing*: a body op that
reads a value of an enclosing graph turns it into a new body input (an invariant), so callers write bodies as
naturally as straight-line code and closedness holds by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitgraph.errors import RerunEagerly
from jitgraph.ir.graph import Graph, GraphBuilder, Node, TupleType
from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import type_error
from jitgraph.ir.printer import node_names
from jitgraph.ir.types import TensorType

INDEX_TYPE = TensorType((), np.dtype(np.int64), weak=True)  # the induction variable: a Python int
PRED_TYPE = TensorType((), np.dtype(bool))


def _same(a: Any, b: Any) -> bool:
    """Region signatures compare shape, dtype and weakness; layout is advisory."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return (a.shape, a.dtype, a.weak) == (b.shape, b.dtype, b.weak)
    return a == b


def _check_signature(what: str, graph: Graph, in_types: Sequence[Any], out_types: Sequence[Any] | None) -> None:
    got_in = [n.type for n in graph.inputs]
    if len(got_in) != len(in_types) or not all(_same(a, b) for a, b in zip(got_in, in_types)):
        raise type_error(f"{what}: region takes ({', '.join(map(str, got_in))}), "
                         f"but the node passes ({', '.join(map(str, in_types))})")
    if out_types is None:
        return
    got_out = [n.type for n in graph.outputs]
    if len(got_out) != len(out_types) or not all(_same(a, b) for a, b in zip(got_out, out_types)):
        raise type_error(f"{what}: region returns ({', '.join(map(str, got_out))}), "
                         f"but the loop carries ({', '.join(map(str, out_types))}); a loop-carried value must "
                         "keep its shape, dtype and weakness")


def _is_int_scalar(t: Any) -> bool:
    return isinstance(t, TensorType) and t.shape == () and t.dtype.kind in "iu"


def _infer_loop(types: tuple[Any, ...], attrs: dict, regions: tuple[Graph, ...]) -> TupleType:
    if len(types) < 3 or not all(_is_int_scalar(t) for t in types[:3]):
        raise type_error("loop: start, stop and step must be integer scalars")
    k = attrs["carried"]
    carried, rest = types[3:3 + k], types[3:]
    (body,) = regions
    _check_signature("loop", body, (INDEX_TYPE, *rest), carried)
    return TupleType(tuple(carried))


def _infer_while(types: tuple[Any, ...], attrs: dict, regions: tuple[Graph, ...]) -> TupleType:
    k = attrs["carried"]
    test, body = regions
    _check_signature("while test", test, types, (PRED_TYPE,))
    _check_signature("while body", body, types, types[:k])
    return TupleType(tuple(types[:k]))


def _infer_cond(types: tuple[Any, ...], attrs: dict, regions: tuple[Graph, ...]) -> TupleType:
    if not types or not (isinstance(types[0], TensorType) and types[0].shape == ()):
        raise type_error("cond: the predicate must be a scalar")
    then, other = regions
    _check_signature("cond then", then, types[1:], None)
    out = [n.type for n in then.outputs]
    _check_signature("cond else", other, types[1:], out)
    return TupleType(tuple(out))


def _loop(start: int, stop: int, step: int, *operands: Any, carried: int, regions: tuple[Graph, ...],
          run: Callable[[Graph, list[Any]], list[Any]], **hints: Any) -> tuple[Any, ...]:
    (body,) = regions
    values, invariants = list(operands[:carried]), list(operands[carried:])
    for i in range(int(start), int(stop), int(step)):
        values = run(body, [i, *values, *invariants])
    return tuple(values)


def _while(*operands: Any, carried: int, regions: tuple[Graph, ...],
           run: Callable[[Graph, list[Any]], list[Any]]) -> tuple[Any, ...]:
    test, body = regions
    values, invariants = list(operands[:carried]), list(operands[carried:])
    while bool(run(test, [*values, *invariants])[0]):
        values = run(body, [*values, *invariants])
    return tuple(values)


def _cond(pred: Any, *operands: Any, regions: tuple[Graph, ...],
          run: Callable[[Graph, list[Any]], list[Any]]) -> tuple[Any, ...]:
    then, other = regions
    return tuple(run(then if bool(pred) else other, list(operands)))


define(Op("loop", OpKind.REGION, _infer_loop, _loop,
          doc="for i in range(start, stop, step): carried = body(i, *carried, *invariants); attrs: carried"))
define(Op("while", OpKind.REGION, _infer_while, _while,
          doc="while test(*carried, *inv): carried = body(*carried, *inv); attrs: carried"))
define(Op("cond", OpKind.REGION, _infer_cond, _cond, doc="then(*operands) if pred else else(*operands)"))


def _infer_check(types: tuple[Any, ...], attrs: dict, regions: tuple[Graph, ...]) -> Any:
    if len(types) != 2 or not (isinstance(types[1], TensorType) and types[1].shape == ()):
        raise type_error("check: expects (value, scalar predicate)")
    return types[0]


# The exceptions a check may raise, by the name its ``error`` attribute gives (an attribute must print as text).
CHECK_ERRORS: dict[str, type[Exception]] = {"ValueError": ValueError, "ZeroDivisionError": ZeroDivisionError,
                                            "OverflowError": OverflowError, "RerunEagerly": RerunEagerly}


def _check(value: Any, pred: Any, message: str, error: str = "ValueError") -> Any:
    if not bool(pred):
        raise CHECK_ERRORS[error](message)
    return value


define(Op("check", OpKind.SPECIAL, _infer_check, _check,
          doc="value, after raising error(message) (default ValueError) unless pred: run-time shape checks of "
              "symbolic slices, Python's ZeroDivisionError for a Python float divisor computed in the graph"))


def _infer_to_python(types: tuple[Any, ...], attrs: dict, regions: tuple[Graph, ...]) -> TensorType:
    (t,) = types
    if not isinstance(t, TensorType) or t.shape != ():
        raise type_error("to_python: only a scalar converts to a Python number")
    kind = attrs["kind"]
    if kind == "int" and t.dtype.kind in "biu":
        return TensorType((), np.dtype(np.int64), weak=True)
    if kind == "float" and t.dtype.kind in "biuf":
        return TensorType((), np.dtype(np.float64), weak=True)
    raise type_error(f"to_python: {kind}() of {t.dtype} is not supported in a loop region")


def _to_python(x: Any, kind: str) -> Any:
    return {"int": int, "float": float}[kind](x)


define(Op("to_python", OpKind.SPECIAL, _infer_to_python, _to_python,
          doc="int(x)/float(x) of a scalar inside a region: a Python number (weak); attrs: kind"))


# --------------------------------------------------------------------------------------------------- building


class RegionBuilder(GraphBuilder):
    """A GraphBuilder for a region body that captures values of enclosing graphs as extra body inputs.

    ``fixed`` inputs (induction variable, carried values) are created first; every outer value an op reads is
    then mapped to a new input (constants are copied instead, so bodies keep literal bounds visible to the
    dependence test). ``captured`` lists the outer values in input order: they become the node's invariants.
    """

    def __init__(self, parent: GraphBuilder) -> None:
        super().__init__()
        self.parent = parent
        self.loc = parent.loc
        self.captured: list[Node] = []
        self._local: dict[Node, Node] = {}
        self._own: set[Node] = set()

    def fixed_input(self, type_: Any, name: str = "") -> Node:
        node = self.input(type_, name)
        self._own.add(node)
        return node

    def local(self, node: Node) -> Node:
        """The body's version of ``node``: itself if defined here, else a capture (recursively outwards)."""
        if node in self._own:
            return node
        if node in self._local:
            return self._local[node]
        if node.op == "const":
            inner = Node("const", (), node.type, node.attrs, loc=node.loc)
            self.nodes.append(inner)
        else:
            outer = self.parent.local(node) if isinstance(self.parent, RegionBuilder) else node
            inner = self.input(node.type, f"cap{len(self.captured)}")
            self.captured.append(outer)
        self._local[node] = inner
        self._own.add(inner)
        return inner

    def outer_of(self, inner: Node) -> Node | None:
        """The value of the enclosing graph that this body captured as its input ``inner``, else None."""
        for outer, local in self._local.items():
            if local is inner and outer.op != "const":
                return self.parent.local(outer) if isinstance(self.parent, RegionBuilder) else outer
        return None

    def op(self, name: str, *inputs: Node, regions: Sequence[Graph] = (), **attrs: Any) -> Node:
        node = super().op(name, *(self.local(i) for i in inputs), regions=regions, **attrs)
        self._own.add(node)
        return node

    def const(self, value: Any, type_: TensorType | None = None) -> Node:
        node = super().const(value, type_)
        self._own.add(node)
        return node

    def finish(self, outputs: Sequence[Node]) -> Graph:
        outs = [self.local(o) for o in outputs]
        return Graph(tuple(self.nodes), tuple(self.inputs), tuple(outs), (), tuple(self.input_names))


def _resignature(body: Graph, fixed: int, captured: Sequence[Node], shared: Sequence[Node]) -> Graph:
    """Rebuild ``body`` so its inputs are its ``fixed`` ones followed by one input per value of ``shared``.

    Sibling regions (while's test and body, cond's branches) capture different outer values, but one node has one
    operand list, so each region gets every shared invariant, used or not, in the same order.
    """
    mapping: dict[Node, Node] = {}
    inputs: list[Node] = []
    names: list[str] = []
    for k, node in enumerate(body.inputs[:fixed]):
        inputs.append(Node("input", (), node.type, {"index": k}, loc=node.loc))
        names.append(body.input_names[k])
        mapping[node] = inputs[-1]
    mine = dict(zip(captured, body.inputs[fixed:]))
    for j, outer in enumerate(shared):
        inputs.append(Node("input", (), outer.type, {"index": fixed + j}))
        names.append(f"inv{j}")
        if outer in mine:
            mapping[mine[outer]] = inputs[-1]
    nodes = list(inputs)
    for node in body.nodes:
        if node.op == "input":
            continue
        if any(i in mapping for i in node.inputs):
            mapping[node] = Node(node.op, tuple(mapping.get(i, i) for i in node.inputs), node.type, node.attrs,
                                 node.regions, node.loc)
        nodes.append(mapping.get(node, node))
    outs = tuple(mapping.get(o, o) for o in body.outputs)
    return Graph(tuple(nodes), tuple(inputs), outs, (), tuple(names))


def _shared(builders: Sequence[RegionBuilder]) -> list[Node]:
    everything: list[Node] = []
    for rb in builders:
        everything.extend(n for n in rb.captured if n not in everything)
    return everything


def _as_node(b: GraphBuilder, value: Node | int) -> Node:
    if isinstance(value, Node):
        return b.local(value) if isinstance(b, RegionBuilder) else value
    return b.const(int(value))


def _project(b: GraphBuilder, node: Node) -> list[Node]:
    return [b.op("tuple_get", node, index=k) for k in range(len(node.type.elements))]  # type: ignore[union-attr]


BodyFn = Callable[..., Sequence[Node]]


def build_loop(b: GraphBuilder, start: Node | int, stop: Node | int, step: Node | int, init: Sequence[Node],
               body: BodyFn, **attrs: Any) -> list[Node]:
    """Record ``for i in range(start, stop, step)``; ``body(rb, i, *carried)`` returns the new carried values.

    ``attrs``: hints for backends, e.g. ``reassociate=True`` on a sum whose order the source leaves unspecified
    (``np.dot``), which lets the code generator keep several partial sums."""
    bounds = [_as_node(b, v) for v in (start, stop, step)]
    rb = RegionBuilder(b)
    i = rb.fixed_input(INDEX_TYPE, "i")
    carried = [rb.fixed_input(v.type, f"c{k}") for k, v in enumerate(init)]
    graph = rb.finish(list(body(rb, i, *carried)))
    graph = _resignature(graph, 1 + len(init), rb.captured, rb.captured)
    node = b.op("loop", *bounds, *init, *rb.captured, regions=(graph,), carried=len(init), **attrs)
    return _project(b, node)


def build_while(b: GraphBuilder, init: Sequence[Node], test: BodyFn, body: BodyFn) -> list[Node]:
    """Record ``while test(*carried): carried = body(*carried)``; both callbacks get ``(rb, *carried)``."""
    graphs, builders = [], []
    for fn, is_test in ((test, True), (body, False)):
        rb = RegionBuilder(b)
        carried = [rb.fixed_input(v.type, f"c{k}") for k, v in enumerate(init)]
        result = fn(rb, *carried)
        graphs.append(rb.finish([result] if is_test else list(result)))
        builders.append(rb)
    shared = _shared(builders)
    regions = tuple(_resignature(g, len(init), rb.captured, shared) for g, rb in zip(graphs, builders))
    node = b.op("while", *init, *shared, regions=regions, carried=len(init))
    return _project(b, node)


def build_cond(b: GraphBuilder, pred: Node, then: BodyFn, other: BodyFn) -> list[Node]:
    """Record ``then(rb) if pred else other(rb)``; each callback returns its results (same types)."""
    graphs, builders = [], []
    for fn in (then, other):
        rb = RegionBuilder(b)
        graphs.append(rb.finish(list(fn(rb))))
        builders.append(rb)
    shared = _shared(builders)
    regions = tuple(_resignature(g, 0, rb.captured, shared) for g, rb in zip(graphs, builders))
    node = b.op("cond", _as_node(b, pred), *shared, regions=regions)
    return _project(b, node)


# ---------------------------------------------------------------------------------------------- inspection


def trip_count(node: Node) -> int | None:
    """The number of iterations of a ``loop`` whose bounds are constants, else None (known only at run time)."""
    if node.op != "loop" or not all(i.op == "const" for i in node.inputs[:3]):
        return None
    start, stop, step = (int(i.attrs["value"]) for i in node.inputs[:3])
    return len(range(start, stop, step)) if step else None


@dataclass(frozen=True)
class RegionInfo:
    """One region node as explain shows it: kind, nesting depth, trip count when known, and prange-ness."""

    name: str
    kind: str
    depth: int
    trip_count: int | None
    parallel: bool
    loc: str

    def __str__(self) -> str:
        trips = "?" if self.trip_count is None else str(self.trip_count)
        extra = f" trips={trips}" if self.kind == "loop" else ""
        par = " prange" if self.parallel else ""
        where = f" at {self.loc}" if self.loc else ""
        return f"{'  ' * self.depth}{self.name} {self.kind}{extra}{par}{where}"


def describe_regions(graph: Graph, parallel: Sequence[Node] = ()) -> list[RegionInfo]:
    """Every control-flow region node of ``graph`` (loop, while, cond; nested ones included) in print order;
    ``parallel`` = loops made prange. A ``fused`` node's body is a kernel, not control flow: it is not listed."""
    names = node_names(graph)
    out: list[RegionInfo] = []

    def walk(g: Graph, depth: int) -> None:
        for node in g.nodes:
            if node.regions and node.op != "fused":
                out.append(RegionInfo(names[node], node.op, depth, trip_count(node), node in parallel,
                                      str(node.loc) if node.loc else ""))
                for region in node.regions:
                    walk(region, depth + 1)

    walk(graph, 0)
    return out
