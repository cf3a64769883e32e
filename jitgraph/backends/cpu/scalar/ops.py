"""Emitters for the driver's value ops: constants, elementwise ops, reductions, small linear algebra, array
creation, checks and tuple results. Elementwise scalars go through the shared emitter table
(:meth:`.core.Emitter.op_text`); elementwise arrays and full reductions become loop nests (:mod:`.loopnest`).
"""

from __future__ import annotations

import numpy as np

from jitgraph.backends.cpu.scalar import loopnest
from jitgraph.backends.cpu.scalar.core import Emitter, dtype_ctor
from jitgraph.backends.cpu.scalar.depend import const_int
from jitgraph.backends.cpu.scalar.scope import is_array, reducible
from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Node
from jitgraph.ir.types import python_type


def emit_const(em: Emitter, node: Node, indent: int) -> str | None:
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


def emit_elementwise(em: Emitter, node: Node, indent: int) -> str | None:
    if node in em.scope.inline:
        return None  # computed inside its consumer's loop nest
    if is_array(node):
        loopnest.emit_map(em, node, indent)
        return None
    if node.op in ("add", "subtract") and len(node.inputs) == 2:  # ``x + c`` with x's lower bound known: >= 0?
        x, c = node.inputs
        step = const_int(c)
        if step is not None and node.op == "subtract":
            step = -step
        if x in em.floor and step is not None and (node.op == "add" or step <= 0) and em.floor[x] + step >= 0:
            em.nonneg.add(node)  # (``x - c``, c >= 0, cannot overflow: it lies between 0 and x)
    return em.op_text(node, [em.var[i] for i in node.inputs])


def emit_reduction(em: Emitter, node: Node, indent: int) -> str | None:
    if reducible(node):
        loopnest.emit_reduce(em, node, indent)
        return None
    (x,) = node.inputs
    xt = x.tensor_type
    attrs = dict(node.attrs)
    if xt.shape == ():
        raise UnsupportedError(f"{node.op} of a scalar inside a loop body is not supported")
    if node.op in ("argmax", "argmin"):
        if (attrs.get("axis") is None or xt.ndim == 1) and not attrs.get("keepdims"):
            return f"np.{node.op}({em.var[x]})"
        loopnest.emit_arg_reduce(em, node, indent)
        return None
    full = tuple(attrs["axis"]) == tuple(range(xt.ndim)) and not attrs.get("keepdims")
    if attrs.get("ddof") or attrs.get("dtype") is not None:
        raise UnsupportedError(f"{node.op} with ddof/dtype is not supported in loop bodies")
    if full:
        return f"np.{node.op}({em.var[x]})"
    if node.op == "sum" and len(attrs["axis"]) == 1 and not attrs.get("keepdims"):
        return f"np.sum({em.var[x]}, axis={attrs['axis'][0]})"
    raise UnsupportedError(f"{node.op} over axes {attrs['axis']} is not supported in loop bodies")


def emit_linalg(em: Emitter, node: Node, indent: int) -> str:
    dt = node.tensor_type.dtype
    a, b = node.inputs
    x, y = em.cast(a, dt), em.cast(b, dt)
    shapes = (a.tensor_type.ndim, b.tensor_type.ndim)
    if node.op in ("dot", "matmul") and shapes == (1, 1):
        return f"dot_vv({x}, {y})"
    # Float products may go to BLAS above a size (runtime.blas_*); other dtypes have no BLAS routine.
    prefix = "blas" if dt in (np.float32, np.float64) else "dot"
    if node.op in ("dot", "matmul") and shapes == (2, 1):
        return f"{prefix}_mv({x}, {y})"
    if node.op in ("dot", "matmul") and shapes == (1, 2):
        return f"{prefix}_vm({x}, {y})"
    if node.op in ("dot", "matmul") and shapes == (2, 2):
        return f"{prefix}_mm({x}, {y})"
    if node.op == "outer" and shapes == (1, 1):
        return f"outer({x}, {y})"
    raise UnsupportedError(f"{node.op} of {shapes[0]}-D by {shapes[1]}-D arrays is not supported in loop bodies")


def emit_creation(em: Emitter, node: Node, indent: int) -> str:
    t = node.tensor_type
    a = node.attrs
    ctor = dtype_ctor(t.dtype)
    if node.op in ("zeros", "ones", "empty"):
        return f"np.{node.op}({em.shape_text(t.shape) if t.shape else '()'}, {ctor})"
    if node.op == "full":
        return f"np.full({em.shape_text(t.shape) if t.shape else '()'}, {ctor}({a['value']!r}), {ctor})"
    if node.op == "arange":
        return f"np.arange({a['start']!r}, {a['stop']!r}, {a['step']!r}).astype({ctor})"
    if node.op == "eye":
        return f"np.eye({a['n']}, {a['m']}, {a['k']}, {ctor})"
    raise UnsupportedError(f"no loop-body emitter for {node.op}")


def emit_check(em: Emitter, node: Node, indent: int) -> None:
    value, pred = node.inputs
    em.write(indent, f"if not {em.var[pred]}:")
    em.write(indent + 1, f"raise {node.attrs.get('error', 'ValueError')}({node.attrs['message']!r})")
    em.var[node] = em.var[value]
    if is_array(node):
        em.scope.set_roots(node, em.scope.roots[value], view=True)
    if value in em.nonneg:
        em.nonneg.add(node)
    if value in em.upper:
        em.upper[node] = em.upper[value]


def emit_to_python(em: Emitter, node: Node, indent: int) -> str:
    return em.var[node.inputs[0]]  # emit_node wraps scalars in their exact dtype: np.int64 / np.float64


def emit_tuple_get(em: Emitter, node: Node, indent: int) -> None:
    (src,) = node.inputs
    k = node.attrs["index"]
    em.var[node] = em.results[src][k]
    high, low = em.after_while.get((src, k), (None, None))
    if high is not None:
        em.upper[node] = high
    if low is not None:
        em.floor[node] = low
    if is_array(node):
        roots, owned = em.result_roots[src][k]
        if len(roots) == 1 and owned == "same":
            em.scope.set_roots(node, roots)
        else:
            em.scope.fresh(node, owned == "owned", also=roots)
