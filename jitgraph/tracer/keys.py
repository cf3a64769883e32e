"""The dispatch key: every argument guard in one flat, hashable tuple, built in one pass over the arguments.

A cached call costs one walk over the arguments and one dict lookup, instead of evaluating guard objects one by
one. The same walk lists the *leaves* (arrays, Python floats, NumPy scalars) in the order the tracer made them
graph inputs. The readable form of the same guards (``x.shape == (256, 784)``) is produced separately, on the
slow path only.
"""

from __future__ import annotations

import enum
import itertools
import types
from typing import Any

import numpy as np

from jitgraph.device_arrays import byte_range, device_array_facts, device_type_of, is_device_array
from jitgraph.ir.types import layout_of
from jitgraph.tracer.dynamic_ints import DynamicInt
from jitgraph.tracer.guards import float_bits

_ndarray = np.ndarray
_generic = np.generic
_IDENTITY_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type, np.ufunc,
                   types.MethodType)


def flatten(value: Any, parts: list[Any], leaves: list[Any]) -> None:
    """Append ``value``'s key parts and leaves. Arrays inside containers take an inlined fast path: a training
    step's arguments are mostly dicts and lists of arrays."""
    t = type(value)
    if t is _ndarray:
        parts.append((value.shape, value.dtype, value.strides))
        leaves.append(value)
    elif t is float:
        parts.append(float)
        leaves.append(value)
    elif t is DynamicInt:  # an int argument traced as a runtime value (dynamic_ints.py)
        parts.append(DynamicInt)
        leaves.append(int(value))
    elif t is int or t is bool or t is str or value is None or t is bytes:  # complex: by bits, below
        parts.append((t, value))
    elif t is dict:
        parts.append((dict, tuple(value)))
        _flatten_items(value.values(), parts, leaves)
    elif t is tuple or t is list:
        parts.append((t, len(value)))
        _flatten_items(value, parts, leaves)
    elif isinstance(value, _generic):
        parts.append(t)
        leaves.append(value)
    elif isinstance(value, _IDENTITY_TYPES):
        parts.append((t, id(value)))
    elif is_device_array(value):  # a GPU array: a leaf keyed apart from host arrays of the same shape
        parts.append(("device", t, device_array_facts(value)))
        leaves.append(value)
    elif isinstance(value, tuple) and is_namedtuple(value):  # element by element, like a tuple
        parts.append((t, len(value)))
        _flatten_items(value, parts, leaves)
    else:
        parts.append(value_part(value, t))


UNGUARDABLE = object()  # in a key part: a value the tracer would specialise on but cannot key (it breaks instead)
_VALUE_BASES = (int, float, complex, str, bytes, tuple, list, dict, set, frozenset)
_BY_VALUE_BASES = (*_VALUE_BASES, slice, range)


def value_part(value: Any, t: type | None = None) -> Any:
    """The key part of an argument outside the common types. Values the tracer uses by value (slices, ranges,
    sets, dtypes, subclasses of int/float/str such as IntEnum) are keyed by exact type and exact contents;
    subclasses of builtin containers and other values it cannot key give ``(type, UNGUARDABLE)``; any other object
    gives its type alone (the trace reads it only through attributes, which are guarded where they are read)."""
    if t is None:
        t = type(value)
    try:
        if t is slice:
            return (slice, _atom(value.start), _atom(value.stop), _atom(value.step))
        if t is range:
            return (range, value.start, value.stop, value.step)
        if t is set or t is frozenset:  # in iteration order, which equal sets need not share
            return (t, tuple(_atom(v) for v in value))
        if t is complex:
            return (complex, float_bits(value))
        if isinstance(value, np.dtype):  # dtypes compare by byte order, unit and fields too
            return (t, value)
        if isinstance(value, enum.Enum):  # by identity: members live as long as their class, which the key holds
            return (t, id(value))
        if isinstance(value, _VALUE_BASES) and not getattr(value, "__dict__", None):
            if isinstance(value, int):
                return (t, int.__index__(value))
            if isinstance(value, float):
                return (t, float_bits(float.__float__(value)))
            if isinstance(value, str):
                return (t, str.__str__(value))
    except _Unkeyable:
        return (t, UNGUARDABLE)
    if isinstance(value, _BY_VALUE_BASES):
        return (t, UNGUARDABLE)
    return t


_NOT_BY_TYPE = (_ndarray, _generic, *_IDENTITY_TYPES, np.dtype, enum.Enum, *_BY_VALUE_BASES)
# Class attributes that make :func:`flatten` read more than an instance's type: ``isinstance`` consults a redefined
# ``__class__``, the device test (``is_device_array``) reads the two interface names and runs ``__getattr__``.
_INSTANCE_HOOKS = ("__class__", "__getattr__", "__getattribute__", "__cuda_array_interface__", "__cuda_ndarray__")


def keyed_by_type(t: type) -> bool:
    """Whether :func:`flatten` keys every value of exact type ``t`` by ``t`` alone (``value_part``'s last line: a
    plain user object, whose attributes the trace guards where it reads them), provided the instance is no device
    array: for such a class ``is_device_array``, the one test on that walk that reads the instance, finds the
    interface names only in its ``__dict__``. For generated dispatch (jit/dispatch.py), which checks both."""
    if issubclass(t, _NOT_BY_TYPE):
        return False
    return not any(name in k.__dict__ for k in t.__mro__[:-1] for name in _INSTANCE_HOOKS)


class _Unkeyable(Exception):
    pass


def _atom(v: Any) -> Any:
    """An exact, hashable key of a scalar inside a slice or a set (a tuple of them too); else ``_Unkeyable``."""
    t = type(v)
    if t is int or t is bool or t is str or v is None or t is bytes:
        return (t, v)
    if t is float or isinstance(v, np.inexact):
        return (t, float_bits(v))
    if isinstance(v, np.integer | np.bool_):
        return (t, int(v))
    if t is tuple or isinstance(v, tuple) and is_namedtuple(v):
        return (t, tuple(_atom(x) for x in v))
    part = value_part(v, t)
    if type(part) is not tuple or part[-1] is UNGUARDABLE:
        raise _Unkeyable
    return part


def is_namedtuple(value: Any) -> bool:
    """A namedtuple (collections or typing) with no instance attributes: rebuilt exactly from its elements by
    ``_make``, so it is keyed, wrapped and guarded element by element, like a tuple."""
    t = type(value)
    return isinstance(value, tuple) and hasattr(t, "_fields") and hasattr(t, "_make") and \
        not getattr(value, "__dict__", None)


def _flatten_items(items: Any, parts: list[Any], leaves: list[Any]) -> None:
    append, leaf = parts.append, leaves.append
    for v in items:
        if type(v) is _ndarray:
            append((v.shape, v.dtype, v.strides))
            leaf(v)
        else:
            flatten(v, parts, leaves)


def make_key(args: tuple, kwargs: dict[str, Any], leaves: list[Any]) -> tuple:
    """The key of a call; fills ``leaves``."""
    parts: list[Any] = []
    _flatten_items(args, parts, leaves)
    if kwargs:
        parts.append(tuple(kwargs))
        _flatten_items(kwargs.values(), parts, leaves)
    return tuple(parts)


def alias_pattern(leaves: list[Any]) -> tuple | None:
    """None when no two array leaves can share memory (the common case); otherwise the exact pattern: which
    leaves are the same array and which merely overlap.

    Decided by memory, not by ``.base`` identity alone: ``as_strided``, ``sliding_window_view`` and
    ``np.asarray(memoryview(a))`` make arrays whose ``.base`` is not an array but the object they were made from
    (a ``DummyArray``, a memoryview), and an identity check that misses one gives a silently wrong answer after an
    in-place update. NumPy points an ordinary view's ``.base`` at the array that owns the memory, and the memory
    of two owners never overlaps, so an array that owns its memory (base None) or views an owner (an ndarray base
    with no base of its own) is keyed by its owner's identity: one pass, no bounds checks, the usual call. Any
    other array (its memory reached through a non-array object, at any depth) is compared by byte bounds with
    every other array leaf. Device arrays (the only leaves that are neither arrays, floats nor NumPy
    scalars) are compared by their byte ranges."""
    seen: set[int] = set()
    add = seen.add
    foreign = False
    device: list[Any] | None = None
    for a in leaves:
        t = type(a)
        if t is _ndarray:
            base = a.base
            if base is None:
                owner = id(a)
            elif type(base) is _ndarray and base.base is None:
                owner = id(base)
            else:
                foreign = True  # memory reached through another object: compared by bounds below
                continue
            if owner in seen:
                return _exact_pattern(leaves)
            add(owner)
        elif t is not float and not isinstance(a, _generic):
            if device is None:
                device = [a]
            else:
                device.append(a)
    if foreign and _foreign_overlap([a for a in leaves if type(a) is _ndarray]):
        return _exact_pattern(leaves)
    if device is not None and len(device) > 1 and _device_ranges_overlap(device):
        return _exact_pattern(leaves)
    return None


def _foreign_overlap(arrays: list[np.ndarray]) -> bool:
    """Whether an array whose memory comes through a non-array object may share memory with any other array:
    byte bounds, as ``np.may_share_memory`` compares them (conservative for interleaved strides, never misses an
    overlap)."""
    for i, a in enumerate(arrays):
        base = a.base
        if base is None or type(base) is _ndarray and base.base is None:
            continue
        for j, other in enumerate(arrays):
            if j != i and np.may_share_memory(a, other):
                return True
    return False


def _device_ranges_overlap(arrays: list[Any]) -> bool:
    """Whether any two device arrays' byte ranges may overlap: one sort instead of comparing every pair."""
    spans = []
    for a in arrays:
        span = _device_span(a)
        if span is None:
            return True  # no address to compare: let the exact check decide
        if span[0] < span[1]:
            spans.append(span)
    spans.sort()
    return any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans))


def _exact_pattern(leaves: list[Any]) -> tuple | None:
    arrays = [(i, a) for i, a in enumerate(leaves) if type(a) is _ndarray or is_device_array(a)]
    pattern = []
    for n, (i, a) in enumerate(arrays):
        for j, b in arrays[n + 1:]:
            if a is b:
                pattern.append(("same", i, j))
            elif _may_share_memory(a, b):
                pattern.append(("overlap", i, j))
    return tuple(pattern) or None


def _may_share_memory(a: Any, b: Any) -> bool:
    host_a, host_b = type(a) is _ndarray, type(b) is _ndarray
    if host_a and host_b:
        return bool(np.may_share_memory(a, b))
    if host_a or host_b:
        return False  # host and device memory are apart
    ra, rb = _device_span(a), _device_span(b)
    if ra is None or rb is None:
        return a is b
    return ra[0] < rb[1] and rb[0] < ra[1]


def _device_span(value: Any) -> tuple[int, int] | None:
    """(lowest, highest + 1) byte address of a device array; for Numba's CUDA simulator, whose arrays have no
    ``__cuda_array_interface__`` but wrap a NumPy array (``_ary``), that array's bounds. None when unknown."""
    host = getattr(value, "_ary", None)
    if isinstance(host, np.ndarray):
        return np.lib.array_utils.byte_bounds(host)
    return byte_range(value)


def describe(args: tuple, kwargs: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """Readable facts the key encodes: ``{"x.shape": (256, 784), "type(params)": "dict", ...}``."""
    facts: dict[str, Any] = {}
    for name, value in list(zip(names, args)) + list(kwargs.items()):
        _describe(value, name, facts)
    return facts


def _describe(value: Any, name: str, facts: dict[str, Any]) -> None:
    t = type(value)
    facts[f"type({name})"] = t.__qualname__
    if t is _ndarray:
        facts[f"{name}.shape"] = value.shape
        facts[f"{name}.dtype"] = str(value.dtype)
        facts[f"{name}.layout"] = layout_of(value)
        facts[f"{name}.strides"] = value.strides
    elif is_device_array(value):
        shape, dtype, strides = device_array_facts(value)
        facts[f"{name}.device"] = "cuda"
        facts[f"{name}.shape"] = shape
        facts[f"{name}.dtype"] = str(dtype)
        facts[f"{name}.layout"] = device_type_of(value).layout
        facts[f"{name}.strides"] = strides
    elif t in (int, bool, str, complex, bytes) or value is None:
        facts[name] = value
    elif t is DynamicInt:
        facts[f"type({name})"] = "int"
        facts[f"abs({name})"] = "< 2**31 (a runtime value)"
    elif t is tuple or t is list or is_namedtuple(value):
        facts[f"len({name})"] = len(value)
        for i, v in enumerate(value):
            _describe(v, f"{name}[{i}]", facts)
    elif t is dict:
        facts[f"{name}.keys()"] = list(value)
        for k, v in value.items():
            _describe(v, f"{name}[{k!r}]", facts)
    elif isinstance(value, _IDENTITY_TYPES):
        facts[f"id({name})"] = getattr(value, "__qualname__", repr(value))
    elif t is not float and not isinstance(value, _generic):  # floats and NumPy scalars are graph inputs
        part = value_part(value, t)
        if type(part) is tuple and part[-1] is not UNGUARDABLE:  # keyed by value: ``s == slice(0, 2, None)``
            facts[name] = value


def guard_texts(facts: dict[str, Any]) -> list[str]:
    """Facts as guard expressions: ``x.shape == (256, 784)``, ``type(params) is dict``."""
    out = []
    for label, value in facts.items():
        if label.startswith("type("):
            out.append(f"{label} is {value}")
        elif label.startswith("id("):
            out.append(f"{label[3:-1]} is {value}")
        elif label.startswith("abs("):  # a dynamic int: ``abs(t) < 2**31 (a runtime value)``
            out.append(f"{label} {value}")
        elif label.endswith(".strides"):
            continue
        else:
            out.append(f"{label} == {value!r}")
    return out


def diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``x.shape[0]: 256 -> 128`` lines for every fact that changed."""
    changes = []
    for label in list(old) + [k for k in new if k not in old]:
        a, b = old.get(label, "<absent>"), new.get(label, "<absent>")
        if label.startswith("abs(") and label not in new:  # a dynamic int (dynamic_ints.py) out of its range
            name = label[4:-1]
            changes.append(f"{name}: {new.get(name)!r} is outside abs({name}) < 2**31, so it is keyed by value")
            continue
        if _same_fact(a, b) or (label not in old or label not in new) and changes:
            continue  # facts about elements that appeared or vanished follow from the structure change
        if label.endswith(".strides") and any(x.startswith(label[:-8]) and x.endswith((".shape", ".dtype"))
                                              and old.get(x) != new.get(x) for x in old):
            continue  # strides follow from a shape or dtype change already reported
        if label.endswith(".shape") and isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            changes.extend(f"{label}[{i}]: {x} -> {y}" for i, (x, y) in enumerate(zip(a, b)) if x != y)
        else:
            changes.append(f"{label}: {a!r} -> {b!r}")
    return changes


def _same_fact(a: Any, b: Any) -> bool:
    """Equal and printed alike: ``-0.0`` is a change from ``0.0``, a set iterated in another order too."""
    try:
        return bool(a == b) and repr(a) == repr(b)
    except Exception:  # noqa: BLE001 - only for a message
        return False
