"""NumPy table entries for functions NumPy itself writes in Python on top of others (issue 19's "beyond the table"):
``np.roll``, ``np.tensordot``, ``np.kron``, ``np.ptp``, ``np.append``, ``np.nan_to_num``, ``np.trapezoid``,
``np.corrcoef``, ``np.diagflat``, ``np.rot90``, ``np.dstack``, ``np.hsplit``/``vsplit``/``dsplit``, ``np.polyval``,
``np.vander``, ``np.select``; NumPy routines run inside the graph as ops of their own (``np.convolve``,
``np.correlate``, ``np.interp``, ``np.digitize``, ``np.cross``, ``np.partition``, ``np.argpartition``); and the
creators of constant arrays ``np.tri``, ``np.triu_indices``,
``np.tril_indices``, ``np.logspace``, ``np.geomspace``, ``np.indices``.

Each lowering follows NumPy's own implementation step by step (``tensordot`` transposes, reshapes and calls ``dot``;
``kron`` multiplies broadcast views; ``trapezoid`` sums ``d * (y[1:] + y[:-1]) / 2``), so values, dtypes and shapes
are NumPy's. Creators whose arguments are all known at trace time are NumPy's own result, a constant.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.ir.ops.indexing import Operand
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.numpy_arrays import _flip
from jitgraph.tracer.numpy_base import LoweringTable, as_array, axes_arg
from jitgraph.tracer.numpy_linalg import _cov
from jitgraph.tracer.numpy_shapes import _concatenate, _reshape_to, _transpose_to
from jitgraph.tracer.numpy_stats import _splitter
from jitgraph.tracer.values import TArray, contains_tarray, is_plain

TABLE = LoweringTable("numpy_composite")
numpy = TABLE.numpy
_split = _splitter(True)


def _fail(tx: TraceContext, err: BaseException) -> None:
    tx.graph_break(str(err), err)


def _plain_ints(tx: TraceContext, value: Any, what: str) -> tuple[int, ...]:
    if contains_tarray(value) or not is_plain(value):
        tx.graph_break(f"{what} computed from array data")
    values = value if isinstance(value, tuple | list) else (value,)
    if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values):
        _fail(tx, TypeError(f"{what} must be integers"))
    return tuple(int(v) for v in values)


def _slice(tx: TraceContext, x: Node, axis: int, start: int | None, stop: int | None) -> Node:
    spec = tuple(slice(start, stop) if k == axis else slice(None) for k in range(x.tensor_type.ndim))
    return tx.op("getitem", x, spec=spec)


# ---- roll, tensordot, kron, ptp, append ------------------------------------------------------------------------
@numpy(np.roll)
def _roll(tx: TraceContext, a: Any, shift: Any, axis: Any = None) -> Any:
    """Each axis's last ``shift`` elements moved to the front (a concatenation of two slices, as NumPy copies)."""
    x = as_array(tx, a)
    shifts = _plain_ints(tx, shift, "np.roll: shift")
    if axis is None:
        flat = _reshape_to(tx, x, (-1,))
        rolled = _roll(tx, flat, shifts[0] if len(shifts) == 1 else shift, 0)
        return _reshape_to(tx, rolled, tx.type_of(x).shape)
    t = tx.type_of(x)
    axes = _plain_ints(tx, axis, "np.roll: axis")
    try:
        pairs = np.broadcast(np.array(shifts), np.array(axes))
    except ValueError as exc:
        _fail(tx, exc)
    total: dict[int, int] = {}
    for s, ax in pairs:
        ax = axes_arg(tx, int(ax), t.ndim, "roll")[0]
        total[ax] = total.get(ax, 0) + int(s)
    node = original = tx.read(x)
    for ax, s in total.items():
        n = t.shape[ax]
        s = s % n if n else 0
        if s:
            node = tx.op("concatenate", _slice(tx, node, ax, n - s, None), _slice(tx, node, ax, None, n - s), axis=ax)
    return tx.fresh(tx.op("copy", node) if node is original else node, "array")


@numpy(np.tensordot)
def _tensordot(tx: TraceContext, a: Any, b: Any, axes: Any = 2) -> Any:
    """NumPy's own steps: the summed axes moved last (of ``a``) and first (of ``b``), both reshaped to matrices,
    one ``dot``, the free axes restored."""
    x, y = as_array(tx, a), as_array(tx, b)
    ta, tb = tx.type_of(x), tx.type_of(y)
    if contains_tarray(axes) or not is_plain(axes):
        tx.graph_break("np.tensordot with axes computed from array data")
    if isinstance(axes, int | np.integer):
        n = int(axes)
        axes_a, axes_b = list(range(ta.ndim - n, ta.ndim)), list(range(n))
    else:
        try:
            axes_a, axes_b = axes
        except (TypeError, ValueError) as exc:
            _fail(tx, exc)
        axes_a = [axes_a] if isinstance(axes_a, int | np.integer) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, int | np.integer) else list(axes_b)
    if len(axes_a) != len(axes_b) or any(ta.shape[i] != tb.shape[j] for i, j in zip(axes_a, axes_b)):
        _fail(tx, ValueError("shape-mismatch for sum"))
    axes_a = [k % ta.ndim for k in axes_a] if ta.ndim else axes_a
    axes_b = [k % tb.ndim for k in axes_b] if tb.ndim else axes_b
    free_a = [k for k in range(ta.ndim) if k not in axes_a]
    free_b = [k for k in range(tb.ndim) if k not in axes_b]
    n_sum = int(np.prod([ta.shape[k] for k in axes_a]))
    at = tx.op("reshape", tx.op("transpose", tx.read(x), axes=(*free_a, *axes_a)),
               shape=(int(np.prod([ta.shape[k] for k in free_a])), n_sum))
    bt = tx.op("reshape", tx.op("transpose", tx.read(y), axes=(*axes_b, *free_b)),
               shape=(n_sum, int(np.prod([tb.shape[k] for k in free_b]))))
    out = tx.op("dot", at, bt)
    shape = tuple(ta.shape[k] for k in free_a) + tuple(tb.shape[k] for k in free_b)
    return tx.fresh(tx.op("reshape", out, shape=shape), "array")


@numpy(np.kron)
def _kron(tx: TraceContext, a: Any, b: Any) -> Any:
    """NumPy 2's kron: both operands at the same rank, interleaved broadcast views multiplied, reshaped."""
    x, y = tx.read(as_array(tx, a)), tx.read(as_array(tx, b))
    nd = max(x.tensor_type.ndim, y.tensor_type.ndim)
    if nd == 0:
        return tx.result(tx.op("multiply", x, y))
    sa = (1,) * (nd - x.tensor_type.ndim) + x.tensor_type.shape
    sb = (1,) * (nd - y.tensor_type.ndim) + y.tensor_type.shape
    xa = tx.op("reshape", x, shape=tuple(d for s in sa for d in (s, 1)))
    yb = tx.op("reshape", y, shape=tuple(d for s in sb for d in (1, s)))
    product = tx.op("multiply", xa, yb)
    return tx.fresh(tx.op("reshape", product, shape=tuple(p * q for p, q in zip(sa, sb))), "array")


@numpy(np.ptp)
def _ptp(tx: TraceContext, a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    if out is not None:
        tx.graph_break("np.ptp(out=...) is not supported by the tracer")
    x = tx.read(as_array(tx, a))
    axes = axes_arg(tx, axis, x.tensor_type.ndim, "ptp")
    hi = tx.op("max", x, axis=axes, keepdims=bool(keepdims))
    lo = tx.op("min", x, axis=axes, keepdims=bool(keepdims))
    return tx.result(tx.op("subtract", hi, lo))


@numpy(np.append)
def _append(tx: TraceContext, arr: Any, values: Any, axis: Any = None) -> Any:
    if axis is None:
        return _concatenate(tx, [_reshape_to(tx, arr, (-1,)), _reshape_to(tx, values, (-1,))], 0)
    return _concatenate(tx, [arr, values], axis)


# ---- nan_to_num, trapezoid, corrcoef, diagflat -----------------------------------------------------------------
@numpy(np.nan_to_num)
def _nan_to_num(tx: TraceContext, x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None,
                neginf: Any = None) -> Any:
    if contains_tarray([nan, posinf, neginf]) or copy is not True:
        tx.graph_break("np.nan_to_num with copy=False or replacement values computed from array data")
    a = as_array(tx, x)
    node = tx.read(a)
    dtype = node.tensor_type.dtype
    if dtype.kind == "c":
        tx.graph_break("np.nan_to_num of complex values is not supported by the tracer")
    if dtype.kind != "f":
        return tx.fresh(tx.op("copy", node), a.kind)
    info = np.finfo(dtype)
    for test, value in (("isnan", nan), ("isposinf", info.max if posinf is None else posinf),
                        ("isneginf", info.min if neginf is None else neginf)):
        if test == "isnan":
            hit = tx.op("isnan", node)
        else:
            sign = tx.op("greater" if test == "isposinf" else "less", node, tx.node(0))
            hit = tx.op("logical_and", tx.op("isinf", node), sign)
        node = tx.op("where", hit, tx.builder.const(np.asarray(value).astype(dtype)[()]), node)
    return tx.fresh(node, a.kind)


@numpy(np.trapezoid)
def _trapezoid(tx: TraceContext, y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    yv = tx.read(as_array(tx, y))
    t = yv.tensor_type
    (ax,) = axes_arg(tx, axis, t.ndim, "trapezoid")
    if x is None:
        d: Node = tx.node(dx)
    else:
        xv = tx.read(as_array(tx, x))
        xt = xv.tensor_type
        d = tx.op("subtract", _slice(tx, xv, xt.ndim - 1 if xt.ndim == 1 else ax, 1, None),
                  _slice(tx, xv, xt.ndim - 1 if xt.ndim == 1 else ax, None, -1))
        if xt.ndim == 1:
            shape = [1] * t.ndim
            shape[ax] = d.tensor_type.shape[0]
            d = tx.op("reshape", d, shape=tuple(shape))
    pairs = tx.op("add", _slice(tx, yv, ax, 1, None), _slice(tx, yv, ax, None, -1))
    area = tx.op("divide", tx.op("multiply", d, pairs), tx.node(2.0))
    return tx.result(tx.op("sum", area, axis=(ax,), keepdims=False))


@numpy(np.corrcoef)
def _corrcoef(tx: TraceContext, x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    """NumPy's: the covariance divided by the outer product of the standard deviations, clipped to [-1, 1]."""
    if y is not None or dtype is not None:
        tx.graph_break("np.corrcoef with y= or dtype= is not supported by the tracer")
    c = tx.read(_cov(tx, x, rowvar=rowvar))
    if c.tensor_type.ndim == 0:
        return tx.result(tx.op("divide", c, c))
    n = c.tensor_type.shape[0]
    diag = tx.op("getitem", c, tx.builder.const(np.arange(n)), tx.builder.const(np.arange(n)),
                 spec=(Operand(0), Operand(1)))
    std = tx.op("sqrt", diag)
    c = tx.op("divide", c, tx.op("reshape", std, shape=(n, 1)))
    c = tx.op("divide", c, tx.op("reshape", std, shape=(1, n)))
    return tx.fresh(tx.op("clip", c, tx.node(-1), tx.node(1)), "array")


@numpy(np.diagflat)
def _diagflat(tx: TraceContext, v: Any, k: int = 0) -> Any:
    flat = tx.read(_reshape_to(tx, v, (-1,)))
    n = flat.tensor_type.shape[0]
    size = n + abs(int(k))
    rows = np.arange(n) + max(0, -int(k))
    cols = np.arange(n) + max(0, int(k))
    base = tx.op("zeros", shape=(size, size), dtype=flat.tensor_type.dtype)
    out = tx.op("setitem", base, flat, tx.builder.const(rows), tx.builder.const(cols), spec=(Operand(0), Operand(1)))
    return tx.fresh(out, "array")


# ---- NumPy routines run inside the graph (jitgraph/ir/ops/numpy_calls.py) --------------------------------------
def _plain_kwargs(tx: TraceContext, what: str, **kwargs: Any) -> dict[str, Any]:
    if contains_tarray(list(kwargs.values())) or not is_plain(list(kwargs.values())):
        tx.graph_break(f"{what} with {', '.join(kwargs)} computed from array data")
    return {k: v.item() if isinstance(v, np.generic) else v for k, v in kwargs.items()}


def _sliding(name: str) -> Any:
    def lowering(tx: TraceContext, a: Any, v: Any, mode: str = "full" if name == "convolve" else "valid") -> Any:
        attrs = _plain_kwargs(tx, f"np.{name}", mode=mode)
        return tx.fresh(tx.op(name, tx.read(as_array(tx, a)), tx.read(as_array(tx, v)), **attrs), "array")

    return lowering


TABLE.functions[np.convolve] = _sliding("convolve")
TABLE.functions[np.correlate] = _sliding("correlate")


@numpy(np.interp)
def _interp(tx: TraceContext, x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
            period: Any = None) -> Any:
    attrs = _plain_kwargs(tx, "np.interp", left=left, right=right, period=period)
    xv = as_array(tx, x)
    node = tx.op("interp", tx.read(xv), tx.read(as_array(tx, xp)), tx.read(as_array(tx, fp)), **attrs)
    return tx.result(node) if xv.kind != "array" else tx.fresh(node, "array")


@numpy(np.digitize)
def _digitize(tx: TraceContext, x: Any, bins: Any, right: bool = False) -> Any:
    attrs = _plain_kwargs(tx, "np.digitize", right=right)
    xv = as_array(tx, x)
    node = tx.op("digitize", tx.read(xv), tx.read(as_array(tx, bins)), **attrs)
    return tx.result(node) if xv.kind != "array" else tx.fresh(node, "array")


@numpy(np.cross)
def _cross(tx: TraceContext, a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
           axis: Any = None) -> Any:
    if (axisa, axisb, axisc, axis) != (-1, -1, -1, None):
        tx.graph_break("np.cross along axes other than the last is not supported by the tracer")
    return tx.fresh(tx.op("cross", tx.read(as_array(tx, a)), tx.read(as_array(tx, b))), "array")


def _partitioner(name: str) -> Any:
    def lowering(tx: TraceContext, a: Any, kth: Any, axis: Any = -1, kind: str = "introselect",
                 order: Any = None) -> Any:
        if order is not None or kind != "introselect":
            tx.graph_break(f"np.{name} with order= or another kind")
        kths = _plain_ints(tx, kth, f"np.{name}: kth")
        attrs = _plain_kwargs(tx, f"np.{name}", axis=axis)
        return tx.fresh(tx.op(name, tx.read(as_array(tx, a)), kth=kths, **attrs), "array")

    return lowering


TABLE.functions[np.partition] = _partitioner("partition")
TABLE.functions[np.argpartition] = _partitioner("argpartition")


# ---- rot90, stacking and splitting by direction, polyval, vander, select ---------------------------------------
@numpy(np.rot90)
def _rot90(tx: TraceContext, m: Any, k: Any = 1, axes: Any = (0, 1)) -> Any:
    """NumPy's: a view built from flips and a transpose (k mod 4 quarter turns in the plane of ``axes``)."""
    (turns,) = _plain_ints(tx, k, "np.rot90: k")
    ax = _plain_ints(tx, axes, "np.rot90: axes")
    x = as_array(tx, m)
    nd = tx.type_of(x).ndim
    if len(ax) != 2:
        _fail(tx, ValueError("len(axes) must be 2."))
    if ax[0] == ax[1] or abs(ax[0] - ax[1]) == nd:
        _fail(tx, ValueError("Axes must be different."))
    if any(not -nd <= a < nd for a in ax):
        _fail(tx, ValueError(f"Axes={ax} out of range for array of ndim={nd}."))
    turns %= 4
    if turns == 0:
        return tx.view(x, "getitem", spec=(slice(None),))
    if turns == 2:
        return _flip(tx, _flip(tx, x, ax[0]), ax[1])
    order = list(range(nd))
    order[ax[0]], order[ax[1]] = order[ax[1]], order[ax[0]]
    if turns == 1:
        return _transpose_to(tx, _flip(tx, x, ax[1]), tuple(order))
    return _flip(tx, _transpose_to(tx, x, tuple(order)), ax[1])


@numpy(np.dstack)
def _dstack(tx: TraceContext, tup: Any) -> Any:
    if isinstance(tup, TArray):
        tx.graph_break("np.dstack of one array (iterating its rows)")
    return _concatenate(tx, [_atleast3(tx, a) for a in tup], 2)


def _atleast3(tx: TraceContext, a: Any) -> Any:
    x = as_array(tx, a)
    shape = tx.type_of(x).shape
    if len(shape) >= 3:
        return x
    new = (1, 1, 1) if not shape else (1, shape[0], 1) if len(shape) == 1 else shape + (1,)
    return _reshape_to(tx, x, new)


def _directional_split(name: str, axis_of: Any) -> Any:
    def lowering(tx: TraceContext, ary: Any, indices_or_sections: Any) -> Any:
        x = as_array(tx, ary)
        nd = tx.type_of(x).ndim
        axis = axis_of(nd)
        if axis is None:
            _fail(tx, ValueError(f"{name} only works on arrays of {3 if name == 'dsplit' else 2} or more dimensions"
                                 if name != "hsplit" else "hsplit only works on arrays of 1 or more dimensions"))
        return _split(tx, x, indices_or_sections, axis)

    return lowering


TABLE.functions[np.hsplit] = _directional_split("hsplit", lambda nd: None if nd == 0 else (0 if nd == 1 else 1))
TABLE.functions[np.vsplit] = _directional_split("vsplit", lambda nd: 0 if nd >= 2 else None)
TABLE.functions[np.dsplit] = _directional_split("dsplit", lambda nd: 2 if nd >= 3 else None)


@numpy(np.polyval)
def _polyval(tx: TraceContext, p: Any, x: Any) -> Any:
    """NumPy's Horner loop, ``y = y * x + p[i]`` from ``zeros_like(x)``, unrolled over the coefficients."""
    coeffs = as_array(tx, p)
    ct = tx.type_of(coeffs)
    if ct.ndim != 1:
        tx.graph_break("np.polyval with coefficients that are not a 1-D array")
    xv = as_array(tx, x)
    xn = tx.strong(tx.read(xv))  # NumPy converts a Python number to an array first
    y = tx.op("zeros", shape=xn.tensor_type.shape, dtype=xn.tensor_type.dtype)
    cn = tx.read(coeffs)
    for i in range(ct.shape[0]):
        y = tx.op("add", tx.op("multiply", y, xn), tx.op("getitem", cn, spec=(i,)))
    scalar = xv.kind != "array" or (not isinstance(x, TArray) and np.ndim(x) == 0)
    return tx.result(y) if scalar else tx.fresh(y, "array")


@numpy(np.vander)
def _vander(tx: TraceContext, x: Any, N: Any = None, increasing: bool = False) -> Any:
    """NumPy's: ones, then the running products of ``x`` (``multiply.accumulate``, a cumprod), columns reversed
    unless ``increasing``."""
    xv = tx.read(as_array(tx, x))
    if xv.tensor_type.ndim != 1:
        _fail(tx, ValueError("x must be a one-dimensional array or sequence."))
    n = xv.tensor_type.shape[0]
    (cols,) = (n,) if N is None else _plain_ints(tx, N, "np.vander: N")
    dtype = np.promote_types(xv.tensor_type.dtype, int)
    if cols <= 0:
        return tx.fresh(tx.op("zeros", shape=(n, max(cols, 0)), dtype=dtype), "array")
    ones = tx.op("ones", shape=(n, 1), dtype=dtype)
    parts = [ones]
    if cols > 1:
        column = tx.op("astype", tx.op("reshape", xv, shape=(n, 1)), dtype=dtype)
        repeated = tx.op("broadcast_to", column, shape=(n, cols - 1))
        parts.append(tx.op("cumprod", repeated, axis=1))
    v = parts[0] if len(parts) == 1 else tx.op("concatenate", *parts, axis=1)
    if not increasing:
        v = tx.op("getitem", v, spec=(slice(None), slice(None, None, -1)))
    return tx.fresh(tx.op("copy", v), "array")


@numpy(np.select)
def _select(tx: TraceContext, condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """NumPy's: a full array of the default, then each choice copied where its condition holds, last to first."""
    if isinstance(condlist, TArray) or isinstance(choicelist, TArray) or len(condlist) != len(choicelist):
        tx.graph_break("np.select: condlist and choicelist must be lists of the same length")
    if not condlist:
        _fail(tx, ValueError("select with an empty condition list is not possible"))
    # NumPy keeps Python numbers weak (NEP 50) when it picks the result type
    choices = [tx.node(c) if type(c) in (int, float, complex) else tx.strong(tx.read(as_array(tx, c)))
               for c in choicelist]
    fallback = tx.node(default) if type(default) in (int, float, complex) else \
        tx.strong(tx.read(as_array(tx, default)))
    conds = [tx.read(as_array(tx, c)) for c in condlist]
    if any(c.tensor_type.dtype != np.bool_ for c in conds):
        _fail(tx, TypeError("invalid entry in condlist: should be boolean ndarray"))
    try:
        dtype = np.result_type(*(n.tensor_type.proto() if n.tensor_type.weak else n.tensor_type.dtype
                                 for n in choices + [fallback]))
    except TypeError as exc:
        _fail(tx, TypeError(f"Choicelist and default value do not have a common dtype: {exc}"))
    result = tx.op("astype", fallback, dtype=dtype)
    for cond, choice in zip(reversed(conds), reversed(choices)):
        result = tx.op("where", cond, tx.op("astype", choice, dtype=dtype), result)
    shape = np.broadcast_shapes(*(n.tensor_type.shape for n in conds + choices + [fallback]))
    return tx.fresh(tx.op("copy", tx.op("broadcast_to", result, shape=shape)), "array")


# ---- constant creators -----------------------------------------------------------------------------------------
def _constant_creator(fn: Any) -> Any:
    def lowering(tx: TraceContext, *args: Any, **kwargs: Any) -> Any:
        if contains_tarray(list(args) + list(kwargs.values())):
            tx.graph_break(f"np.{fn.__name__} with arguments computed from array data")
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - NumPy's own error, shown by the eager call
            tx.graph_break(f"np.{fn.__name__}: {exc}", exc)
        if isinstance(value, tuple):
            return tuple(tx.fresh(tx.builder.const(v), "array") for v in value)
        return tx.fresh(tx.builder.const(value), "array")

    return lowering


for _fn in (np.tri, np.triu_indices, np.tril_indices, np.logspace, np.geomspace, np.indices):
    TABLE.functions[_fn] = _constant_creator(_fn)

TABLE.note("shift or axis computed from array data", np.roll)
TABLE.note("axes computed from array data", np.tensordot)
TABLE.note("out=", np.ptp)
TABLE.note("copy=False; complex input; replacement values from array data", np.nan_to_num)
TABLE.note("y=, dtype=", np.corrcoef)
TABLE.note("k or axes computed from array data", np.rot90)
TABLE.note("one array (iterating its rows) instead of a sequence", np.dstack)
TABLE.note("sections computed from array data", np.hsplit, np.vsplit, np.dsplit)
TABLE.note("coefficients that are not a 1-D array (a poly1d)", np.polyval)
TABLE.note("condlist or choicelist as one array", np.select)
TABLE.note("runs through NumPy (never inside a kernel or loop body)", np.convolve, np.correlate, np.interp,
           np.digitize)
TABLE.note("axes other than the last; 2-vectors; runs through NumPy", np.cross)
TABLE.note("kind=, order=; kth from array data; runs through NumPy", np.partition, np.argpartition)
TABLE.note("arguments computed from array data (the result is NumPy's, a constant)", np.tri, np.triu_indices,
           np.tril_indices, np.logspace, np.geomspace, np.indices)
