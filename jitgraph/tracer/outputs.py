"""Rebuilding a compiled call's return value from the graph's outputs, the arguments and traced constants.

The tracer records *how* the Python return value is made (an output spec: graph outputs, arguments returned as
they are, views of arguments, constants, containers of these); this module turns that spec once into a small
closure, so a cached call only runs the closure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.backends.cuda import is_device_array
from jitgraph.errors import BackendError
from jitgraph.ir.types import python_type


def build_output(spec: Any, constants: list[Any]) -> Any:
    """Compile an output spec into ``build(outs, leaves, args, kwargs) -> return value``."""
    tag = spec[0]
    if tag == "out":
        k, kind = spec[1], spec[2]
        if kind == "array":  # device results (backend="cuda") come back as they are
            return lambda o, leaves, a, kw: o[k] if type(o[k]) is np.ndarray or is_device_array(o[k]) \
                else np.asarray(o[k])
        if kind == "scalar":
            return lambda o, leaves, a, kw: o[k][()] if type(o[k]) is np.ndarray else o[k]
        return lambda o, leaves, a, kw: _python_scalar(o[k])
    if tag == "leaf":
        i = spec[1]
        return lambda o, leaves, a, kw: leaves[i]
    if tag == "view":
        i, path = spec[1], spec[2]
        from jitgraph.ir.ops import OPS

        steps = [(OPS[s.op].impl, s.kwargs) for s in path]

        def view(o: Any, leaves: list[Any], a: tuple, kw: dict[str, Any]) -> Any:
            value = leaves[i]
            if type(value) is not np.ndarray and is_device_array(value):
                return _device_view(value, path)
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
        parts = [build_output(s, constants) for s in spec[1]]
        ctor = tuple if tag == "tuple" else list
        return lambda o, leaves, a, kw: ctor(p(o, leaves, a, kw) for p in parts)
    if tag == "namedtuple":
        make, parts = spec[1]._make, [build_output(s, constants) for s in spec[2]]
        return lambda o, leaves, a, kw: make([p(o, leaves, a, kw) for p in parts])
    if tag == "dict":
        keys = spec[1]
        parts = [build_output(s, constants) for s in spec[2]]
        return lambda o, leaves, a, kw: {k: p(o, leaves, a, kw) for k, p in zip(keys, parts)}
    raise ValueError(f"bad output spec {spec!r}")


def _device_view(value: Any, path: Any) -> Any:
    """A returned view of a device argument (``x.T``, ``x[1:]``), made on the device as NumPy makes it on the host."""
    from jitgraph.backends.cuda import runtime

    for step in path:
        attrs = step.kwargs
        try:
            if step.op == "transpose":  # a view (Numba's own transpose copies, recompiling a kernel each time)
                value = runtime.transpose(value, tuple(attrs["axes"]))
            elif step.op == "reshape":
                value = value.reshape(tuple(attrs["shape"]))
            elif step.op == "getitem" and all(isinstance(e, int | slice) for e in attrs["spec"]):
                value = value[tuple(attrs["spec"])]
            else:
                raise NotImplementedError(step.op)
        except Exception as exc:
            raise BackendError(f"cannot return this {step.op} view of a device array argument ({exc})",
                               hint="return a copy (.copy()) or a computed value instead of a view") from exc
    return value


def _python_scalar(value: Any) -> Any:
    if type(value) is not np.ndarray and is_device_array(value):
        from jitgraph.backends.cuda import runtime

        value = np.asarray(runtime.to_host(value))
    if isinstance(value, np.ndarray | np.generic):
        return python_type(value.dtype)(value.item() if isinstance(value, np.ndarray) else value)
    return value
