"""Values a trace reads from outside its arguments -- globals, closure cells, attributes of objects: wrapped on first
read, with a guard for what the trace assumes about each (a mixin of :class:`~jitgraph.tracer.context.TraceContext`,
whose state it reads and fills: ``guards``, ``_by_source``, ``external``, ``py_inputs``).

Arrays become extra graph inputs, guarded by type, shape, dtype and strides (or, in a symbolic trace, tied to a
symbol: ``_outside_symbols``); a Python int or float the trace has learnt to read as a runtime value (a step counter
the replayed stores rewrite) becomes a guarded graph input; containers are guarded by structure and wrapped item by
item; modules, functions and types by identity; anything else by value or type.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from jitgraph.device_arrays import is_device_array
from jitgraph.ir.symbols import Sym
from jitgraph.tracer.guards import Source
from jitgraph.tracer.keys import is_namedtuple, value_part
from jitgraph.tracer.side_effects import AppendOnlyList
from jitgraph.tracer.values import TArray

SPECIALISED = (int, bool, str, bytes, complex, type(None))
DYNAMIC_LIMIT = 2**31  # a runtime int's range: int64 arithmetic on it stays exact for the usual counters


class OutsideValues:
    """Mixin of TraceContext: wrapping outside values (module docstring)."""

    def wrap_external(self, value: Any, source: Source | None) -> Any:
        """Wrap a value read from outside the arguments, guarding on what the trace assumes about it."""
        if source is None:
            return self._wrap_unguarded(value)
        cached = self._by_source.get(source.code)
        if cached is not None or source.code in self._by_source:
            return cached
        wrapped = self._wrap_guarded(value, source)
        self._by_source[source.code] = wrapped
        return wrapped

    def _wrap_unguarded(self, value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return self.fresh(self.builder.const(value))
        return value

    def _wrap_guarded(self, value: Any, source: Source) -> Any:
        g = self.guards
        t = type(value)
        if t is np.ndarray:
            dims = self._outside_symbols(value) if self.duck_outside and self.symbol_codes else None
            if dims:
                codes = {axis: (self.symbol_codes[s.name][1], s.name) for axis, s in dims.items()}
                g.symbolic_array(source, value, codes)
                self.symbolic_dims[source.name] = dims
            else:
                g.array(source, value)
            g.extra_input(source)
            return self.new_input(value, source.name, source)
        if (t is int or t is float) and source.code in self.dynamic_sources and abs(value) < DYNAMIC_LIMIT:
            return self._dynamic_scalar(value, source)
        if t is list and source.code in self.dynamic_sources:  # only appended to (side_effects.py)
            g.type_is(source, value)
            proxy = AppendOnlyList()
            self.note_external(proxy, source)
            self._keep.append(proxy)
            return proxy
        if t in SPECIALISED or t is float or isinstance(value, np.generic | np.dtype):
            g.equal(source, value)
            return value
        if is_device_array(value) and not isinstance(value, type):
            g.device_array(source, value)
            g.extra_input(source)
            return self.new_input(value, source.name, source)
        if isinstance(value, np.ndarray):
            self.graph_break(f"{source.name} is an ndarray subclass ({t.__name__}), which is not traced")
        if t is tuple or t is list or t is dict:
            g.structure(source, value)
            if t is dict:
                result: Any = {k: self.wrap_external(v, source.item(k, self.guards.const)) for k, v in value.items()}
            else:
                result = [self.wrap_external(v, source.item(i, self.guards.const)) for i, v in enumerate(value)]
            if t is tuple:
                return tuple(result)
            return self._mark_external(value, result, source)
        if isinstance(value, types.ModuleType | types.FunctionType | types.BuiltinFunctionType | type | np.ufunc):
            g.identity(source, value)
            self._keep.append(value)
            return value
        if is_namedtuple(value):
            g.structure(source, value)
            return t._make([self.wrap_external(v, source.item(i, self.guards.const)) for i, v in enumerate(value)])
        part = self._by_value(value, source)
        if type(part) is tuple:  # used by value (a slice, a set, an IntEnum): guarded on its exact contents
            g.keyed(source, value, value_part, part)
        else:
            g.type_is(source, value)
        self.note_external(value, source)
        self._keep.append(value)
        return value

    def _outside_symbols(self, value: np.ndarray) -> dict[int, Sym]:
        """Duck sizing for an array read from outside (``self.x`` stored by a forward pass): each dimension whose
        size is a symbol's size at this call takes the symbol (C- or F-ordered arrays only: their strides follow
        their shape). A coincidence is harmless: the guard ties the dimension to the symbol, and the symbolic trace
        is checked against the traces at other sizes before it is kept."""
        if not (value.flags.c_contiguous or value.flags.f_contiguous):
            return {}
        by_size = {sym.hint: sym for sym, _ in self.symbol_codes.values()}
        return {axis: by_size[d] for axis, d in enumerate(value.shape) if d >= 2 and d in by_size}

    def _dynamic_scalar(self, value: float, source: Source) -> TArray:
        """An outside int or float the trace reads as a graph input (guarded by type and range, not value)."""
        t = type(value)
        bound = "" if t is float else f" and -{DYNAMIC_LIMIT} < {source.code} < {DYNAMIC_LIMIT}"
        self.guards.add(f"type({source.code}) is {t.__name__}{bound}",
                        f"type({source.name}) is {t.__name__} (a runtime value{bound and ', |value| < 2**31'})")
        self.guards.extra_input(source)
        wrapped = self.new_input(value, source.name)
        self.py_inputs[id(wrapped)] = (wrapped, value, source)
        return wrapped

    def read_scalar_at(self, code: str) -> Any:
        """The specialised int/float the trace read from the outside location ``code`` (None if it read none)."""
        value = self._by_source.get(code)
        return value if type(value) is int or type(value) is float else None

    def attribute_unchanged(self, obj: Any, name: str, value: Any) -> bool:
        """Does ``obj.name = value`` store back exactly what the trace read from ``obj.name``?"""
        source = self.source_of(obj)
        if source is None:
            return False
        return self.stored_back(source.attr(name).code, value)

    def stored_back(self, code: str, value: Any) -> bool:
        """Is ``value`` exactly what the trace read from the outside location ``code``?"""
        return code in self._by_source and self._by_source[code] is value

    def wrapped_outside_values(self) -> list[Any]:
        """Every value wrapped from a global, cell or attribute so far (what a region body could write through)."""
        return list(self._by_source.values())

    def source_of(self, value: Any) -> Source | None:
        entry = self.external.get(id(value))
        return entry[1] if entry is not None and entry[0] is value else None

    def py_input(self, value: Any) -> tuple[Any, Source] | None:
        """(value at trace time, source) of a Python-float argument used as it came in; None for anything else."""
        entry = self.py_inputs.get(id(value))
        return entry[1:] if entry is not None and entry[0] is value else None

    def const_source(self, value: Any) -> Source:
        """A source for an object we hold ourselves (a function's closure, say): ``K[i]`` in guard code."""
        self._keep.append(value)
        code = self.guards.const(value)
        return Source(code, getattr(value, "__qualname__", type(value).__name__))
