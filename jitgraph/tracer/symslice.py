"""Slices with symbolic bounds (``a[i, :i]``, ``a[i:i + k]``) inside loop regions, lowered to loops.

Design (the smallest sound one): the IR has no dynamic shapes. A view whose length depends on a symbolic
integer exists only here, in the front end, as a :class:`SymView`; every operation on it is *lowered* when it is
recorded into scalar code in ``loop`` regions, so the graph stays statically typed and the loop code generator
sees ordinary element reads and writes:

* bounds get Python's slice semantics exactly (negative bounds count from the end, then clamp to ``[0, n]``) as
  scalar IR ops, so no proof about the induction variable is needed for correctness;
* operands whose lengths must agree (``np.dot(u, v)``, ``u + v``, slice assignment) get a ``check`` op, which
  raises NumPy's ValueError at run time when they do not;
* an assignment ``x[sym] = expr`` reads every operand from the value of ``x`` *before* the statement (a loop
  invariant), as NumPy evaluates the right-hand side first, except operands that are exactly the target view
  (``x[a:b] /= s``), which are read from the array being updated; the code generator then decides whether the
  snapshot needs a real copy.

Bounds may be any traced integer scalar: the loop's induction variable, or array data (``indptr[i]``, the CSR
idiom); a bound of another integer dtype is converted to int64 first (a uint64 one clamped to the dim size first,
so a huge value cannot wrap to a negative one). A 1-D integer view may index another 1-D array (:class:`Gather`,
``x[indices[start:end]]``): its element is read with a scalar ``getitem``, which the code generator checks and
wraps NumPy's way (IndexError out of range), so no index array is materialised.

Supported: 1-D and 2-D views (any number of fixed scalar indices), gathers through a 1-D view, elementwise ops of
views and scalars, ``np.outer`` of two 1-D views, ``np.dot``/``sum`` reductions, and slice assignment. Anything
else should make the tracer fall back with a reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitgraph.ir.graph import GraphBuilder, Node
from jitgraph.ir.ops import get_op
from jitgraph.ir.ops.control import build_loop
from jitgraph.ir.ops.indexing import Operand
from jitgraph.ir.types import TensorType


@dataclass(frozen=True)
class Range:
    """A sliced dim: elements ``start .. stop - 1`` (normalised bounds, so ``0 <= start``, ``stop <= n``),
    ``length = max(stop - start, 0)``; ``raw`` is the start as written (kept for the disjointness test)."""

    start: Node
    stop: Node
    length: Node
    raw: Node | int | None = None


@dataclass(frozen=True)
class SymView:
    """``base[index]``: one entry per base dim, a scalar index node or a :class:`Range`."""

    base: Node
    index: tuple[Node | Range, ...]

    @property
    def ranges(self) -> list[Range]:
        return [e for e in self.index if isinstance(e, Range)]


@dataclass(frozen=True)
class Gather:
    """``base[index]`` for a 1-D ``base`` and a 1-D integer ``index`` view of symbolic length: element ``k`` is
    ``base[index[k]]`` (NumPy's fancy indexing, element by element)."""

    base: Node
    index: SymView


@dataclass(frozen=True)
class Map:
    """An elementwise op over views and scalars (operands broadcast only scalar-to-view)."""

    op: str
    args: tuple[Any, ...]
    strict: bool = False  # np.dot: lengths must be equal, no broadcasting


@dataclass(frozen=True)
class Outer:
    """``np.outer(u, v)`` of two 1-D views."""

    u: SymView
    v: SymView


def _scalar(b: GraphBuilder, value: Node | int) -> Node:
    return value if isinstance(value, Node) else b.const(int(value))


def bound_error(t: TensorType) -> TypeError | None:
    """The TypeError NumPy raises for a slice bound of type ``t`` (a traced value), or None when it is valid."""
    if t.shape != ():
        return TypeError("only integer scalar arrays can be converted to a scalar index")
    if t.dtype.kind not in "iu":
        return TypeError("slice indices must be integers or None or have an __index__ method")
    return None


def _as_int64(b: GraphBuilder, bound: Node, n: int) -> tuple[Node, bool]:
    """A traced integer (a slice bound or a gather index into a dim of size ``n``) as int64, and whether it is known
    >= 0 (unsigned). A uint64 one is first clamped to ``n``: a slice clamps it anyway and a gather raises
    IndexError for ``n`` as for any larger value, while a cast first would turn a value past 2**63 negative."""
    dtype = bound.tensor_type.dtype
    if dtype == np.int64:
        return bound, False
    if dtype.kind == "u" and dtype.itemsize == 8:
        bound = b.op("minimum", bound, b.const(np.uint64(n)))
    return b.op("astype", bound, dtype=np.dtype(np.int64)), dtype.kind == "u"


def _normalise(b: GraphBuilder, bound: Node | int | None, default: int, n: int, nonneg: frozenset[Node]) -> Node:
    """Python's rule for a step-1 slice bound: negative counts from the end, then clamp into [0, n].

    Memoised per builder, so two views ``a[k + 1:]`` and ``b[k + 1:]`` share one start node (the lowering then
    indexes both with the same induction variable, which the code generator proves in bounds)."""
    cache = b.__dict__.setdefault("_symslice_bounds", {})
    written = bound
    key = (id(bound) if isinstance(bound, Node) else bound, default, n)
    if key in cache:
        return cache[key]
    if bound is None:
        result = b.const(default)
    elif not isinstance(bound, Node):
        value = int(bound) + n if int(bound) < 0 else int(bound)
        result = b.const(min(max(value, 0), n))
    else:
        bound, unsigned = _as_int64(b, bound, n)
        zero, size = b.const(0), b.const(n)
        offset = _offset(written)
        if unsigned or (offset is not None and offset[1] >= 0 and (offset[0] is None or offset[0] in nonneg)):
            result = b.op("minimum", bound, size)  # provably >= 0: only the clamp to n remains
        else:
            wrapped = b.op("where", b.op("less", bound, zero), b.op("add", bound, size), bound)
            result = b.op("minimum", b.op("maximum", wrapped, zero), size)
    cache[key] = result
    b.__dict__.setdefault("_symslice_keep", []).append(written)  # keep ids in the key alive and unique
    return result


def sym_view(b: GraphBuilder, x: Node, key: Sequence[Node | int | slice],
             nonneg: frozenset[Node] = frozenset()) -> SymView:
    """Record ``x[key]`` where ``key`` holds scalar indices and step-1 slices with int/Node/None bounds.

    ``nonneg``: symbols proven >= 0 (enclosing induction variables); their bounds skip the wrap-around ops."""
    shape = x.tensor_type.shape
    entries: list[Node | Range] = []
    for dim, k in enumerate(tuple(key) + (slice(None),) * (len(shape) - len(key))):
        if isinstance(k, slice):
            if k.step not in (None, 1):
                raise NotImplementedError("symbolic slices with a step are not supported")
            start = _normalise(b, k.start, 0, shape[dim], nonneg)
            stop = _normalise(b, k.stop, shape[dim], shape[dim], nonneg)
            cache = b.__dict__.setdefault("_symslice_lengths", {})
            if (start, stop) not in cache:
                cache[(start, stop)] = b.op("maximum", b.op("subtract", stop, start), b.const(0))
            length = cache[(start, stop)]
            entries.append(Range(start, stop, length, k.start))
        else:
            entries.append(_scalar(b, k))
    return SymView(x, tuple(entries))


def gather(base: Node, index: Any) -> Gather:
    """``base[index]`` with ``index`` a symbolic-length view (``x[indices[start:end]]``); raises
    NotImplementedError with the reason for what is not supported, IndexError where NumPy would."""
    if not isinstance(index, SymView) or len(index.ranges) != 1 or len(index.index) != index.base.tensor_type.ndim:
        raise NotImplementedError("indexing with an expression of symbolic length (only a 1-D slice gathers)")
    dtype = index.base.tensor_type.dtype
    if dtype.kind not in "iu":
        if dtype.kind == "b":
            raise NotImplementedError("a boolean mask of symbolic length")
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if base.tensor_type.ndim != 1:
        raise NotImplementedError("a gather of rows (an index slice of symbolic length into an N-D array)")
    return Gather(base, index)


def lengths(e: Any) -> list[Node]:
    if isinstance(e, SymView | Gather):
        index = e.index if isinstance(e, Gather) else e
        return [r.length for r in index.ranges]
    if isinstance(e, Outer):
        return lengths(e.u) + lengths(e.v)
    if isinstance(e, Map):
        shaped = [lengths(a) for a in e.args if not isinstance(a, Node)]
        return shaped[0] if shaped else []
    return []


def _agreeing(b: GraphBuilder, e: Any, want: list[Node], broadcast: bool) -> list[Node]:
    """Run-time predicates that every operand of ``e`` has the lengths ``want`` (or 1, where NumPy broadcasts)."""
    preds: list[Node] = []
    operands = e.args if isinstance(e, Map) else (e,)
    for a in operands:
        if isinstance(a, Map):
            preds += _agreeing(b, a, want, broadcast)
            continue
        got = lengths(a)
        if not got:
            continue
        if len(got) != len(want):
            raise NotImplementedError("operands of a symbolic-slice expression have different ranks")
        for g, w in zip(got, want):
            if g is not w:
                same = b.op("equal", g, w)
                preds.append(b.op("logical_or", same, b.op("equal", g, b.const(1))) if broadcast else same)
    return preds


def _guarded(b: GraphBuilder, ranges: list[tuple[Node, Node, Node]], preds: list[Node],
             message: str) -> list[tuple[Node, Node, Node]]:
    """Thread the checks into the first loop bound, so they run before the loop and stay live."""
    if not preds or not ranges:
        return ranges
    start, stop, length = ranges[0]
    for pred in preds:
        stop = b.op("check", stop, pred, message=message)
    return [(start, stop, length)] + ranges[1:]


def _offset(node: Node | int | None) -> tuple[Node | None, int] | None:
    """``node`` as (symbol, constant offset): ``k`` -> (k, 0), ``k + 1`` -> (k, 1), ``3`` -> (None, 3)."""
    if node is None:
        return None
    if isinstance(node, int):
        return (None, node)
    if node.op == "const":
        return (None, int(node.attrs["value"]))
    if node.op == "add" and node.inputs[1].op == "const":
        return (node.inputs[0], int(node.inputs[1].attrs["value"]))
    return (node, 0)


def disjoint(u: SymView, v: SymView, nonneg: frozenset[Node] = frozenset()) -> bool:
    """Whether two views of one array provably share no element: in some dim, a fixed index lies below a range
    that starts after it (``A[k + 1:, k]`` vs ``A[k + 1:, k + 1:]``), or two fixed indices differ by a constant.
    Symbols must be in ``nonneg`` (proven >= 0, e.g. the induction variable of ``range(0, n)``) and offsets
    non-negative, so negative-index wrap-around cannot fool it."""
    for a, b in zip(u.index, v.index):
        if isinstance(a, Range) and isinstance(b, Range):
            continue
        if isinstance(a, Range):
            a, b = b, a
        fixed = _offset(a)
        other = _offset(b.raw) if isinstance(b, Range) else _offset(b)
        if fixed is None or other is None or fixed[0] is not other[0] or fixed[1] < 0 or other[1] < 0:
            continue
        if fixed[0] is not None and fixed[0] not in nonneg:
            continue
        if isinstance(b, Range) and other[1] > fixed[1]:
            return True
        if not isinstance(b, Range) and other[1] != fixed[1]:
            return True
    return False


def element_type(e: Any) -> TensorType:
    """The scalar type of one element of ``e``, from the op table's rules (no nodes recorded)."""
    if isinstance(e, Node):
        return e.tensor_type
    if isinstance(e, SymView | Gather):
        return TensorType((), e.base.tensor_type.dtype)
    if isinstance(e, Outer):
        return get_op("multiply").infer((element_type(e.u), element_type(e.v)), {}, ())
    return get_op(e.op).infer(tuple(element_type(a) for a in e.args), {}, ())


def _element(b: GraphBuilder, e: Any, idx: list[Node], target: SymView | None, carried: Node | None,
             nonneg: frozenset[Node] = frozenset()) -> Node:
    if isinstance(e, Node):
        return e
    if isinstance(e, Outer):
        return b.op("multiply", _element(b, e.u, idx[:1], target, carried, nonneg),
                    _element(b, e.v, idx[1:], target, carried, nonneg))
    if isinstance(e, Map):
        return b.op(e.op, *(_element(b, a, idx, target, carried, nonneg) for a in e.args))
    if isinstance(e, Gather):  # the base is read as it was before an assignment (NumPy evaluates it first)
        position, _ = _as_int64(b, _element(b, e.index, idx, target, carried, nonneg), e.base.tensor_type.shape[0])
        return b.op("getitem", e.base, position, spec=(Operand(0),))  # checked and wrapped by the code generator
    same_or_apart = target is not None and e.base is target.base and (e == target or disjoint(e, target, nonneg))
    source = carried if (carried is not None and same_or_apart) else e.base
    operands, k = [], 0
    for entry in e.index:
        if isinstance(entry, Range):
            operands.append(_shift(b, idx[k], entry.start, entry.length))
            k += 1
        else:
            operands.append(entry)
    return b.op("getitem", source, *operands, spec=tuple(Operand(j) for j in range(len(operands))))


def _shift(b: GraphBuilder, position: tuple[Node, Node, Node], start: Node, length: Node) -> Node:
    """The element index, in a range (``start``, ``length``), for the loop position ``(index, loop start, loop
    length)``: the induction variable itself when the ranges coincide (proven in bounds by the code generator),
    else ``start + (index - loop start)``, times 0 when the range has length 1 (NumPy broadcasting)."""
    index, loop_start, loop_length = position
    if start is loop_start and length is loop_length:
        return index
    offset = b.op("subtract", index, loop_start)
    if length is not loop_length:
        offset = b.op("multiply", offset, b.op("minimum", b.op("subtract", length, b.const(1)), b.const(1)))
    return b.op("add", start, offset)


def _nest(b: GraphBuilder, ranges: list[tuple[Node, Node, Node]], init: list[Node], body: Any,
          idx: tuple[tuple[Node, Node, Node], ...] = (), **attrs: Any) -> list[Node]:
    """``for r0 in range(start0, stop0): for r1 ...`` carrying ``init``; ``body(rb, positions, *carried)``."""
    if not ranges:
        return list(body(b, list(idx), *init))
    start, stop, length = ranges[0]

    def level(rb: GraphBuilder, k: Node, *carried: Node) -> list[Node]:
        return _nest(rb, ranges[1:], list(carried), body, idx + ((k, start, length),), **attrs)

    return build_loop(b, start, stop, 1, init, level, **attrs)


def _loop_ranges(e: Any) -> list[tuple[Node, Node, Node]]:
    if isinstance(e, Gather):
        return _loop_ranges(e.index)
    if isinstance(e, SymView):
        return [(r.start, r.stop, r.length) for r in e.ranges]
    if isinstance(e, Outer):
        return _loop_ranges(e.u) + _loop_ranges(e.v)
    if isinstance(e, Map):
        shaped = [_loop_ranges(a) for a in e.args if not isinstance(a, Node)]
        return shaped[0] if shaped else []
    return []


def reduce_sum(b: GraphBuilder, e: Any, dtype: np.dtype | None = None) -> Node:
    """``np.sum(e)`` (or ``np.dot`` when ``e`` is a product Map) as nested loops with a carried accumulator."""
    strict = isinstance(e, Map) and e.strict
    ranges = _guarded(b, _loop_ranges(e), _agreeing(b, e, lengths(e), not strict),
                      "shapes not aligned" if strict else "operands could not be broadcast together")
    acc_type = np.dtype(dtype) if dtype is not None else np.sum(np.zeros(1, element_type(e).dtype)).dtype
    acc0 = b.const(acc_type.type(0))

    def body(rb: GraphBuilder, idx: list[Node], acc: Node) -> list[Node]:
        value = rb.op("add", acc, _element(rb, e, idx, None, None))
        return [value if value.tensor_type.dtype == acc_type else rb.op("astype", value, dtype=acc_type)]

    # np.dot leaves the summation order unspecified (BLAS blocks it), so the backend may keep partial sums.
    (total,) = _nest(b, ranges, [acc0], body, **({"reassociate": True} if strict else {}))
    return total


def dot(b: GraphBuilder, u: SymView | Gather, v: SymView | Gather) -> Node:
    if len(lengths(u)) != 1 or len(lengths(v)) != 1:
        raise NotImplementedError("np.dot of symbolic slices is supported for 1-D slices")
    product = Map("multiply", (u, v), strict=True)
    dtype = np.result_type(u.base.tensor_type.dtype, v.base.tensor_type.dtype)
    return reduce_sum(b, product, dtype)


def assign(b: GraphBuilder, target: SymView, value: Any, nonneg: frozenset[Node] = frozenset()) -> Node:
    """``target.base[target.index] = value``: the new value of the base array (functional, like setitem).

    ``nonneg``: symbols the caller has proven >= 0 (enclosing induction variables), for :func:`disjoint`."""
    preds = _agreeing(b, value, [r.length for r in target.ranges], True) if lengths(value) else []
    ranges = _guarded(b, _loop_ranges(target), preds, "could not broadcast input array into the slice")
    dtype = target.base.tensor_type.dtype

    def body(rb: GraphBuilder, idx: list[Node], x: Node) -> list[Node]:
        element = _element(rb, value, idx, target, x, frozenset(nonneg))
        if element.tensor_type.dtype != dtype:
            element = rb.op("astype", element, dtype=dtype)
        operands, k = [], 0
        for entry in target.index:
            if isinstance(entry, Range):
                operands.append(_shift(rb, idx[k], entry.start, entry.length))
                k += 1
            else:
                operands.append(entry)
        return [rb.op("setitem", x, element, *operands, spec=tuple(Operand(j) for j in range(len(operands))))]

    (new,) = _nest(b, ranges, [target.base], body)
    return new
