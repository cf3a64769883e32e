"""Python builtins and container methods at trace time, in one table.

Builtins on trace-time values are simply called (``len``, ``range``, ``zip`` over our own containers run no user
code). Builtins that would need array *data* (``float(arr)``, ``int(arr)``, ``max`` over arrays) or have side effects
(``print``) are graph breaks with a reason. Two exceptions for loop regions: ``range`` with a bound computed from
array data is a symbolic range (a ``for`` over it becomes a loop region), and ``int``/``float`` of a traced scalar
inside a region body is a symbolic Python number. ``getattr`` lives with attribute loads in ``calls.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.tracer import regions
from jitgraph.tracer.arrays import binary
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.iteration import iterate
from jitgraph.tracer.scalar_builtins import MATH, conversion, select_extreme, traced_pow, traced_round
from jitgraph.tracer.symarrays import SymArray
from jitgraph.tracer.values import TArray, contains_tarray, is_plain

BUILTINS: dict[Any, Callable[..., Any]] = {}


def _register(*fns: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(lowering: Callable[..., Any]) -> Callable[..., Any]:
        for fn in fns:
            BUILTINS[fn] = lowering
        return lowering

    return deco


def _plain_call(tx: TraceContext, fn: Any, *args: Any, **kwargs: Any) -> Any:
    if not all(is_plain(a) for a in args) or not all(is_plain(v) for v in kwargs.values()):
        tx.graph_break(f"{fn.__name__}() on array data needs the data at trace time")
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001
        tx.graph_break(f"Python raises {type(exc).__name__}: {exc}", exc)


@_register(len)
def _len(tx: TraceContext, value: Any) -> int:
    if isinstance(value, TArray):
        t = tx.type_of(value)
        if t.ndim == 0 or value.kind != "array":
            err = TypeError("len() of unsized object")
            tx.graph_break(str(err), err)
        return tx.size_value(t.shape[0])
    try:
        return len(value)
    except TypeError as exc:
        tx.graph_break(str(exc), exc)


@_register(range)
def _range(tx: TraceContext, *args: Any) -> range | regions.SymRange:
    if any(isinstance(a, TArray) for a in args):
        return regions.symbolic_range(tx, *args)  # bounds from array data: ``for`` over it is a loop region
    return _plain_call(tx, range, *args)


@_register(zip)
def _zip(tx: TraceContext, *iterables: Any, strict: bool = False) -> Any:
    return zip(*(list(iterate(tx, i)) for i in iterables), strict=strict)


@_register(enumerate)
def _enumerate(tx: TraceContext, iterable: Any, start: int = 0) -> Any:
    return enumerate(list(iterate(tx, iterable)), start)


@_register(reversed)
def _reversed(tx: TraceContext, iterable: Any) -> Any:
    return reversed(list(iterate(tx, iterable)))


@_register(list)
def _list(tx: TraceContext, iterable: Any = ()) -> list:
    return list(iterate(tx, iterable))


@_register(tuple)
def _tuple(tx: TraceContext, iterable: Any = ()) -> tuple:
    return tuple(iterate(tx, iterable))


@_register(dict)
def _dict(tx: TraceContext, *args: Any, **kwargs: Any) -> dict:
    if args:
        source = args[0]
        result = dict(source) if isinstance(source, dict) else dict(iterate(tx, source))
    else:
        result = {}
    result.update(kwargs)
    return result


@_register(sorted)
def _sorted(tx: TraceContext, iterable: Any, **kwargs: Any) -> list:
    items = list(iterate(tx, iterable))
    reverse = bool(kwargs.get("reverse", False))
    if kwargs.get("key") is not None:
        tx.graph_break("sorted() with a key function")
    if is_plain(items):
        return sorted(items, reverse=reverse)
    heads = [item[0] if isinstance(item, tuple) and item else None for item in items]
    if all(h is not None and is_plain(h) for h in heads) and len(set(heads)) == len(heads):
        return sorted(items, key=lambda item: item[0], reverse=reverse)  # d.items(): keys decide, never arrays
    tx.graph_break("sorted() would compare array data")


@_register(isinstance)
def _isinstance(tx: TraceContext, value: Any, classes: Any) -> bool:
    return isinstance(_stand_in(tx, value), classes)


@_register(type)
def _type(tx: TraceContext, value: Any, *rest: Any) -> Any:
    if rest:
        tx.graph_break("type() with three arguments creates a class")
    return type(_stand_in(tx, value))


def _stand_in(tx: TraceContext, value: Any) -> Any:
    """An object of the same Python type as a tracked value, for isinstance/type checks."""
    if isinstance(value, TArray):
        t = tx.type_of(value)
        if value.kind == "array":
            return np.empty((0,), t.dtype)
        if value.kind == "scalar":
            return t.dtype.type(0)
        return float(0) if t.dtype.kind == "f" else 0
    if isinstance(value, SymArray):
        return value.stand_in()
    return value


@_register(abs)
def _abs(tx: TraceContext, value: Any) -> Any:
    if isinstance(value, TArray):
        return tx.result(tx.op("absolute", tx.read(value)))
    return _plain_call(tx, abs, value)


def _make_minmax(builtin: Any) -> Callable[..., Any]:
    def lowering(tx: TraceContext, *args: Any, **kwargs: Any) -> Any:
        items = list(iterate(tx, args[0])) if len(args) == 1 else list(args)
        if contains_tarray(items):
            if kwargs.get("key") is not None:
                tx.graph_break(f"builtin {builtin.__name__}() with a key function over traced values")
            if not items:
                return _plain_call(tx, builtin, items, **kwargs)
            return select_extreme(tx, builtin, items)  # a chain of selects: Python's own order of comparisons
        return _plain_call(tx, builtin, items, **kwargs)

    return lowering


BUILTINS[min] = _make_minmax(min)
BUILTINS[max] = _make_minmax(max)


@_register(sum)
def _sum(tx: TraceContext, iterable: Any, start: Any = 0) -> Any:
    total = start
    for item in iterate(tx, iterable):
        total = binary(tx, "+", total, item)
    return total


def _number(builtin: Any) -> Callable[..., Any]:
    def lowering(tx: TraceContext, value: Any = 0, *rest: Any) -> Any:
        if isinstance(value, TArray):
            if builtin in (int, float) and not rest and tx.type_of(value).size == 1:
                return conversion(tx, builtin, value)  # a Python number of the graph
            tx.graph_break(f"{builtin.__name__}() of an array reads its data (use the array, or .astype)")
        return _plain_call(tx, builtin, value, *rest)

    return lowering


for _fn in (float, int, bool, complex, str, repr):
    BUILTINS[_fn] = _number(_fn)


@_register(print)
def _print(tx: TraceContext, *args: Any, **kwargs: Any) -> Any:
    tx.graph_break("print() is a side effect")


@_register(callable)
def _callable(tx: TraceContext, value: Any) -> bool:
    return not isinstance(value, TArray) and callable(value)


def _plain(builtin: Any) -> Callable[..., Any]:
    def lowering(tx: TraceContext, *args: Any, **kwargs: Any) -> Any:
        return _plain_call(tx, builtin, *args, **kwargs)

    return lowering


for _fn in (divmod, all, any, hash, chr, ord, bin, hex, format):
    BUILTINS[_fn] = _plain(_fn)


def _traced_or_plain(builtin: Any, traced: Callable[..., Any]) -> Callable[..., Any]:
    """``builtin`` on trace-time values; ``traced`` (ops of the graph) when an argument is traced."""
    def lowering(tx: TraceContext, *args: Any, **kwargs: Any) -> Any:
        if contains_tarray(list(args)) or contains_tarray(list(kwargs.values())):
            return traced(tx, *args, **kwargs)
        return _plain_call(tx, builtin, *args, **kwargs)

    return lowering


BUILTINS[round] = _traced_or_plain(round, traced_round)
BUILTINS[pow] = _traced_or_plain(pow, traced_pow)
for _name in dir(math):  # math.sqrt(d_k) and friends on trace-time numbers; on traced ones, ops with Python's checks
    _fn = getattr(math, _name)
    if callable(_fn) and not _name.startswith("_"):
        BUILTINS[_fn] = _traced_or_plain(_fn, MATH[_fn]) if _fn in MATH else _plain(_fn)


def _domain_error() -> str:
    """Python's message for ``math.sqrt(-1.0)``, without the value newer versions append (``got -1.0``)."""
    try:
        math.sqrt(-1.0)
    except ValueError as exc:
        return str(exc).split(", got")[0]
    raise AssertionError("math.sqrt(-1.0) did not raise")


@_register(math.sqrt)
def _math_sqrt(tx: TraceContext, value: Any) -> Any:
    """``math.sqrt`` of a traced number (``math.sqrt(1 - beta2 ** t)``): NumPy's sqrt behind a run-time check that
    raises Python's ValueError below zero (NaN passes, as in Python; ``-0.0`` gives ``-0.0``)."""
    if not isinstance(value, TArray):
        return _plain_call(tx, math.sqrt, value)
    if value.kind != "py":
        value = conversion(tx, float, value)
    node = tx.read(value)
    ok = tx.op("logical_not", tx.op("less", node, tx.node(0.0)))
    checked = tx.op("check", node, ok, message=_domain_error(), error="ValueError")
    return tx.fresh(tx.op("sqrt", checked), "py")


# ---- container methods ----------------------------------------------------------------------------------------
MUTATING = {
    list: {"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort"},
    dict: {"update", "pop", "setdefault", "clear", "popitem"},
    set: {"add", "update", "discard", "remove", "clear", "pop"},
}
SAFE = {
    list: {"copy", "index", "count"}, tuple: {"index", "count"}, dict: {"keys", "values", "items", "get", "copy"},
    set: {"copy", "union", "intersection", "difference"},
}
NEEDS_PLAIN = {"index", "count", "remove", "sort"}


def call_container_method(tx: TraceContext, obj: Any, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    cls = type(obj)
    base = next((c for c in (list, dict, set, tuple) if isinstance(obj, c)), None)
    if base is None:
        return _plain_call(tx, getattr(obj, name), *args, **kwargs)
    if name in MUTATING.get(base, ()):
        if id(obj) in tx.caller_owned:
            if base is set:
                tx.graph_break(f"{cls.__name__}.{name}() on an argument (or global) mutates the caller's "
                               f"{cls.__name__}: a side effect")
            tx.side_effects.mutate_container(tx, obj, f"{cls.__name__}.{name}()")  # written back after the graph
    elif name not in SAFE.get(base, ()):
        tx.graph_break(f"{cls.__name__}.{name}() is not supported by the tracer")
    if name in NEEDS_PLAIN and not (is_plain(obj) and all(is_plain(a) for a in args)):
        tx.graph_break(f"{cls.__name__}.{name}() compares array data")
    try:
        return getattr(obj, name)(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001
        tx.graph_break(f"Python raises {type(exc).__name__}: {exc}", exc)



# ---- what the entries above do not support (docs/supported.md) --------------------------------------------------
NOTES: dict[Any, str] = {
    len: "a 0-d array or scalar (Python's TypeError)",
    range: "non-integer bounds",
    sorted: "key=; comparing array data",
    min: "key= over traced values; a Python number competing with a NumPy scalar gives the NumPy scalar's type",
    max: "key= over traced values; a Python number competing with a NumPy scalar gives the NumPy scalar's type",
    float: "arrays of more than one element; complex values",
    int: "arrays of more than one element; floats beyond the int64 range raise OverflowError (Python: a big int)",
    round: "ndigits computed from array data",
    pow: "the three-argument form on traced values",
    bool: "traced values (the truth of array data: use it in an if, which becomes a cond)",
    complex: "traced values", str: "traced values", repr: "traced values",
    divmod: "traced values", all: "traced values", any: "traced values", hash: "traced values",
    math.fsum: "traced values", math.isnan: "traced values", math.isinf: "traced values",
    math.isfinite: "traced values",
}
_print.breaks = (  # type: ignore[attr-defined]
    "runs eagerly between two graphs (the function is split around it); inside a loop or branch region, or with "
    "file=, the call breaks the graph")
