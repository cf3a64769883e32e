"""Derivative rules (VJPs) of reductions, linear algebra, shape and indexing ops, keyed by op name.

A rule is ``rule(e, node, g, wants) -> [cotangent or None per input]`` (see :mod:`rules_elementwise`); shapes are
fitted to each input by the transform, so a rule may return any shape that broadcasts or sums to it.

Conventions worth knowing:

* ``max``/``min`` reductions: NumPy picks no winner among equal maxima, and the rule does not either: every
  position equal to the result shares the cotangent equally (``g / count``), as in JAX. With distinct values this
  is the ordinary one-hot gradient.
* ``var``/``std``: through their definition, ``var = sum((x - mean(x))**2) / (n - ddof)``: ``d var = 2 (x -
  mean) / (n - ddof)``, and ``std = sqrt(var)`` adds ``1 / (2 std)``.
* ``getitem`` of a slice writes the cotangent into zeros of the input's shape (``setitem``); a gather with index
  arrays scatter-adds it (``scatter_add``), so repeated indices accumulate, as they must.
* ``setitem`` passes the cotangent to the array outside the written positions and gathers it for the value; with
  repeated advanced indices (NumPy keeps the last write) every duplicate receives it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jitgraph.autodiff.emit import Emitter, dtype_of, shape_of
from jitgraph.autodiff.rules_elementwise import Rule
from jitgraph.ir.graph import Node


def _axes(node: Node) -> tuple[int, ...]:
    axis = node.attrs.get("axis")
    ndim = len(shape_of(node.inputs[0]))
    return tuple(range(ndim)) if axis is None else tuple(axis)


def _count(node: Node) -> int:
    shape = shape_of(node.inputs[0])
    return int(np.prod([shape[a] for a in _axes(node)], dtype=np.int64))


def _sum_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    x = node.inputs[0]
    return [e.op("broadcast_to", e.expand_reduced(g, x, _axes(node), bool(node.attrs.get("keepdims"))),
                 shape=shape_of(x))]


def _mean_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    x = node.inputs[0]
    g = e.div(e.expand_reduced(g, x, _axes(node), bool(node.attrs.get("keepdims"))), float(_count(node)))
    return [e.op("broadcast_to", g, shape=shape_of(x))]


def _extremum_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    x, axes, keep = node.inputs[0], _axes(node), bool(node.attrs.get("keepdims"))
    # the tie mask as floats: it is a value the forward kernel hands to the backward, and a float mask keeps
    # that kernel's outputs one dtype (and the division by the count a float division)
    hit = e.op("astype", e.fn("equal", x, e.expand_reduced(node, x, axes, keep)), dtype=dtype_of(x))
    count = e.op("sum", hit, axis=axes, keepdims=True)
    return [e.mul(hit, e.div(e.expand_reduced(g, x, axes, keep), count))]


def _prod_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    # d prod / d x_i = prod / x_i: exact unless some x_i is 0 (then NaN/inf, a documented limitation)
    x, axes, keep = node.inputs[0], _axes(node), bool(node.attrs.get("keepdims"))
    return [e.div(e.expand_reduced(e.mul(g, node), x, axes, keep), x)]


def _var_grad(e: Emitter, node: Node, g: Node) -> Node:
    x, axes = node.inputs[0], _axes(node)
    keep = bool(node.attrs.get("keepdims"))
    centred = e.sub(x, e.op("mean", x, axis=axes, keepdims=True))
    dof = _count(node) - int(node.attrs.get("ddof", 0))
    scale = 2.0 / dof if dof > 0 else float("nan")  # NumPy's var is NaN/inf there too
    return e.mul(e.expand_reduced(g, x, axes, keep), e.mul(centred, scale))


def _var_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    return [_var_grad(e, node, g)]


def _std_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    return [_var_grad(e, node, e.div(e.mul(g, 0.5), node))]


# ---- linear algebra -------------------------------------------------------------------------------------------
def _matmul_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    """Through 2-D (batched) matrices: a 1-D operand becomes a row (left) or column (right) and back."""
    a, b = node.inputs
    a2 = e.reshape(a, (1,) + shape_of(a)) if len(shape_of(a)) == 1 else a
    b2 = e.reshape(b, shape_of(b) + (1,)) if len(shape_of(b)) == 1 else b
    batch = np.broadcast_shapes(shape_of(a2)[:-2], shape_of(b2)[:-2])
    g2 = e.reshape(g, tuple(batch) + (shape_of(a2)[-2], shape_of(b2)[-1]))
    ga = e.reshape(e.fit(e.op("matmul", g2, e.swap_last(b2)), shape_of(a2)), shape_of(a)) if wants[0] else None
    gb = e.reshape(e.fit(e.op("matmul", e.swap_last(a2), g2), shape_of(b2)), shape_of(b)) if wants[1] else None
    return [ga, gb]


def _dot_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    a, b = node.inputs
    if not shape_of(a) or not shape_of(b):  # a scalar operand: np.dot is multiplication
        return [e.mul(g, b) if wants[0] else None, e.mul(g, a) if wants[1] else None]
    if len(shape_of(b)) > 2:  # np.dot(a, b) sums a's last axis with b's second-to-last: an einsum
        letters = iter("abcdefghijklmnopqrstuvwxy")
        ta = "".join(next(letters) for _ in shape_of(a)[:-1]) + "z"
        tb = "".join(next(letters) for _ in shape_of(b)[:-2]) + "z" + next(letters)
        return _einsum_grads(e, [ta, tb], ta[:-1] + tb[:-2] + tb[-1], node.inputs, g, wants)
    return _matmul_rule(e, node, g, wants)


def _outer_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    a, b = node.inputs
    av, bv = e.reshape(a, (int(np.prod(shape_of(a))),)), e.reshape(b, (int(np.prod(shape_of(b))),))
    return [e.reshape(e.op("matmul", g, bv), shape_of(a)) if wants[0] else None,
            e.reshape(e.op("matmul", av, g), shape_of(b)) if wants[1] else None]


def _einsum_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    """The cotangent of operand k is the einsum of the output's cotangent with every other operand, onto k's
    letters; letters only operand k has (summed away in the forward) are broadcast back."""
    spec = node.attrs["subscripts"].replace(" ", "")
    lhs, _, out = spec.partition("->")
    terms = lhs.split(",")
    if "->" not in spec:
        out = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    return _einsum_grads(e, terms, out, node.inputs, g, wants)


def _einsum_grads(e: Emitter, terms: list[str], out: str, inputs: tuple[Node, ...], g: Node,
                  wants: tuple[bool, ...]) -> list[Node | None]:
    results: list[Node | None] = []
    for k, term in enumerate(terms):
        if not wants[k]:
            results.append(None)
            continue
        others = [t for i, t in enumerate(terms) if i != k]
        seen = set(out).union(*others) if others else set(out)
        unique = "".join(dict.fromkeys(term))  # a repeated letter (a diagonal, "ii->") once, where it first occurs
        kept = "".join(c for c in unique if c in seen)
        operands = [g] + [x for i, x in enumerate(inputs) if i != k]
        grad = e.op("einsum", *operands, subscripts=",".join([out, *others]) + "->" + kept)
        sizes = dict(zip(term, shape_of(inputs[k])))
        first = [term.index(c) == j for j, c in enumerate(term)]
        if kept != term:  # one axis per position: size 1 at repeats and at letters summed away, then broadcast
            grad = e.reshape(grad, tuple(sizes[c] if c in kept and f else 1 for c, f in zip(term, first)))
            grad = e.op("broadcast_to", grad, shape=shape_of(inputs[k]))
        for j, c in enumerate(term):  # a repeat reads the diagonal: the gradient lives on it, zero elsewhere
            if not first[j]:
                p, n = term.index(c), sizes[c]
                mask = np.eye(n, dtype=dtype_of(grad)).reshape(
                    tuple(n if q in (p, j) else 1 for q in range(len(term))))
                grad = e.mul(grad, e.const(mask))
        results.append(grad)
    return results


# ---- shapes ---------------------------------------------------------------------------------------------------
def _reshape_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    return [e.reshape(g, shape_of(node.inputs[0]))]


def _transpose_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    ndim = len(shape_of(node.inputs[0]))
    axes = node.attrs.get("axes")
    axes = tuple(reversed(range(ndim))) if axes is None else tuple(int(a) % ndim for a in axes)
    return [e.transpose(g, tuple(int(i) for i in np.argsort(axes)))]


def _broadcast_to_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    return [e.fit(g, shape_of(node.inputs[0]))]


def _slices(e: Emitter, g: Node, axis: int, sizes: Sequence[int], wants: tuple[bool, ...]) -> list[Node | None]:
    out: list[Node | None] = []
    start = 0
    for size, want in zip(sizes, wants):
        spec = (slice(None),) * axis + (slice(start, start + size),)
        out.append(e.op("getitem", g, spec=spec) if want else None)
        start += size
    return out


def _concatenate_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    axis = node.attrs.get("axis", 0)
    if axis is None:  # joined flattened: slice the flat cotangent, then give each piece its shape
        pieces = _slices(e, g, 0, [int(np.prod(shape_of(x))) for x in node.inputs], wants)
        return [None if p is None else e.reshape(p, shape_of(x)) for p, x in zip(pieces, node.inputs)]
    axis = int(axis) % len(shape_of(node))
    return _slices(e, g, axis, [shape_of(x)[axis] for x in node.inputs], wants)


def _stack_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    axis = int(node.attrs["axis"]) % len(shape_of(node))
    return [e.op("getitem", g, spec=(slice(None),) * axis + (i,)) if want else None for i, want in enumerate(wants)]


def _cumsum_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    """Each input element reaches every later output along the axis: the cotangent summed from the end, a cumsum of
    the reversed cotangent reversed back (``axis=None`` scanned the flattened input)."""
    x = node.inputs[0]
    axis = node.attrs["axis"]
    a = 0 if axis is None else int(axis) % len(shape_of(x))
    flip = (slice(None),) * a + (slice(None, None, -1),)
    back = e.op("getitem", e.op("cumsum", e.op("getitem", g, spec=flip), axis=a), spec=flip)
    return [e.reshape(back, shape_of(x))]


def _solve_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    """``x = solve(A, b)``: ``gb = solve(A.T, g)``, ``gA = -gb x.T`` (``-outer(gb, x)`` for a vector ``b``)."""
    a, b = node.inputs
    if len(shape_of(a)) != 2:
        raise NotImplementedError("a stack of matrices (only one 2-D matrix is differentiated)")
    gb = e.op("solve", e.transpose(a, (1, 0)), g)
    ga = None
    if wants[0]:
        ga = e.neg(e.op("outer", gb, node) if len(shape_of(b)) == 1 else
                   e.op("matmul", gb, e.transpose(node, (1, 0))))
    return [ga, gb if wants[1] else None]


# ---- indexing -------------------------------------------------------------------------------------------------
def _is_gather(node: Node, first_operand: int) -> bool:
    return any(len(shape_of(i)) > 0 for i in node.inputs[first_operand:])


def _getitem_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    x, *operands = node.inputs
    spec = node.attrs["spec"]
    zeros = e.zeros(shape_of(x), dtype_of(g))
    op = "scatter_add" if _is_gather(node, 1) else "setitem"
    return [e.op(op, zeros, g, *operands, spec=spec)] + [None] * len(operands)


def _setitem_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    _, value, *operands = node.inputs
    spec = node.attrs["spec"]
    gx = e.op("setitem", g, e.const(0.0), *operands, spec=spec) if wants[0] else None
    gv = _gathered(e, g, value, operands, spec) if wants[1] else None
    return [gx, gv] + [None] * len(operands)


def _scatter_add_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    _, value, *operands = node.inputs
    gv = _gathered(e, g, value, operands, node.attrs["spec"]) if wants[1] else None
    return [g if wants[0] else None, gv] + [None] * len(operands)


def _gathered(e: Emitter, g: Node, value: Node, operands: list[Node], spec: tuple) -> Node:
    """``g[spec]`` fitted to ``value`` (NumPy lets the value drop leading 1-dims of the target)."""
    part = e.op("getitem", g, *operands, spec=spec)
    vshape = shape_of(value)
    pshape = shape_of(part)
    while len(vshape) > len(pshape) and vshape[0] == 1:
        vshape = vshape[1:]
    part = e.fit(part, vshape)
    return e.reshape(part, shape_of(value))


STRUCTURAL_VJP: dict[str, Rule] = {
    "sum": _sum_rule,
    "mean": _mean_rule,
    "max": _extremum_rule,
    "min": _extremum_rule,
    "prod": _prod_rule,
    "var": _var_rule,
    "std": _std_rule,
    "matmul": _matmul_rule,
    "dot": _dot_rule,
    "outer": _outer_rule,
    "einsum": _einsum_rule,
    "reshape": _reshape_rule,
    "transpose": _transpose_rule,
    "broadcast_to": _broadcast_to_rule,
    "concatenate": _concatenate_rule,
    "stack": _stack_rule,
    "getitem": _getitem_rule,
    "setitem": _setitem_rule,
    "scatter_add": _scatter_add_rule,
    "cumsum": _cumsum_rule,
    "solve": _solve_rule,
}
