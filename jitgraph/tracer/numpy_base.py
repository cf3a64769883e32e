"""What every part of the NumPy table shares: the table type and the argument helpers of lowerings.

Each entry is a *lowering*: ``lowering(tx, *args, **kwargs)`` with NumPy's own signature, which records IR ops and
returns the traced result; Python's argument binding checks the call shape for us. The entries live in three
modules by family (``numpy_math``, ``numpy_shapes``, ``numpy_creation``), each filling its own
:class:`LoweringTable`; ``numpy_table`` merges them into the one table calls are looked up in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.errors import TypeInferenceError
from jitgraph.ir.ops.rules import normalize_axes
from jitgraph.ir.symbols import Sym
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.values import TArray

Lowering = Callable[..., Any]


class LoweringTable:
    """NumPy callables, ndarray method names and ufunc method names (``at``, ``reduce``) to lowerings."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.functions: dict[Any, Lowering] = {}
        self.methods: dict[str, Lowering] = {}
        self.ufunc_methods: dict[str, Lowering] = {}
        self.notes: dict[Any, str] = {}
        """What an entry does not support (keys: the callable, ``".name"`` for a method, ``"ufunc.name"`` for a
        ufunc method): the published list of supported functions (docs/supported.md) is generated from it."""

    def numpy(self, *fns: Any, unsupported: str = "") -> Callable[[Lowering], Lowering]:
        """Decorator: the lowering of the NumPy callables ``fns``; ``unsupported`` says what it does not support."""
        self.note(unsupported, *fns)
        return _registrar(self.functions, fns)

    def method(self, *names: str, unsupported: str = "") -> Callable[[Lowering], Lowering]:
        """Decorator: the lowering of the ndarray methods ``names`` (called with the array first)."""
        self.note(unsupported, *(f".{n}" for n in names))
        return _registrar(self.methods, names)

    def note(self, unsupported: str, *keys: Any) -> None:
        """Record what the entries ``keys`` do not support."""
        for key in keys:
            if unsupported:
                self.notes[key] = unsupported


def always_breaks(reason: str) -> Lowering:
    """A lowering for a callable that is listed but never compiled: the break says why (docs list it as such)."""

    def lowering(tx: TraceContext, *args: Any, **kwargs: Any) -> Any:
        tx.graph_break(reason)

    lowering.breaks = reason  # type: ignore[attr-defined]
    return lowering


def merge_notes(tables: list[LoweringTable]) -> dict[Any, str]:
    """The ``notes`` of several tables in one dict."""
    out: dict[Any, str] = {}
    for table in tables:
        out.update(table.notes)
    return out


def _registrar(table: dict[Any, Lowering], keys: tuple[Any, ...]) -> Callable[[Lowering], Lowering]:
    def deco(lowering: Lowering) -> Lowering:
        for key in keys:
            table[key] = lowering
        return lowering

    return deco


def merge(tables: list[LoweringTable]) -> tuple[dict[Any, Lowering], dict[str, Lowering], dict[str, Lowering]]:
    """One (functions, methods, ufunc methods) table from several; an entry in two of them is a mistake."""
    out: tuple[dict[Any, Lowering], dict[str, Lowering], dict[str, Lowering]] = ({}, {}, {})
    for table in tables:
        for merged, part in zip(out, (table.functions, table.methods, table.ufunc_methods)):
            twice = [key for key in part if key in merged]
            if twice:
                raise ValueError(f"{table.name} lowers {twice!r}, which another part of the NumPy table lowers")
            merged.update(part)
    return out


# ---- argument helpers --------------------------------------------------------------------------------------------
def as_array(tx: TraceContext, value: Any) -> TArray:
    """An operand as a tracked array (constants become constant nodes)."""
    if isinstance(value, TArray):
        return value
    return tx.fresh(tx.node(value), "array")


def axes_arg(tx: TraceContext, axis: Any, ndim: int, what: str) -> tuple[int, ...]:
    """An ``axis=`` argument, normalised (NumPy's AxisError when out of range)."""
    if isinstance(axis, TArray):
        tx.graph_break(f"{what}: axis computed from array data")
    try:
        return normalize_axes(axis, ndim, what)
    except TypeInferenceError as exc:
        tx.graph_break(exc.message, getattr(exc, "original", None))


def shape_arg(tx: TraceContext, shape: Any) -> tuple[int, ...]:
    """A shape argument: an int or a sequence of trace-time ints, where a symbolic size read from an argument's
    shape (``x.reshape(n, -1)`` with ``n = x.shape[0]``, ir/symbols.py) stays its symbol."""
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    sym = _symbol_of(tx, shape)
    if sym is not None:
        return (sym,)
    if isinstance(shape, tuple | list):
        dims = [int(d) if isinstance(d, int | np.integer) else _symbol_of(tx, d) for d in shape]
        if all(d is not None for d in dims):
            return tuple(dims)  # type: ignore[arg-type]
    tx.graph_break("a shape that is not a tuple of trace-time integers")


def _symbol_of(tx: TraceContext, value: Any) -> Sym | None:
    """The symbol a traced Python int stands for, when it is a symbolic size itself (``const(s0)``)."""
    sym = tx.size_symbol(value)
    return sym if type(sym) is Sym else None


def dtype_arg(tx: TraceContext, dtype: Any) -> np.dtype:
    """A ``dtype=`` argument as a NumPy dtype (NumPy's TypeError for a bad one)."""
    if isinstance(dtype, TArray):
        tx.graph_break("a dtype computed from array data")
    try:
        return np.dtype(dtype)
    except TypeError as exc:
        tx.graph_break(str(exc), exc)


def no_out(tx: TraceContext, out: Any, what: str) -> None:
    """``out=`` is traced only where a lowering handles it itself."""
    if out is not None:
        tx.graph_break(f"{what}(out=...) is not supported by the tracer")
