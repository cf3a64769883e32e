"""NumPy table entries for ufuncs, ``where``/``clip``, reductions, products and ufunc methods (``np.add.at``,
``np.add.reduce``). The table is assembled in ``numpy_table.py``."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.ops.elementwise import BINARY_UFUNCS, UNARY_UFUNCS
from jitgraph.tracer.arrays import parse_index, store_into
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.numpy_base import Lowering, LoweringTable, as_array, axes_arg, dtype_arg, no_out
from jitgraph.tracer.values import TArray

TABLE = LoweringTable("numpy_math")
numpy, method = TABLE.numpy, TABLE.method


# ---- elementwise ----------------------------------------------------------------------------------------------
def _ufunc_lowering(name: str, nin: int) -> Lowering:
    def lowering(tx: TraceContext, *args: Any, out: Any = None, dtype: Any = None, **kwargs: Any) -> Any:
        if kwargs:
            tx.graph_break(f"np.{name} with {sorted(kwargs)} is not supported by the tracer")
        if len(args) == nin + 1 and out is None:
            *args, out = args
        if len(args) != nin:
            err = TypeError(f"{name}() takes from {nin} to {nin + 1} positional arguments but {len(args)} were given")
            tx.graph_break(str(err), err)
        if dtype is not None:
            tx.graph_break(f"np.{name}(dtype=...) is not supported by the tracer")
        if isinstance(out, tuple) and len(out) == 1:
            out = out[0]
        node = tx.strong(tx.op(name, *(tx.node(a) for a in args)))
        if out is not None:
            if not isinstance(out, TArray) or out.kind != "array":
                tx.graph_break(f"np.{name}(out=...) into a non-array")
            store_into(tx, out, node, name, args[-1])
            return out
        return tx.result(node)

    return lowering


for _name in UNARY_UFUNCS:
    TABLE.functions[getattr(np, _name)] = _ufunc_lowering(_name, 1)
for _name in BINARY_UFUNCS:
    TABLE.functions[getattr(np, _name)] = _ufunc_lowering(_name, 2)


@numpy(np.where)
def _where(tx: TraceContext, condition: Any, *xy: Any) -> Any:
    if len(xy) != 2:
        tx.graph_break("np.where with one argument returns data-dependent indices")
    node = tx.strong(tx.op("where", tx.node(condition), tx.node(xy[0]), tx.node(xy[1])))
    return tx.result(node, scalar_if_0d=False)


def _clip_impl(tx: TraceContext, a: Any, lo: Any, hi: Any) -> Any:
    x = tx.node(a)
    if lo is None and hi is None:
        err = ValueError("One of max or min must be given")
        tx.graph_break(str(err), err)
    if lo is None:
        return tx.result(tx.strong(tx.op("minimum", x, tx.node(hi))))
    if hi is None:
        return tx.result(tx.strong(tx.op("maximum", x, tx.node(lo))))
    return tx.result(tx.strong(tx.op("clip", x, tx.node(lo), tx.node(hi))))


@numpy(np.clip)
def _clip(tx: TraceContext, a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, *,
          min: Any = None, max: Any = None) -> Any:
    no_out(tx, out, "clip")
    return _clip_impl(tx, a, a_min if a_min is not None else min, a_max if a_max is not None else max)


@method("clip")
def _m_clip(tx: TraceContext, a: Any, min: Any = None, max: Any = None, out: Any = None) -> Any:
    no_out(tx, out, "clip")
    return _clip_impl(tx, a, min, max)


# ---- reductions -----------------------------------------------------------------------------------------------
def _reduce(tx: TraceContext, name: str, a: Any, axis: Any, keepdims: bool, **extra: Any) -> Any:
    x = as_array(tx, a)
    t = tx.type_of(x)
    attrs: dict[str, Any] = {"axis": axes_arg(tx, axis, t.ndim, name), "keepdims": bool(keepdims)}
    for key, value in extra.items():
        if value is not None:
            attrs[key] = dtype_arg(tx, value) if key == "dtype" else value
    return tx.result(tx.op(name, tx.read(x), **attrs))


def _reduction(name: str, with_dtype: bool = False, with_ddof: bool = False) -> tuple[Lowering, Lowering]:
    def fn(tx: TraceContext, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False, ddof: int = 0, **kwargs: Any) -> Any:
        if kwargs:
            tx.graph_break(f"np.{name} with {sorted(kwargs)} is not supported by the tracer")
        no_out(tx, out, name)
        extra: dict[str, Any] = {}
        if with_dtype:
            extra["dtype"] = dtype
        elif dtype is not None:
            tx.graph_break(f"{name}(dtype=...) is not supported")
        if with_ddof:
            extra["ddof"] = ddof
        return _reduce(tx, name, a, axis, keepdims, **extra)

    def np_fn(tx: TraceContext, a: Any, axis: Any = None, *rest: Any, **kwargs: Any) -> Any:
        names = (["dtype", "out"] if with_dtype else ["out"]) + ["keepdims"] + (["ddof"] if with_ddof else [])
        if with_ddof:
            names = ["dtype", "out", "ddof", "keepdims"]
        kwargs.update(zip(names, rest))
        return fn(tx, a, axis, **kwargs)

    return np_fn, np_fn


for _name, _np_fns, _dt, _dd in (
        ("sum", (np.sum,), True, False), ("mean", (np.mean,), True, False), ("prod", (np.prod,), True, False),
        ("max", (np.max, np.amax), False, False), ("min", (np.min, np.amin), False, False),
        ("any", (np.any,), False, False), ("all", (np.all,), False, False),
        ("var", (np.var,), True, True), ("std", (np.std,), True, True)):
    _lowering, _ = _reduction(_name, _dt, _dd)
    for _f in _np_fns:
        TABLE.functions[_f] = _lowering
    TABLE.methods[_name] = _lowering


def _arg_reduction(name: str) -> Lowering:
    def fn(tx: TraceContext, a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        no_out(tx, out, name)
        x = as_array(tx, a)
        t = tx.type_of(x)
        ax = None if axis is None else axes_arg(tx, axis, t.ndim, name)[0]
        return tx.result(tx.op(name, tx.read(x), axis=ax, keepdims=bool(keepdims)))

    return fn


for _name in ("argmax", "argmin"):
    TABLE.functions[getattr(np, _name)] = TABLE.methods[_name] = _arg_reduction(_name)


# ---- linear algebra -------------------------------------------------------------------------------------------
@numpy(np.matmul)
def _matmul(tx: TraceContext, a: Any, b: Any, out: Any = None, **kwargs: Any) -> Any:
    no_out(tx, out, "matmul")
    return tx.result(tx.op("matmul", tx.node(a), tx.node(b)))


@numpy(np.dot)
@method("dot")
def _dot(tx: TraceContext, a: Any, b: Any, out: Any = None) -> Any:
    no_out(tx, out, "dot")
    return tx.result(tx.op("dot", tx.node(a), tx.node(b)))


@numpy(np.outer)
def _outer(tx: TraceContext, a: Any, b: Any, out: Any = None) -> Any:
    no_out(tx, out, "outer")
    return tx.fresh(tx.op("outer", tx.node(a), tx.node(b)))


@numpy(np.einsum)
def _einsum(tx: TraceContext, subscripts: Any, *operands: Any, out: Any = None, optimize: Any = False,
            **kwargs: Any) -> Any:
    no_out(tx, out, "einsum")
    if not isinstance(subscripts, str) or kwargs:
        tx.graph_break("einsum in interleaved form or with extra options")
    return tx.result(tx.op("einsum", *(tx.node(o) for o in operands), subscripts=subscripts))


# ---- ufunc methods --------------------------------------------------------------------------------------------
def _ufunc_at(tx: TraceContext, ufunc: np.ufunc, a: Any, indices: Any, b: Any = None) -> None:
    if ufunc is not np.add or not isinstance(a, TArray):
        tx.graph_break(f"np.{ufunc.__name__}.at is not supported (only np.add.at)")
    spec, operands = parse_index(tx, indices)
    t = tx.type_of(a)
    value = tx.node(b)
    if not np.can_cast(value.tensor_type.dtype, t.dtype, casting="same_kind") and not value.tensor_type.weak:
        tx.graph_break("np.add.at would need an unsafe cast", TypeError("Cannot cast ufunc 'add' output"))
    tx.write(a, tx.op("scatter_add", tx.read(a), value, *operands, spec=spec))


def _ufunc_reduce(tx: TraceContext, ufunc: np.ufunc, a: Any, axis: Any = 0, dtype: Any = None, out: Any = None,
                  keepdims: bool = False) -> Any:
    name = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min",
            np.logical_and: "all", np.logical_or: "any"}.get(ufunc)
    if name is None or dtype is not None:
        tx.graph_break(f"np.{ufunc.__name__}.reduce is not supported")
    no_out(tx, out, "reduce")
    return _reduce(tx, name, a, axis, keepdims)


TABLE.ufunc_methods["at"] = _ufunc_at
TABLE.ufunc_methods["reduce"] = _ufunc_reduce


# ---- what the entries above do not support (docs/supported.md) --------------------------------------------------
TABLE.note("where=, casting=, order=, subok=, signature= and dtype= keywords; out= other than an array",
           *(getattr(np, n) for n in (*UNARY_UFUNCS, *BINARY_UFUNCS)))
TABLE.note("the one-argument form (indices of True elements: a data-dependent size)", np.where)
TABLE.note("out=", np.clip, ".clip", np.argmax, np.argmin, ".argmax", ".argmin", np.dot, ".dot", np.outer,
           np.matmul)
TABLE.note("out=, where=, initial=", np.sum, np.mean, np.prod, np.var, np.std, ".sum", ".mean", ".prod", ".var",
           ".std")
TABLE.note("out=, where=, initial=, dtype=", np.max, np.amax, np.min, np.amin, np.any, np.all, ".max", ".min", ".any",
           ".all")
TABLE.note("the interleaved (operand, sublist) form, ellipsis subscripts, out=", np.einsum)
TABLE.note("ufuncs other than np.add; a value needing an unsafe cast", "ufunc.at")
TABLE.note("ufuncs other than add, multiply, maximum, minimum, logical_and, logical_or; dtype=, out=", "ufunc.reduce")
