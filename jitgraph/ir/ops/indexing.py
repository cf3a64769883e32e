"""Indexing: basic and advanced ``getitem``, functional ``setitem`` and unbuffered ``scatter_add``.

An index is the attr ``spec``: a tuple of ``int``, ``slice``, ``None``, ``Ellipsis`` and :class:`Operand` entries,
where ``Operand(k)`` stands for the k-th index operand of the node (an integer array, or a runtime integer
scalar). ``x[idx] -= 1`` is recorded NumPy's way, as ``setitem(x, getitem(x, idx) - 1, idx)``, which gives the
buffered "last write wins" semantics for repeated indices; ``np.add.at`` is the unbuffered ``scatter_add``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from jitgraph.errors import TypeInferenceError, UnsupportedError
from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import broadcast, type_error
from jitgraph.ir.symbols import SymbolicSizeError, is_size_symbol, is_symbolic, slice_length
from jitgraph.ir.types import TensorType, type_of


@dataclass(frozen=True)
class Operand:
    """Placeholder in an index spec for the node's k-th index operand."""

    k: int

    def __repr__(self) -> str:
        return f"#{self.k}"


def split_index(index: tuple[Any, ...], is_operand: Any) -> tuple[list[Any], tuple[Any, ...]]:
    """Split an index written with graph values in it into ``(operands, spec)`` for getitem/setitem.

    Entries for which ``is_operand(entry)`` holds become ``Operand(k)`` placeholders, in order; everything else
    (ints, slices, None, ...) stays in the spec. Code that builds graphs by hand uses this so ``x[i, 2:]`` reads the
    same whether ``i`` is a constant or a node.
    """
    operands: list[Any] = []
    spec: list[Any] = []
    for entry in index:
        if is_operand(entry):
            spec.append(Operand(len(operands)))
            operands.append(entry)
        else:
            spec.append(entry)
    return operands, tuple(spec)


def _index_error(message: str) -> Exception:
    return type_error(f"index: {message}", IndexError(message))


def expand_spec(ndim: int, spec: tuple[Any, ...]) -> tuple[Any, ...]:
    """Replace ``...`` (or the implicit trailing ``...``) by full slices so every entry lines up with a dim."""
    consumed = sum(1 for e in spec if e is not None and e is not Ellipsis)
    if sum(1 for e in spec if e is Ellipsis) > 1:
        raise _index_error("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise _index_error(f"too many indices for array: array is {ndim}-dimensional, but {consumed} were indexed")
    fill = (slice(None),) * (ndim - consumed)
    if Ellipsis in spec:
        i = spec.index(Ellipsis)
        return spec[:i] + fill + spec[i + 1:]
    return spec + fill


def index_shape(shape: tuple[int, ...], spec: tuple[Any, ...], operands: tuple[TensorType, ...]) -> tuple[int, ...]:
    """NumPy's result shape for ``x[spec]``, advanced-index placement rules included."""
    for t in operands:
        if t.dtype.kind == "b":  # valid NumPy, but the result's shape depends on the data
            raise UnsupportedError("boolean mask indexing has a data-dependent shape; the IR has no op for it",
                                   hint="np.nonzero/np.where on the mask runs eagerly; index with integers instead")
        if t.dtype.kind not in "iu":
            raise _index_error("arrays used as indices must be of integer (or boolean) type")
    full = expand_spec(len(shape), tuple(spec))
    advanced = any(isinstance(e, Operand) and operands[e.k].ndim > 0 for e in full)
    out: list[Any] = []
    adv_shapes: list[tuple[int, ...]] = []
    adv_positions: list[int] = []
    dim = 0
    for pos, entry in enumerate(full):
        if entry is None:
            out.append(1)
            continue
        size = shape[dim]
        if isinstance(entry, bool | np.bool_):  # x[True] adds an axis in NumPy; nothing records it yet
            raise UnsupportedError("boolean scalar index entries are not supported in the IR",
                                   hint="index with None (np.newaxis) instead")
        if isinstance(entry, int | np.integer) and is_size_symbol(size):
            if not -2 <= entry <= 1:  # a symbolic size is at least 2: x[0], x[1], x[-1], x[-2] are in range
                raise SymbolicSizeError(f"whether index {entry} is in range of a dimension of size {size}")
            if advanced:
                adv_shapes.append(())
                adv_positions.append(pos)
                out.append("adv")
        elif isinstance(entry, int | np.integer):
            if not -size <= entry < size:
                raise _index_error(f"index {entry} is out of bounds for axis {dim} with size {size}")
            if advanced:
                adv_shapes.append(())
                adv_positions.append(pos)
                out.append("adv")
        elif isinstance(entry, slice) and is_size_symbol(size):
            out.append(slice_length(size, entry))  # ``x[:, j]``, ``x[::-1]``, ``x[1:-1]`` (ir/symbols.py)
        elif isinstance(entry, slice):
            try:
                out.append(len(range(*entry.indices(size))))
            except (ValueError, TypeError) as exc:  # step 0, non-integer bounds: NumPy raises the same
                raise type_error(f"index: {exc}", exc) from exc
        elif isinstance(entry, Operand):
            if advanced:
                adv_shapes.append(operands[entry.k].shape)
                adv_positions.append(pos)
                out.append("adv")
        else:
            raise _index_error(f"unsupported index entry {entry!r}")
        dim += 1
    if not advanced:
        return tuple(out)
    try:
        bshape = tuple(broadcast(adv_shapes, "index")) if any(is_symbolic(s) for s in adv_shapes) else \
            tuple(np.broadcast_shapes(*adv_shapes))
    except (ValueError, TypeInferenceError):
        raise _index_error("shape mismatch: indexing arrays could not be broadcast together with shapes "
                           + " ".join(str(s) for s in adv_shapes)) from None
    adjacent = adv_positions == list(range(adv_positions[0], adv_positions[0] + len(adv_positions)))
    basic = [d for d in out if d != "adv"]
    if adjacent:
        first = out.index("adv")
        return tuple(basic[:first]) + bshape + tuple(basic[first:])
    return bshape + tuple(basic)


def build_index(spec: tuple[Any, ...], operands: tuple[Any, ...]) -> tuple[Any, ...]:
    def entry(e: Any) -> Any:
        if isinstance(e, Operand):
            value = operands[e.k]
            return int(value) if np.ndim(value) == 0 else value
        return e

    return tuple(entry(e) for e in spec)


def getitem_is_view(types: tuple[TensorType, ...], attrs: Any) -> bool:
    """NumPy's rule: basic indexing gives a view, except that a full integer index gives a scalar (a copy);
    any integer-array operand makes it advanced indexing, which always copies."""
    x, *operands = types
    if any(t.ndim > 0 for t in operands):
        return False
    spec = tuple(attrs["spec"])
    integer = all(isinstance(e, Operand) or (isinstance(e, int | np.integer) and not isinstance(e, bool))
                  for e in spec)
    return not (integer and len(spec) == x.ndim)


def _infer_getitem(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    x, *operands = types
    shape = index_shape(x.shape, attrs["spec"], tuple(operands))
    if not getitem_is_view(types, attrs):
        layout = "C"
    elif all(e is Ellipsis or e == slice(None) or e == slice(None, None, 1) for e in attrs["spec"]):
        layout = x.layout  # x[...], x[:]: the same memory, the same promise
    else:
        layout = "S"  # even a same-shape view may be reversed (x[::-1]) or stepped
    return TensorType(shape, x.dtype, layout=layout)


def _infer_setitem(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    x, value, *operands = types
    target = index_shape(x.shape, attrs["spec"], tuple(operands))
    vshape = value.shape
    while len(vshape) > len(target) and vshape[0] == 1:
        vshape = vshape[1:]
    if broadcast([vshape, target], "setitem") != target:
        err = ValueError(f"could not broadcast input array from shape {value.shape} into shape {target}")
        raise type_error(f"setitem: {err}", err)
    if value.dtype.kind == "c" and x.dtype.kind != "c":
        err = TypeError("can't convert complex to float")
        raise type_error(f"setitem: {err}", err)
    return x.with_(layout="C", weak=False)


def _getitem(x: Any, *operands: Any, spec: tuple[Any, ...]) -> Any:
    return np.asarray(x)[build_index(spec, operands)]


def _setitem(x: Any, value: Any, *operands: Any, spec: tuple[Any, ...]) -> Any:
    out = np.array(x, copy=True)
    out[build_index(spec, operands)] = value
    return out


def _scatter_add(x: Any, value: Any, *operands: Any, spec: tuple[Any, ...]) -> Any:
    out = np.array(x, copy=True)
    # Give the values the full indexed shape first. NumPy's fast ufunc.at path assumes values and index arrays
    # are 1-D alike: with a 2-D index array and 1-D values (np.add.at(x, [[1, 1], [1, 0]], [a, b])) NumPy 2.4
    # reads past the end of the values (garbage results). Broadcasting explicitly is what the docs promise anyway.
    # Python scalars stay as they are (NEP 50: weak), and 0-d values take no fast path.
    if isinstance(value, np.ndarray) and value.ndim > 0:
        target = index_shape(out.shape, spec, tuple(type_of(o) for o in operands))
        while value.ndim > len(target) and value.shape[0] == 1:
            value = value[0]
        value = np.broadcast_to(value, target)
    np.add.at(out, build_index(spec, operands), value)
    return out


define(Op("getitem", OpKind.INDEXING, _infer_getitem, _getitem, is_view=True, view_rule=getitem_is_view,
          doc="x[spec]; a view when no operand is an array (basic indexing), a gather otherwise"))
define(Op("setitem", OpKind.INDEXING, _infer_setitem, _setitem,
          doc="a copy of x with x[spec] = value (buffered: repeated indices keep the last write)"))
define(Op("scatter_add", OpKind.INDEXING, _infer_setitem, _scatter_add,
          doc="np.add.at(copy of x, spec, value): unbuffered, repeated indices accumulate"))
