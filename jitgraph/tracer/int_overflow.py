"""NumPy's OverflowError for a Python int that does not fit the integer dtype it meets (NEP 50), found at trace time
on prototypes (``TraceContext.op`` asks before recording an op)."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.ops.rules import proto


def python_int_overflow(name: str, inputs: tuple[Node, ...], attrs: dict[str, Any]) -> BaseException | None:
    """NumPy's error for a Python int that does not fit the integer dtype it meets (``int8_array + 300`` raises
    OverflowError under NEP 50; so does storing it, ``uint8_array[...] = -1``). Types alone cannot tell -- the rule
    depends on the value -- so elementwise ops and stores with Python int constants are tried on prototypes holding
    the real values, as NumPy would run them."""
    if name == "setitem":  # x[i] = s: whatever the index, NumPy converts s to the array's dtype first
        target, value = inputs[0], inputs[1]
        if value.op != "const" or not value.tensor_type.weak or type(value.attrs["value"]) is not int:
            return None
        try:
            np.zeros((), target.tensor_type.dtype)[...] = value.attrs["value"]
        except OverflowError as exc:
            return exc
        return None
    if OPS[name].kind is not OpKind.ELEMENTWISE:
        return None
    ints = [i for i in inputs if i.op == "const" and i.tensor_type.weak and type(i.attrs["value"]) is int]
    # bool arrays too: NumPy converts the Python int to the default int there, which fails beyond int64
    if not ints or not any(i.tensor_type.dtype.kind in "biu" and not i.tensor_type.weak for i in inputs):
        return None
    args = [i.attrs["value"] if i in ints else proto(i.tensor_type, ()) for i in inputs]
    try:
        with np.errstate(all="ignore"):
            OPS[name].impl(*args, **attrs)
    except OverflowError as exc:
        return exc
    except Exception:  # noqa: BLE001 - any other complaint was already raised by the op's type rule
        return None
    return None
