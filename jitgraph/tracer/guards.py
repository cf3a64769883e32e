"""Guards: what a traced graph assumed about the world, as readable text and as one compiled check.

Arguments are guarded by the dispatch *key* (see ``cache.py``): a flat tuple of types, shapes, dtypes, strides,
container structure and specialised scalar values, compared with one dict lookup. Everything else the trace read
(globals, closure cells, attributes of objects) is guarded here. Each guard is a Python expression over

* ``A`` (positional arguments), ``KW`` (keyword arguments) and
* ``K`` (the entry's constants: the traced function, its globals dict, expected values),

and all of an entry's guards are compiled into one function that returns the extra graph inputs (arrays read from
attributes or globals) or None. Readable text is kept beside each expression for ``explain`` and for recompile
reasons.
"""

from __future__ import annotations

import keyword
import math
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitgraph.device_arrays import device_array_facts
from jitgraph.ir.types import layout_of


@dataclass(frozen=True)
class Source:
    """Where a value came from: ``code`` evaluates it at call time; ``name`` is how the user would write it."""

    code: str
    name: str

    @property
    def through_arguments(self) -> bool:
        """Whether the value is reached from the call's arguments (``A[...]``, ``KW[...]``), not a global."""
        return "A[" in self.code or "KW[" in self.code

    def attr(self, attr: str) -> Source:
        """``self.attr``; a name that is not an identifier (``setattr(o, "x-y", v)``) is read with ``getattr``."""
        if attr.isidentifier() and not keyword.iskeyword(attr):
            return Source(f"{self.code}.{attr}", f"{self.name}.{attr}")
        return Source(f"getattr({self.code}, {attr!r})", f"getattr({self.name}, {attr!r})")

    def item(self, key: Any, bind: Callable[[Any], str] | None = None) -> Source:
        """``self[key]``. Only keys whose ``repr`` is their own exact literal (ints, strings, ...) are written into
        the code; any other key (a tuple holding a dtype, an enum, a float) is bound as a constant by ``bind``
        (``GuardSet.const``): generated source never embeds repr text, which need not be valid Python."""
        if not is_literal_key(key):
            if bind is None:
                raise ValueError(f"a key of type {type(key).__name__} needs a bound constant in guard code")
            return Source(f"{self.code}[{bind(key)}]", f"{self.name}[{key!r}]")
        return Source(f"{self.code}[{key!r}]", f"{self.name}[{key!r}]")


_LITERAL_KEY_TYPES = (int, str, bytes, bool, type(None))


def is_literal_key(key: Any) -> bool:
    """Whether ``repr(key)`` is Python source that evaluates to an equal key of the same type (exact builtin types
    only: a subclass or an enum reprs as something else)."""
    return type(key) in _LITERAL_KEY_TYPES


@dataclass(frozen=True)
class Guard:
    code: str
    text: str


@dataclass
class GuardSet:
    """Guards and extra inputs recorded while tracing one call."""

    constants: list[Any] = field(default_factory=list)
    guards: list[Guard] = field(default_factory=list)
    extra_inputs: list[Source] = field(default_factory=list)
    _const_index: dict[int, int] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)

    def const(self, value: Any) -> str:
        """Name an expected value inside guard code (``K[i]``); the entry keeps it alive, so ids stay valid."""
        key = id(value)
        if key not in self._const_index:
            self._const_index[key] = len(self.constants)
            self.constants.append(value)
        return f"K[{self._const_index[key]}]"

    def add(self, code: str, text: str) -> None:
        if code not in self._seen:
            self._seen.add(code)
            self.guards.append(Guard(code, text))

    def identity(self, source: Source, value: Any) -> None:
        self.add(f"{source.code} is {self.const(value)}", f"{source.name} is {_describe_object(value)}")

    def equal(self, source: Source, value: Any) -> None:
        if value is None:
            self.add(f"{source.code} is None", f"{source.name} is None")
            return
        s = source.code
        if _zero_or_nan(value):  # ``==`` cannot tell -0.0 from 0.0, and NaN from itself: compare the bits
            self.add(f"type({s}) is {self.const(type(value))} and {self.const(float_bits)}({s}) == "
                     f"{self.const(float_bits(value))}", f"{source.name} == {value!r}")
            return
        self.add(f"type({s}) is {self.const(type(value))} and {s} == {self.const(value)}",
                 f"{source.name} == {value!r}")

    def keyed(self, source: Source, value: Any, key_of: Any, key: Any) -> None:
        """A value specialised on by its exact contents (a slice, a set, an IntEnum): ``key_of(value) == key``, with
        ``key_of`` giving every such value an exact, hashable key (``keys.value_part``)."""
        s = source.code
        self.add(f"type({s}) is {self.const(type(value))} and {self.const(key_of)}({s}) == {self.const(key)}",
                 f"{source.name} == {_describe_object(value)}")

    def type_is(self, source: Source, value: Any) -> None:
        self.add(f"type({source.code}) is {self.const(type(value))}",
                 f"type({source.name}) is {type(value).__qualname__}")

    def array(self, source: Source, value: np.ndarray) -> None:
        s = source.code
        self.add(f"type({s}) is ndarray and {s}.shape == {self.const(value.shape)} and "
                 f"{s}.dtype == {self.const(value.dtype)} and {s}.strides == {self.const(value.strides)}",
                 f"{source.name}: ndarray, shape == {value.shape}, dtype == {value.dtype}, "
                 f"layout {layout_of(value)}")

    def symbolic_array(self, source: Source, value: np.ndarray, sizes: dict[int, tuple[str, str]]) -> None:
        """An array read from outside whose dimensions ``sizes`` are symbolic sizes (ir/symbols.py): each equal to
        the argument dimension that defines its symbol (``axis -> (guard code, symbol name)``), the others fixed; C
        or F order as now (the strides follow the shape)."""
        s = source.code
        shape = "(" + "".join(f"{sizes[k][0] if k in sizes else d}, " for k, d in enumerate(value.shape)) + ")"
        named = "(" + ", ".join(sizes[k][1] if k in sizes else str(d) for k, d in enumerate(value.shape)) + ")"
        order = "c_contiguous" if value.flags.c_contiguous else "f_contiguous"
        self.add(f"type({s}) is ndarray and {s}.shape == {shape} and {s}.dtype == {self.const(value.dtype)} and "
                 f"{s}.flags.{order}",
                 f"{source.name}: ndarray, shape == {named}, dtype == {value.dtype}, {order.replace('_', '-')}")

    def device_array(self, source: Source, value: Any) -> None:
        """A GPU array read from a global or attribute: its type, shape, dtype and strides, and that it is on the
        device (a host array there later fails the type check, so host and device compile apart)."""
        facts = device_array_facts(value)
        assert facts is not None
        s = source.code
        self.add(f"type({s}) is {self.const(type(value))} and {self.const(device_array_facts)}({s}) == "
                 f"{self.const(facts)}",
                 f"{source.name}: device array ({type(value).__qualname__}), shape == {facts[0]}, dtype == {facts[1]}")

    def structure(self, source: Source, value: Any) -> None:
        if isinstance(value, dict):
            self.add(f"type({source.code}) is dict and tuple({source.code}) == {self.const(tuple(value))}",
                     f"type({source.name}) is dict and {source.name}.keys() == {list(value)}")
        else:
            self.add(f"type({source.code}) is {self.const(type(value))} and len({source.code}) == {len(value)}",
                     f"type({source.name}) is {type(value).__name__} and len({source.name}) == {len(value)}")

    def extra_input(self, source: Source) -> int:
        self.extra_inputs.append(source)
        return len(self.extra_inputs) - 1

    def compile(self) -> Any:
        """One function ``check(A, KW) -> list of extra inputs | None``."""
        lines = ["def check(A, KW):", "    try:"]
        for g in self.guards:
            lines.append(f"        if not ({g.code}): return None")
        lines.append("        return [" + ", ".join(s.code for s in self.extra_inputs) + "]")
        lines.append("    except Exception:")
        lines.append("        return None")
        namespace: dict[str, Any] = {"K": self.constants, "ndarray": np.ndarray}
        exec(compile("\n".join(lines), "<jitgraph guards>", "exec"), namespace)  # noqa: S102 - generated guard code
        return namespace["check"]

    def first_failure(self, args: tuple, kwargs: dict) -> Guard | None:
        """The first guard that fails for these arguments (slow path, used to explain a recompile)."""
        namespace = {"K": self.constants, "ndarray": np.ndarray, "A": args, "KW": kwargs}
        for g in self.guards:
            try:
                ok = eval(g.code, namespace)
            except Exception:  # noqa: BLE001 - a guard that raises is a failed guard
                ok = False
            if not ok:
                return g
        return None

    def describe_now(self, guard: Guard, args: tuple, kwargs: dict) -> str:
        """What the guarded expression holds now, for ``name: old -> new`` messages."""
        namespace = {"K": self.constants, "ndarray": np.ndarray, "A": args, "KW": kwargs}
        subject = guard.code.split(" is ")[0].split(" == ")[0]
        if subject.startswith("type(") and subject.endswith(")"):
            subject = subject[5:-1]
        try:
            value = eval(subject, namespace)
        except Exception as exc:  # noqa: BLE001 - only for a message
            return f"<{type(exc).__name__}>"
        if isinstance(value, np.ndarray):
            return f"ndarray shape {value.shape} dtype {value.dtype}"
        return _describe_object(value)


def _describe_object(value: Any) -> str:
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if isinstance(value, types.FunctionType | types.BuiltinFunctionType | type):
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', value)}"
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def float_bits(value: Any) -> tuple:
    """The exact identity of a float or complex value (Python or NumPy): equal values with the same sign of zero
    match, and every NaN matches every NaN. Hashable, for dispatch keys."""
    if isinstance(value, complex | np.complexfloating):
        parts = (value.real, value.imag)
    else:
        parts = (value,)
    return tuple("nan" if math.isnan(p) else (p, math.copysign(1.0, p)) for p in parts)


def _zero_or_nan(value: Any) -> bool:
    """Whether ``==`` on this float-like value would be inexact (a zero of either sign, or a NaN)."""
    if type(value) is float:
        return value == 0.0 or math.isnan(value)
    if isinstance(value, complex | np.complexfloating):
        return any(p == 0 or math.isnan(p) for p in (value.real, value.imag))
    if isinstance(value, np.floating):
        return bool(value == 0 or math.isnan(value))
    return False
