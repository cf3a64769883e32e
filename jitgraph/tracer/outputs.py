"""Rebuilding a compiled call's return value from the graph's outputs, the arguments and traced constants.

The tracer records *how* the Python return value is made (an output spec: graph outputs, arguments returned as
they are, views of arguments, constants, containers of these); this module turns that spec once into a small
closure, so a cached call only runs the closure.

Two things NumPy cannot do for a GPU array -- take a view of an argument that lives on the device (``x.T``) and
copy a device scalar to the host -- belong to the backend that computes on the device. The driver hands them in
as a :class:`DeviceOutputs` (the CUDA backend's), so the tracer imports no backend.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from jitgraph.device_arrays import is_device_array
from jitgraph.errors import BackendError
from jitgraph.generated_source import run_source
from jitgraph.ir.ops import OPS
from jitgraph.ir.types import python_type
from jitgraph.tracer.values import ViewStep


class DeviceOutputs(Protocol):
    """What a device backend supplies to rebuild return values that involve device arrays."""

    def view(self, value: Any, path: Sequence[ViewStep]) -> Any:
        """The view ``path`` (transpose, reshape, basic getitem steps) of the device array ``value``, made on the
        device as NumPy makes it on the host (same memory); raise when the device array cannot express it."""
        ...

    def to_host(self, value: Any) -> np.ndarray:
        """A device array's contents as a NumPy array."""
        ...


def build_output(spec: Any, constants: list[Any], device: DeviceOutputs | None = None) -> Any:
    """Compile an output spec into ``build(outs, leaves, args, kwargs) -> return value``. ``device`` is needed
    only when device arrays take part (a view of a device argument, a Python scalar computed on the device).

    Why generated: a cached call runs the builder every time, and a closure per part (a dict of two arrays stored
    back into an optimizer's state: a lambda for the dict, one per value, a ``zip``) costs ~0.4 us a part. The
    builder is one Python function whose return expression builds the value in the closures' order (~0.1 us a
    part); a view of an argument, a ``select`` and a source expression stay closures, called from it. Its source
    is in ``linecache`` (``<jitgraph result N>``)."""
    ns: dict[str, Any] = {"ndarray": np.ndarray, "_array": _array, "_python_scalar": _python_scalar, "DEVICE": device}
    expr = _Expression(ns, constants, device).of(spec)
    source = f"def build(o, leaves, a, kw):\n    return {expr}\n"
    filename = f"<jitgraph result {next(_ids)}>"
    return run_source(source, filename, ns)["build"]


_ids = itertools.count(1)


def output_value(spec: Any, constants: list[Any], outs: Any, leaves: list[Any], args: tuple, kwargs: dict[str, Any],
                 device: DeviceOutputs | None = None) -> Any:
    """The value of ``spec`` built once (a fallback call, a call between graph segments at trace time): through the
    closures, not :func:`build_output`'s generated function, which would compile Python source and fill
    ``linecache`` for each such call."""
    return _closure(spec, constants, device)(outs, leaves, args, kwargs)


def _array(value: Any) -> Any:
    """An array output that is not an ndarray: a device array as it is, anything else through ``np.asarray``."""
    return value if is_device_array(value) else np.asarray(value)


class _Expression:
    """The Python expression of an output spec over ``o, leaves, a, kw``, its constants in ``ns``."""

    def __init__(self, ns: dict[str, Any], constants: list[Any], device: DeviceOutputs | None) -> None:
        self.ns, self.constants, self.device = ns, constants, device
        self.n = itertools.count()

    def name(self, prefix: str, value: Any) -> str:
        key = f"{prefix}{next(self.n)}"
        self.ns[key] = value
        return key

    def of(self, spec: Any) -> str:
        tag = spec[0]
        if tag == "out":
            k, kind = spec[1], spec[2]
            x = f"x{next(self.n)}"
            if kind == "array":
                return f"({x} if type({x} := o[{k}]) is ndarray else _array({x}))"
            if kind == "scalar":
                return f"({x}[()] if type({x} := o[{k}]) is ndarray else {x})"
            return f"_python_scalar(o[{k}], DEVICE)"
        if tag == "leaf":
            return f"leaves[{spec[1]}]"
        if tag == "const":
            return self.name("C", spec[1])
        if tag in ("tuple", "list"):
            parts = [self.of(s) for s in spec[1]]
            if tag == "list":
                return "[" + ", ".join(parts) + "]"
            return "(" + "".join(f"{p}, " for p in parts) + ")"
        if tag == "namedtuple":
            make = self.name("M", spec[1]._make)
            return f"{make}([{', '.join(self.of(s) for s in spec[2])}])"
        if tag == "dict":
            keys = self.name("K", tuple(spec[1]))
            return "{" + ", ".join(f"{keys}[{i}]: {self.of(s)}" for i, s in enumerate(spec[2])) + "}"
        part = self.name("P", _closure(spec, self.constants, self.device))  # views, selects, source expressions
        return f"{part}(o, leaves, a, kw)"


def _closure(spec: Any, constants: list[Any], device: DeviceOutputs | None = None) -> Any:
    """The builder of ``spec`` as composed closures (the parts ``_Expression`` does not write out)."""
    tag = spec[0]
    if tag == "out":
        k, kind = spec[1], spec[2]
        if kind == "array":  # device results (backend="cuda") come back as they are
            return lambda o, leaves, a, kw: o[k] if type(o[k]) is np.ndarray or is_device_array(o[k]) \
                else np.asarray(o[k])
        if kind == "scalar":
            return lambda o, leaves, a, kw: o[k][()] if type(o[k]) is np.ndarray else o[k]
        return lambda o, leaves, a, kw: _python_scalar(o[k], device)
    if tag == "leaf":
        i = spec[1]
        return lambda o, leaves, a, kw: leaves[i]
    if tag == "view":
        i, path = spec[1], spec[2]
        steps = [(OPS[s.op].impl, s.kwargs) for s in path]

        def view(o: Any, leaves: list[Any], a: tuple, kw: dict[str, Any]) -> Any:
            value = leaves[i]
            if type(value) is not np.ndarray and is_device_array(value):
                return _device_view(value, path, device)
            for impl, attrs in steps:
                value = impl(value, **attrs)
            return value

        return view
    if tag == "const":
        value = spec[1]
        return lambda o, leaves, a, kw: value
    if tag == "source":
        code = spec[1]
        return lambda o, leaves, a, kw: eval(code, {"A": a, "KW": kw, "K": constants})
    if tag in ("tuple", "list"):
        parts = [_closure(s, constants, device) for s in spec[1]]
        ctor = tuple if tag == "tuple" else list
        return lambda o, leaves, a, kw: ctor(p(o, leaves, a, kw) for p in parts)
    if tag == "namedtuple":
        make, parts = spec[1]._make, [_closure(s, constants, device) for s in spec[2]]
        return lambda o, leaves, a, kw: make([p(o, leaves, a, kw) for p in parts])
    if tag == "select":  # a stored cond result, or the very array the path not taken kept (side_effects.Selection)
        pred, new, old = (_closure(s, constants, device) for s in spec[1:4])
        old_when = spec[4]
        return lambda o, leaves, a, kw: old(o, leaves, a, kw) if bool(pred(o, leaves, a, kw)) == old_when \
            else new(o, leaves, a, kw)
    if tag == "dict":
        keys = spec[1]
        parts = [_closure(s, constants, device) for s in spec[2]]
        return lambda o, leaves, a, kw: {k: p(o, leaves, a, kw) for k, p in zip(keys, parts)}
    raise ValueError(f"bad output spec {spec!r}")


def _device_view(value: Any, path: Sequence[ViewStep], device: DeviceOutputs | None) -> Any:
    """A returned view of a device argument (``x.T``, ``x[1:]``), made by the device backend."""
    if device is None:
        raise BackendError("returning a view of a device array argument needs the device backend's converters",
                           hint="compile with backend='cuda', or return a copy (.copy())")
    try:
        return device.view(value, path)
    except Exception as exc:
        op = next((s.op for s in path), "view")
        raise BackendError(f"cannot return this {op} view of a device array argument ({exc})",
                           hint="return a copy (.copy()) or a computed value instead of a view") from exc


def _python_scalar(value: Any, device: DeviceOutputs | None) -> Any:
    if type(value) is not np.ndarray and is_device_array(value):
        if device is None:
            raise BackendError("a Python scalar computed on the device needs the device backend's converters")
        value = np.asarray(device.to_host(value))
    if isinstance(value, np.ndarray | np.generic):
        return python_type(value.dtype)(value.item() if isinstance(value, np.ndarray) else value)
    return value
