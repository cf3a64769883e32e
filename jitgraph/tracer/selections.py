"""Data-dependent sizes that only feed a fixed-size result: ``y[y > 0].sum()``, ``len(np.unique(y))`` (issue 19).

A boolean-mask read and ``np.unique`` have a result whose *size* depends on the data, so by default the trace cuts
there (resume.py: the instruction runs eagerly between two graphs). Very often, though, that result is only
reduced -- summed, averaged, counted, measured with ``len`` -- and the reduction has a fixed size. Such a site
becomes a *lazy value* instead of a cut:

* :class:`MaskedSelection` stands for ``x[mask]`` (a mask over ``x``'s leading axes) as the pair ``(values,
  mask)`` of full-size graph values. Elementwise operators and ufuncs with scalars, with arrays that broadcast
  over the trailing axes, or with another selection by the *same* mask apply to ``values``; ``sum``/``any``/
  ``all``/``count_nonzero`` reduce ``where(mask, values, neutral)`` (NumPy's own reductions, so NumPy's dtypes);
  ``mean`` is that sum over the count, ``len``/``.size``/``.shape`` come from ``count_nonzero(mask)``.
* :class:`UniqueValues` stands for ``np.unique(y)`` used only for its length: the number of distinct values,
  sorted neighbours that differ (NaNs count once, as ``equal_nan=True``; ``-0.0 == 0.0``).

Anything else done with a lazy value -- indexing it, returning or storing it, passing it to a function, iterating,
``max``/``min`` (NumPy raises on an empty selection), an in-place update (the selection is a copy others may hold),
any use in a loop or branch region that makes a new selection -- is not guessed: :meth:`Lazy.misuse` raises
:class:`~jitgraph.tracer.resume.Retry` for its site, and the trace starts again with that site cut as before
(resume.py counts these sites and keeps the forced ones). A graph break or a data-dependent cut in a pass that
holds lazy sites retries the same way (resume.retry_if_lazy), so every outcome other than one graph is exactly
today's. Tracing is symbolic, so a retried pass runs nothing twice.

The compiled results equal NumPy's, except that NumPy's warnings are not raised: the mean of an empty selection is
NaN (NumPy also warns "Mean of empty slice"), as everywhere compiled arithmetic does not warn; a float sum may
differ in the last bits (another summation order) and the sum of a selection of only ``-0.0`` is ``0.0``.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from jitgraph.device_arrays import is_device_array
from jitgraph.ir.graph import Node, may_raise
from jitgraph.tracer import resume, selection_counts
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.values import TArray

Call = Callable[[TraceContext, Any, list[Any], dict[str, Any]], Any]
INT64 = np.dtype(np.int64)


class Lazy:
    """A data-dependent-size value the trace has not materialised. Every Python protocol that could read it as an
    array or a container retries the trace with its site cut (tracer code reaching it through ``bool``, ``len``,
    ``iter``, ``np.asarray`` ...); the uses it supports are dispatched explicitly (:func:`attr`, :func:`call`,
    :func:`binary`)."""

    sites: frozenset[int]

    def misuse(self) -> NoReturn:
        raise resume.Retry(("selection", min(self.sites)))


def _refuse(self: Lazy, *args: Any, **kwargs: Any) -> NoReturn:
    self.misuse()


# ``if sel:``, ``len``, ``iter``, ``in``, indexing, ``int()``/``float()``/``operator.index``, ``str``/``format``
# and ``np.asarray`` of a lazy value: the trace starts again with its site cut
for _protocol in ("__bool__", "__len__", "__iter__", "__contains__", "__getitem__", "__setitem__", "__index__",
                  "__int__", "__float__", "__complex__", "__str__", "__format__", "__array__"):
    setattr(Lazy, _protocol, _refuse)


@dataclass(eq=False)
class MaskedSelection(Lazy):
    """``x[mask]``: ``values`` has ``x``'s shape (elementwise ops applied), ``mask`` is boolean over its leading
    axes; the selection is ``(count_nonzero(mask),) + values.shape[mask.ndim:]``."""

    values: Node
    mask: Node
    sites: frozenset[int]

    @property
    def rest(self) -> tuple[int, ...]:
        return self.values.tensor_type.shape[self.mask.tensor_type.ndim:]


@dataclass(eq=False)
class UniqueValues(Lazy):
    """``np.unique(source)``, known only by its length."""

    source: Node
    equal_nan: bool
    sites: frozenset[int]


@dataclass(eq=False)
class LazyMethod(Lazy):
    """``sel.sum`` before it is called."""

    lazy: MaskedSelection
    name: str

    @property
    def sites(self) -> frozenset[int]:  # type: ignore[override]
        return self.lazy.sites


def is_lazy(value: Any) -> bool:
    return isinstance(value, Lazy)


# ---- creation -----------------------------------------------------------------------------------------------------
def _on_host(tx: TraceContext) -> bool:
    """No device array among the graph's inputs: the cuda backend runs none of the ops a selection needs (sort,
    to_python), so a device trace keeps the cut, which it refuses with the user's line."""
    return not any(is_device_array(tx.caller_array(b)) for b in tx.buffers if b.input_index is not None)


def mask_read(tx: TraceContext, array: TArray, index: Any) -> Any:
    """``x[mask]``: a :class:`MaskedSelection` where one may stand, else resume.mask_read (a cut, or NOT_CUT)."""
    mask = index[0] if isinstance(index, tuple) and len(index) == 1 else index
    if isinstance(mask, TArray) and mask.kind == "array" and array.kind == "array":
        shape, mask_type = tx.type_of(array).shape, tx.type_of(mask)
        k = mask_type.ndim
        if mask_type.dtype == np.bool_ and k >= 1 and mask_type.shape == shape[:k] and _on_host(tx):
            site = resume.lazy_site(tx, [array, mask])
            if site is not None:
                return MaskedSelection(tx.read(array), tx.read(mask), frozenset({site}))
    return resume.mask_read(tx, array, index)


def data_call(tx: TraceContext, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``np.unique(y)`` (or with ``equal_nan=``): a :class:`UniqueValues`; other calls go to resume.data_call."""
    if fn is np.unique and len(args) == 1 and set(kwargs) <= {"equal_nan"} and isinstance(args[0], TArray):
        y, equal_nan = args[0], kwargs.get("equal_nan", True)
        if y.kind in ("array", "scalar") and tx.type_of(y).dtype.kind in "biuf" and type(equal_nan) is bool and \
                _on_host(tx):
            site = resume.lazy_site(tx, [y])
            if site is not None:
                return UniqueValues(tx.read(y), equal_nan, frozenset({site}))
    return resume.data_call(tx, fn, args, kwargs)


# ---- counts -------------------------------------------------------------------------------------------------------
def _count(tx: TraceContext, lazy: Lazy) -> Node:
    """The length of the lazy value, an int64 graph scalar."""
    if isinstance(lazy, MaskedSelection):
        mask = lazy.mask
        return _int64(tx, tx.op("sum", mask, axis=tuple(range(mask.tensor_type.ndim)), keepdims=False))
    if isinstance(lazy, UniqueValues):
        return _unique_count(tx, lazy)
    lazy.misuse()


def _unique_count(tx: TraceContext, u: UniqueValues) -> Node:
    """Distinct values: 1 + the sorted neighbours that differ (two NaNs do not, with ``equal_nan``)."""
    t = u.source.tensor_type
    if t.size == 0:
        return tx.node(np.int64(0))
    ordered = tx.op("sort", u.source, axis=None)
    hi = tx.op("getitem", ordered, spec=(slice(1, None),))
    lo = tx.op("getitem", ordered, spec=(slice(None, -1),))
    differ = tx.op("not_equal", hi, lo)
    if t.dtype.kind == "f" and u.equal_nan:
        both_nan = tx.op("logical_and", tx.op("isnan", hi), tx.op("isnan", lo))
        differ = tx.op("logical_and", differ, tx.op("logical_not", both_nan))
    changes = _int64(tx, tx.op("sum", differ, axis=(0,), keepdims=False))
    return tx.op("add", changes, tx.node(np.int64(1)))


def _int64(tx: TraceContext, node: Node) -> Node:
    """A count as int64 (a sum of booleans is one already: no extra op, which costs a call at small sizes)."""
    return node if node.tensor_type.dtype == INT64 else tx.op("astype", node, dtype=INT64)


def _py_int(tx: TraceContext, node: Node, lazy: Lazy, bound: int) -> TArray:
    """A graph int64 scalar (at most ``bound``) as the Python int NumPy's ``len``/``.size``/``.shape`` give; where
    it may go is checked when the trace is complete (selection_counts.py). Not made in a region, whose body is a
    graph of its own."""
    if tx.in_region:
        lazy.misuse()
    value = tx.op("to_python", node, kind="int")
    selection_counts.note(tx, value, bound, min(lazy.sites))
    return tx.fresh(value, "py")


def _bounds(lazy: Lazy) -> tuple[int, int]:
    """Static bounds on the length and the size of a lazy value (a selection has at most all the elements)."""
    if isinstance(lazy, MaskedSelection):
        return lazy.mask.tensor_type.size, lazy.values.tensor_type.size
    if isinstance(lazy, UniqueValues):
        n = max(lazy.source.tensor_type.size, 1)
        return n, n
    lazy.misuse()


def _size(tx: TraceContext, lazy: Lazy) -> Node:
    rest = int(np.prod(lazy.rest)) if isinstance(lazy, MaskedSelection) else 1
    count = _count(tx, lazy)
    return count if rest == 1 else tx.op("multiply", count, tx.node(np.int64(rest)))


def _dtype(lazy: Lazy) -> np.dtype:
    return lazy.values.tensor_type.dtype if isinstance(lazy, MaskedSelection) else lazy.source.tensor_type.dtype


def _rest(lazy: Lazy) -> tuple[int, ...]:
    return lazy.rest if isinstance(lazy, MaskedSelection) else ()


# ---- uses ---------------------------------------------------------------------------------------------------------
METHODS = ("sum", "mean", "any", "all")


def attr(tx: TraceContext, lazy: Lazy, name: str) -> Any:
    """``sel.shape``, ``.size``, ``.ndim``, ``.dtype``, or a reduction method to call; anything else retries."""
    if isinstance(lazy, LazyMethod):
        lazy.misuse()
    if name == "shape":
        return (_py_int(tx, _count(tx, lazy), lazy, _bounds(lazy)[0]), *_rest(lazy))
    if name == "size":
        return _py_int(tx, _size(tx, lazy), lazy, _bounds(lazy)[1])
    if name == "ndim":
        return 1 + len(_rest(lazy))
    if name == "dtype":
        return _dtype(lazy)
    if name in METHODS and isinstance(lazy, MaskedSelection):
        return LazyMethod(lazy, name)
    lazy.misuse()


def involved(fn: Any, args: list[Any], kwargs: dict[str, Any]) -> bool:
    """Whether a call reads a lazy value: then :func:`call` decides (a quick check on every traced call)."""
    return isinstance(fn, Lazy) or any(isinstance(a, Lazy) for a in args) or \
        any(isinstance(v, Lazy) for v in kwargs.values())


def call(tx: TraceContext, fn: Any, args: list[Any], kwargs: dict[str, Any], call_fn: Call) -> Any:
    """A call with a lazy value: a reduction method, ``len``, one of :data:`FUNCTIONS`, a ufunc (elementwise);
    any other call retries with the lazy value's site cut. ``call_fn`` is calls.call (for NumPy's own lowering)."""
    if isinstance(fn, LazyMethod):
        return _reduce(tx, FUNCTIONS[fn.name], fn.lazy, args, kwargs, call_fn)
    lazies = [v for v in (fn, *args, *kwargs.values()) if isinstance(v, Lazy)]
    first = args[0] if args else None
    if fn is builtins.len and len(args) == 1 and not kwargs and isinstance(first, Lazy):
        return _py_int(tx, _count(tx, first), first, _bounds(first)[0])
    if isinstance(first, MaskedSelection):
        reduction = _table_get(fn)
        if reduction is not None:
            return _reduce(tx, reduction, first, args[1:], kwargs, call_fn)
        ufunc = np.absolute if fn is builtins.abs else fn
        if _elementwise_ufunc(ufunc) and len(args) == ufunc.nin and not kwargs:
            return elementwise(tx, lambda ops: call_fn(tx, ufunc, ops, {}), args)
    if _elementwise_ufunc(fn) and isinstance(first, int | float | complex | np.generic | TArray) and \
            len(args) == fn.nin == 2 and isinstance(args[1], MaskedSelection) and not kwargs:
        return elementwise(tx, lambda ops: call_fn(tx, fn, ops, {}), args)  # np.maximum(0, sel)
    lazies[0].misuse()


def _elementwise_ufunc(fn: Any) -> bool:
    """A ufunc applied element by element with one result (not ``np.matmul`` and other generalised ufuncs)."""
    return isinstance(fn, np.ufunc) and fn.nout == 1 and fn.signature is None


def binary(tx: TraceContext, symbol: str, a: Any, b: Any, inplace: bool, binary_fn: Callable[..., Any]) -> Any:
    """``sel - 1``, ``(sel - m) ** 2``, ``loss[mask] * w[mask]``, ``sel > 0``: a new selection by the same mask. An
    in-place update is refused (the selection is a copy that another name may hold), as is ``@``."""
    lazy = a if isinstance(a, Lazy) else b
    if inplace or symbol == "@":
        lazy.misuse()
    return elementwise(tx, lambda ops: binary_fn(tx, symbol, ops[0], ops[1]), [a, b])


def unary(tx: TraceContext, symbol: str, a: Lazy, unary_fn: Callable[..., Any]) -> Any:
    return elementwise(tx, lambda ops: unary_fn(tx, symbol, ops[0]), [a])


def elementwise(tx: TraceContext, apply: Callable[[list[Any]], Any], operands: list[Any]) -> MaskedSelection:
    """Apply an elementwise op to the full-size values of the selections among ``operands``: the same elements are
    selected afterwards. Refused (retry) in a region (a new selection must not outlive the region's body), for an
    operand that would change the selection's shape, and when the op can raise on values (the unselected elements
    would be checked too)."""
    sel = next((v for v in operands if isinstance(v, Lazy)), None)
    if not isinstance(sel, MaskedSelection) or tx.in_region:
        (sel or operands[0]).misuse()
    converted, sites = [], set()
    for v in operands:
        if isinstance(v, Lazy):
            if not isinstance(v, MaskedSelection) or v.mask is not sel.mask or \
                    v.values.tensor_type.shape != sel.values.tensor_type.shape:
                sel.misuse()
            converted.append(tx.fresh(v.values, "array"))
            sites |= v.sites
        elif isinstance(v, bool | int | float | complex | np.generic) or \
                (isinstance(v, TArray) and _fits(tx.type_of(v).shape, sel.rest)):
            converted.append(v)
        else:
            sel.misuse()
    start = len(tx.builder.nodes)
    result = apply(converted)
    if not isinstance(result, TArray) or tx.type_of(result).shape != sel.values.tensor_type.shape or \
            any(may_raise(n) for n in tx.builder.nodes[start:]):
        sel.misuse()
    return MaskedSelection(tx.read(result), sel.mask, frozenset(sites))


def _fits(shape: tuple[int, ...], rest: tuple[int, ...]) -> bool:
    """An array operand broadcasts over the selected axis without changing the selection's trailing shape."""
    if len(shape) > len(rest):
        return False
    try:
        return np.broadcast_shapes(shape, rest) == rest
    except ValueError:
        return False


# ---- reductions ---------------------------------------------------------------------------------------------------
def _sum(axis: Any = None, dtype: Any = None) -> None: ...


def _mean(axis: Any = None) -> None: ...


def _count_nonzero(axis: Any = None) -> None: ...


def _any(axis: Any = None) -> None: ...


# name: (signature accepted, NumPy function lowered on the filled values, fill value)
FUNCTIONS: dict[str, tuple[Any, Any, int]] = {
    "sum": (_sum, np.sum, 0), "mean": (_mean, np.sum, 0), "any": (_any, np.any, 0), "all": (_any, np.all, 1),
    "count_nonzero": (_count_nonzero, np.count_nonzero, 0),
}
_BY_FUNCTION = {np.sum: "sum", np.mean: "mean", np.any: "any", np.all: "all", np.count_nonzero: "count_nonzero"}


def _table_get(fn: Any) -> tuple[Any, Any, int] | None:
    try:
        name = _BY_FUNCTION.get(fn)
    except TypeError:  # an unhashable callable
        return None
    return None if name is None else FUNCTIONS[name]


def _reduce(tx: TraceContext, entry: tuple[Any, Any, int], sel: MaskedSelection, args: tuple | list,
            kwargs: dict[str, Any], call_fn: Call) -> Any:
    """A reduction of the selection as NumPy's own reduction of ``where(mask, values, fill)``; ``mean`` divides the
    sum by the number of elements selected (NaN when none, where NumPy also warns)."""
    signature, numpy_fn, fill = entry
    try:
        bound = inspect.signature(signature).bind(*args, **kwargs)
    except TypeError:
        sel.misuse()
    axis = bound.arguments.get("axis")
    dtype = bound.arguments.get("dtype")
    mask = sel.mask
    k, ndim = mask.tensor_type.ndim, sel.values.tensor_type.ndim
    if axis is None:
        axes = tuple(range(ndim))
    elif type(axis) is int and axis % (1 + ndim - k) == 0 and -(1 + ndim - k) <= axis < 1 + ndim - k:
        axes = tuple(range(k))
    else:
        sel.misuse()
    t = sel.values.tensor_type
    if k < ndim:
        mask = tx.op("reshape", mask, shape=mask.tensor_type.shape + (1,) * (ndim - k))
    filled = tx.fresh(tx.op("where", mask, sel.values, tx.node(np.asarray(fill, t.dtype)[()])), "array")
    numpy_kwargs: dict[str, Any] = {} if axis is None else {"axis": axes}
    if signature is not _mean:
        if dtype is not None:
            numpy_kwargs["dtype"] = dtype
        return call_fn(tx, numpy_fn, [filled], numpy_kwargs)
    if t.dtype.kind not in "biuf":
        sel.misuse()
    acc = np.dtype(np.float64) if t.dtype.kind in "biu" else np.dtype(np.float32) if t.dtype.itemsize < 4 \
        else t.dtype
    if acc != t.dtype:  # np.sum(dtype=acc) casts each element first; a cast keeps the sum compilable in regions
        filled = tx.fresh(tx.op("astype", tx.read(filled), dtype=acc), "array")
    total = tx.read(call_fn(tx, np.sum, [filled], numpy_kwargs))
    count = _count(tx, sel)
    if axis is None and sel.rest:
        count = tx.op("multiply", count, tx.node(np.int64(int(np.prod(sel.rest)))))
    mean = tx.op("divide", total, tx.op("astype", count, dtype=acc))
    if mean.tensor_type.dtype != t.dtype and t.dtype.kind == "f":
        mean = tx.op("astype", mean, dtype=t.dtype)  # float16: accumulated in float32, as NumPy does
    return tx.result(mean)


__all__ = [
    "Lazy",
    "LazyMethod",
    "MaskedSelection",
    "UniqueValues",
    "attr",
    "binary",
    "call",
    "data_call",
    "elementwise",
    "involved",
    "is_lazy",
    "mask_read",
    "unary",
]
