"""Emit one Numba "driver" function, as Python source, for a whole graph that contains regions.

Each node becomes one statement ``v12 = ...`` named after its printed name ``%12``, so the source reads side by side
with the IR dump. Regions become real ``for``/``while``/``if`` statements, whole-array ops inside bodies become
NumPy calls that Numba compiles into the same function (no Python between iterations).

Buffers. ``setitem`` is functional in the IR; here it becomes an in-place store when the old array is *dead*: no
later node, output or live view reads it, and the buffer is *owned* (a fresh array, a carried loop value, or a
caller array the graph mutates anyway). Otherwise the array is copied first. Liveness is tracked per buffer
*root*: views (basic ``getitem``, ``transpose``...) share their base's root, and region results that may alias an
operand keep that operand's root alive.

Types. Every scalar statement is wrapped in its exact dtype constructor (``np.float32(...)``) and operands are cast
to NumPy's loop dtypes (``ufunc.resolve_dtypes``, which applies NEP 50 to weak Python scalars), so Numba's own
promotion rules never decide a result type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.backends.cpu.scalar.depend import independent
from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.ops.indexing import Operand
from jitgraph.ir.printer import node_names
from jitgraph.ir.types import TensorType, python_type

VIEW_OPS = {"transpose", "reshape", "broadcast_to"}
BINARY = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floor_divide": "//", "remainder": "%",
          "power": "**", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "left_shift": "<<",
          "right_shift": ">>", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
          "equal": "==", "not_equal": "!="}
REDUCTIONS = {"sum", "prod", "max", "min", "mean", "any", "all", "var", "std", "argmax", "argmin"}


def dtype_ctor(dtype: np.dtype) -> str:
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def is_array(node: Node) -> bool:
    return isinstance(node.type, TensorType) and node.type.shape != ()


class _Scope:
    """Buffer bookkeeping for one graph (the top level or one region body)."""

    def __init__(self, graph: Graph, owned_inputs: set[Node]) -> None:
        self.graph = graph
        self.pos = {n: k for k, n in enumerate(graph.nodes)}
        end = len(graph.nodes)
        self.last: dict[Node, int] = {n: -1 for n in graph.nodes}
        for n in graph.nodes:
            for i in n.inputs:
                self.last[i] = max(self.last[i], self.pos[n])
        for n in graph.live_roots():
            self.last[n] = end
        self.roots: dict[Node, frozenset[Node]] = {}
        self.view: set[Node] = set()
        self.members: dict[Node, list[Node]] = {}
        self.owned: set[Node] = set()
        from jitgraph.backends.cpu.scalar.fuse import plan_inline

        self.inline: set[Node] = plan_inline(graph)
        # (index text, size, axis) -> the checked copy of an index already emitted in this block (bounds.check)
        self.checked: dict[tuple[str, int, int], str] = {}
        for n in graph.inputs:
            if is_array(n):
                self.fresh(n, n in owned_inputs)

    def fresh(self, node: Node, owned: bool, also: frozenset[Node] = frozenset()) -> None:
        self.set_roots(node, frozenset({node}) | also)
        if owned:
            self.owned.add(node)

    def set_roots(self, node: Node, roots: frozenset[Node], view: bool = False) -> None:
        self.roots[node] = roots
        if view:
            self.view.add(node)
        for r in roots:
            self.members.setdefault(r, []).append(node)

    def dead_after(self, x: Node, user: Node) -> bool:
        """Whether ``x``'s buffer may be overwritten by ``user`` (its only remaining reader)."""
        if x in self.view or len(self.roots.get(x, ())) != 1:
            return False
        (root,) = self.roots[x]
        if root not in self.owned:
            return False
        p = self.pos[user]
        if any(self.last[m] > p for m in self.members[root]):
            return False
        sharing = [i for i in user.inputs if root in self.roots.get(i, ())]
        return sharing == [x]


class Emitter:
    """Writes the driver's source; ``parallel`` collects the loops that became ``prange``."""

    def __init__(self, graph: Graph, options: dict[str, Any]) -> None:
        self.graph = graph
        self.names = node_names(graph)
        self.options = options
        self.var: dict[Node, str] = {}
        self.results: dict[Node, list[str]] = {}
        # Per region node and result: (outer roots it may alias, "same" | "owned" | "shared"). "same": the result
        # is the outer buffer itself, updated in place; "owned": a buffer the region made; "shared": may alias.
        self.result_roots: dict[Node, list[tuple[frozenset[Node], str]]] = {}
        self.lines: list[str] = []
        self.globals: dict[str, Any] = {}
        self.parallel: list[Node] = []
        self.serial_reasons: dict[Node, str] = {}
        self.scope: _Scope
        self.in_prange = False
        self.loop_depth = 0  # enclosing loop/while regions of the node being emitted
        self.nonneg: set[Node] = set()
        self.upper: dict[Node, int] = {}
        self.prange_flag: str | None = None  # the error flag of the prange body being emitted
        self.flag_used = False  # exclusive upper bounds of integer scalars (induction variables)  # integer scalars proven >= 0 (for the dependence test)

    # ------------------------------------------------------------------ helpers
    def vname(self, node: Node) -> str:
        return "v" + self.names[node][1:]

    def write(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def cast(self, node: Node, dtype: np.dtype) -> str:
        expr = self.var[node]
        t = node.tensor_type
        if t.dtype == dtype:
            return expr
        return f"{dtype_ctor(dtype)}({expr})" if t.shape == () else f"{expr}.astype({dtype_ctor(dtype)})"

    def copy_of(self, node: Node) -> str:
        return f"{self.var[node]}.copy()" if is_array(node) else self.var[node]

    # ------------------------------------------------------------------ graphs
    def emit_graph(self, graph: Graph, indent: int, owned_inputs: set[Node]) -> list[str]:
        """Emit ``graph``'s nodes (inputs already named in ``self.var``); return its outputs' expressions."""
        outer, self.scope = getattr(self, "scope", None), _Scope(graph, owned_inputs)
        for node in graph.nodes:
            if node.op == "input":
                continue
            self.emit_node(node, indent)
        outputs = [self.var[o] for o in graph.outputs]
        scope = self.scope
        if outer is not None:
            self.scope = outer
        self._last_scope = scope
        return outputs

    def emit_node(self, node: Node, indent: int) -> None:
        op = OPS[node.op]
        handler = EMITTERS.get(node.op) or KIND_EMITTERS.get(op.kind)
        if handler is None:
            raise UnsupportedError(f"the loop code generator has no emitter for {node.op!r}",
                                   hint="the graph runs on the eager backend instead")
        expr = handler(self, node, indent)
        if expr is not None:
            name = self.vname(node)
            t = node.type
            if isinstance(t, TensorType) and t.shape == () and node.op not in ("const",):
                expr = f"{dtype_ctor(t.dtype)}({expr})"
            self.write(indent, f"{name} = {expr}")
            self.var[node] = name
            if is_array(node) and node not in self.scope.roots:
                self.scope.fresh(node, owned=True)

    def array_args(self, node: Node) -> list[Node]:
        return [i for i in node.inputs if is_array(i)]


Handler = Callable[[Emitter, Node, int], str | None]


def _const(em: Emitter, node: Node, indent: int) -> str | None:
    value = node.attrs["value"]
    t = node.tensor_type
    if isinstance(value, np.ndarray) and value.shape != ():
        name = f"const{len(em.globals)}"
        em.globals[name] = value
        em.var[node] = name
        em.scope.fresh(node, owned=False)
        return None
    py = python_type(t.dtype)(value.item() if isinstance(value, np.generic | np.ndarray) else value)
    literal = repr(py)
    if isinstance(py, float) and not np.isfinite(py):
        literal = f"np.float64({literal!r})"
    em.var[node] = literal if t.weak else f"{dtype_ctor(t.dtype)}({literal})"
    return None


def cast_text(expr: str, t: TensorType, dtype: np.dtype, scalar: bool) -> str:
    if t.dtype == dtype:
        return expr
    return f"{dtype_ctor(dtype)}({expr})" if scalar else f"{expr}.astype({dtype_ctor(dtype)})"


def elementwise_text(node: Node, operands: list[tuple[str, TensorType]], scalar: bool) -> str:
    """The expression for one elementwise node on already-formatted operands (scalar or whole-array form)."""
    t = node.tensor_type
    if node.op == "copy":
        return operands[0][0] if scalar else f"{operands[0][0]}.copy()"
    if node.op == "astype":
        text, typ = operands[0]
        return cast_text(text, typ, t.dtype, scalar) if scalar else f"{text}.astype({dtype_ctor(t.dtype)})"
    if node.op == "where":
        c, x, y = operands[0][0], *(cast_text(e, typ, t.dtype, scalar) for e, typ in operands[1:])
        return f"({x} if {c} else {y})" if scalar else f"np.where({c}, {x}, {y})"
    if node.op == "clip":
        x, lo, hi = (cast_text(e, typ, t.dtype, scalar) for e, typ in operands)
        return f"min(max({x}, {lo}), {hi})" if scalar else f"np.clip({x}, {lo}, {hi})"
    ufunc = getattr(np, node.op)
    all_weak = all(typ.weak for _, typ in operands)  # Python op Python: NEP 50 keeps int64/float64, not object
    key = tuple(python_type(typ.dtype) if typ.weak and not all_weak else typ.dtype for _, typ in operands)
    loop = ufunc.resolve_dtypes(key + (None,) * ufunc.nout)
    args = [cast_text(e, typ, dt, scalar or typ.shape == ()) for (e, typ), dt in zip(operands, loop)]
    if node.op in BINARY:
        return f"({args[0]} {BINARY[node.op]} {args[1]})"
    if scalar and node.op in ("logical_not", "invert") and t.dtype.kind == "b":
        return f"(not {args[0]})"
    if node.op == "negative":
        return f"(-{args[0]})"
    if node.op == "square":
        return f"({args[0]} * {args[0]})"
    if scalar and node.op == "absolute":
        return f"abs({args[0]})"
    return f"np.{node.op}({', '.join(args)})"


def _elementwise(em: Emitter, node: Node, indent: int) -> str | None:
    if node in em.scope.inline:
        return None  # computed inside its consumer's loop nest
    if fuse.fusable(node):
        fuse.emit_map(em, node, indent)
        return None
    return elementwise_text(node, [(em.var[i], i.tensor_type) for i in node.inputs], node.tensor_type.shape == ())


def _reduction(em: Emitter, node: Node, indent: int) -> str | None:
    if fuse.reducible(node):
        fuse.emit_reduce(em, node, indent)
        return None
    (x,) = node.inputs
    xt = x.tensor_type
    attrs = dict(node.attrs)
    if xt.shape == ():
        raise UnsupportedError(f"{node.op} of a scalar inside a loop body is not supported")
    if node.op in ("argmax", "argmin"):
        if attrs.get("axis") is not None and xt.ndim != 1 or attrs.get("keepdims"):
            raise UnsupportedError(f"{node.op} along an axis is not supported in loop bodies")
        return f"np.{node.op}({em.var[x]})"
    full = tuple(attrs["axis"]) == tuple(range(xt.ndim)) and not attrs.get("keepdims")
    if attrs.get("ddof") or attrs.get("dtype") is not None:
        raise UnsupportedError(f"{node.op} with ddof/dtype is not supported in loop bodies")
    if full:
        return f"np.{node.op}({em.var[x]})"
    if node.op == "sum" and len(attrs["axis"]) == 1 and not attrs.get("keepdims"):
        return f"np.sum({em.var[x]}, axis={attrs['axis'][0]})"
    raise UnsupportedError(f"{node.op} over axes {attrs['axis']} is not supported in loop bodies")


def _linalg(em: Emitter, node: Node, indent: int) -> str:
    dt = node.tensor_type.dtype
    a, b = node.inputs
    x, y = em.cast(a, dt), em.cast(b, dt)
    shapes = (a.tensor_type.ndim, b.tensor_type.ndim)
    if node.op in ("dot", "matmul") and shapes == (1, 1):
        return f"dot_vv({x}, {y})"
    if node.op in ("dot", "matmul") and shapes == (2, 1):
        return f"dot_mv({x}, {y})"
    if node.op == "outer" and shapes == (1, 1):
        return f"outer({x}, {y})"
    raise UnsupportedError(f"{node.op} of {shapes[0]}-D by {shapes[1]}-D arrays is not supported in loop bodies")


def index_text(em: Emitter, spec: tuple, operands: tuple[Node, ...], safe: dict[int, str] | None = None) -> str:
    from jitgraph.ir.printer import format_value

    parts = []
    for e in spec:
        if isinstance(e, Operand):
            parts.append((safe or {}).get(e.k) or em.var[operands[e.k]])
        elif e is None:
            parts.append("None")
        elif isinstance(e, slice):
            parts.append(format_value(e) or ":")
        else:
            parts.append(format_value(e))
    return ", ".join(parts) if len(parts) != 1 else parts[0]


def _getitem(em: Emitter, node: Node, indent: int) -> str | None:
    x, *ops = node.inputs
    if any(is_array(o) for o in ops):
        raise UnsupportedError("advanced (integer-array) indexing is not supported in loop bodies")
    safe = bounds.check(em, x, node.attrs["spec"], tuple(ops), indent)
    text = f"{em.var[x]}[{index_text(em, node.attrs['spec'], tuple(ops), safe)}]"
    if not is_array(node):
        return text
    name = em.vname(node)
    em.write(indent, f"{name} = {text}")
    em.var[node] = name
    em.scope.set_roots(node, em.scope.roots[x], view=True)
    return None


def _setitem(em: Emitter, node: Node, indent: int) -> None:
    x, value, *ops = node.inputs
    if any(is_array(o) for o in ops):
        raise UnsupportedError("advanced (integer-array) index assignment is not supported in loop bodies")
    xt = x.tensor_type
    if xt.shape == ():
        raise UnsupportedError("setitem of a 0-d array is not supported in loop bodies")
    safe = bounds.check(em, x, node.attrs["spec"], tuple(ops), indent)
    target = em.var[x]
    if em.scope.dead_after(x, node):
        em.var[node] = target
        em.scope.set_roots(node, em.scope.roots[x])
    else:
        target = em.vname(node)
        em.write(indent, f"{target} = {em.var[x]}.copy()")
        em.var[node] = target
        em.scope.fresh(node, owned=True)
    if is_array(value) or any(isinstance(e, slice) or e is Ellipsis for e in node.attrs["spec"]) \
            or len(node.attrs["spec"]) < xt.ndim:
        fuse.emit_store(em, target, node, indent, safe)
    else:
        index = index_text(em, node.attrs["spec"], tuple(ops), safe)
        em.write(indent, f"{target}[{index}] = {em.cast(value, xt.dtype)}")


def _view(em: Emitter, node: Node, indent: int) -> None:
    (x,) = node.inputs
    a = node.attrs
    text = {"transpose": lambda: f"{em.var[x]}.transpose({tuple(a['axes'])!r})",
            "reshape": lambda: f"{em.var[x]}.reshape({tuple(node.tensor_type.shape)!r})",
            "broadcast_to": lambda: f"np.broadcast_to({em.var[x]}, {tuple(a['shape'])!r})"}[node.op]()
    name = em.vname(node)
    em.write(indent, f"{name} = {text}")
    em.var[node] = name
    em.scope.set_roots(node, em.scope.roots[x], view=True)


def _creation(em: Emitter, node: Node, indent: int) -> str:
    t = node.tensor_type
    a = node.attrs
    ctor = dtype_ctor(t.dtype)
    if node.op in ("zeros", "ones", "empty"):
        return f"np.{node.op}({t.shape!r}, {ctor})"
    if node.op == "full":
        return f"np.full({t.shape!r}, {ctor}({a['value']!r}), {ctor})"
    if node.op == "arange":
        return f"np.arange({a['start']!r}, {a['stop']!r}, {a['step']!r}).astype({ctor})"
    if node.op == "eye":
        return f"np.eye({a['n']}, {a['m']}, {a['k']}, {ctor})"
    raise UnsupportedError(f"no loop-body emitter for {node.op}")


def _check(em: Emitter, node: Node, indent: int) -> None:
    value, pred = node.inputs
    em.write(indent, f"if not {em.var[pred]}:")
    em.write(indent + 1, f"raise {node.attrs.get('error', 'ValueError')}({node.attrs['message']!r})")
    em.var[node] = em.var[value]
    if is_array(node):
        em.scope.set_roots(node, em.scope.roots[value], view=True)
    for fact in (em.nonneg,):
        if value in fact:
            fact.add(node)
    if value in em.upper:
        em.upper[node] = em.upper[value]


def _to_python(em: Emitter, node: Node, indent: int) -> str:
    return em.var[node.inputs[0]]  # emit_node wraps scalars in their exact dtype: np.int64 / np.float64


def _tuple_get(em: Emitter, node: Node, indent: int) -> None:
    (src,) = node.inputs
    k = node.attrs["index"]
    em.var[node] = em.results[src][k]
    if is_array(node):
        roots, owned = em.result_roots[src][k]
        if len(roots) == 1 and owned == "same":
            em.scope.set_roots(node, roots)
        else:
            em.scope.fresh(node, owned == "owned", also=roots)


from jitgraph.backends.cpu.scalar import bounds, fuse
from jitgraph.backends.cpu.scalar import regions as _regions

EMITTERS: dict[str, Handler] = {
    "const": _const, "getitem": _getitem, "setitem": _setitem, "tuple_get": _tuple_get,
    "transpose": _view, "reshape": _view, "broadcast_to": _view,
    "loop": _regions.emit_loop, "while": _regions.emit_while, "cond": _regions.emit_cond,
    "fused": _regions.emit_fused, "check": _check, "to_python": _to_python,
}
KIND_EMITTERS: dict[OpKind, Handler] = {
    OpKind.ELEMENTWISE: _elementwise, OpKind.REDUCTION: _reduction, OpKind.LINALG: _linalg,
    OpKind.CREATION: _creation,
}
__all__ = ["Emitter", "independent"]
