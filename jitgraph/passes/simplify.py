"""Algebraic simplification: identities that are exact in IEEE arithmetic *as NumPy computes them*, as data.

Every rule below returns exactly the bits eager NumPy would, for every input including -0.0, NaN and +-inf.
The engine (``rewrite.py``) additionally declines any replacement whose dtype, shape or weakness differs, which
is what "only where the dtype and broadcast shape do not change" means for ``x*1``, ``x+0`` and the rest.

Exactness notes (the tests check each with special values):

* ``x * 1 -> x``, ``x / 1 -> x``: exact for bool/int/float ``x``. Not for complex: NumPy multiplies
  ``(inf+1j) * (1+0j)`` out in full and gets ``inf+nanj``.
* ``x + 0``: **not** exact for floats, since ``-0.0 + 0.0 == +0.0``. So: ``x + 0 -> x`` for bool/int ``x`` only;
  for floats the rule needs a zero with its sign bit set (``x + -0.0 -> x`` is exact, ``-0.0 + -0.0 == -0.0``).
  An integer-typed zero converts to +0.0, so it does not qualify.
* ``x - 0 -> x``: exact for integers, and for floats when the zero is +0.0 (``x - +0.0`` is ``x + -0.0``).
  Complex adds and subtracts componentwise, so the same sign rules apply to both parts.
* ``--x -> x``: exact for every dtype (integer negation wraps, and wraps back).
* ``transpose(transpose(x))`` composes into one transpose, or ``x`` for the identity; ``reshape`` chains collapse
  to the last reshape (C-order reshapes compose); identity reshapes/transposes/broadcasts vanish. All are views.
* ``x ** 2 -> x * x``, ``x ** 1 -> x``, ``x ** 0.5 -> sqrt(x)``: only for a *single-element* constant exponent.
  NumPy's float32/float64 power loop has a fast path for an exponent broadcast with stride 0 that computes
  exactly ``in1 * in1``, ``in1`` and ``sqrt(in1)`` -- which is why eager ``x ** 0.5`` gives ``sqrt(-0.0) == -0.0``
  and ``nan`` for ``-inf`` where C's ``pow`` gives +0.0 and +inf. With an *array* exponent NumPy calls ``pow``,
  which is not even correctly rounded, so no rule fires. float16 has no fast path: ``x ** 2`` is still exact
  there (the square is exact in float32 and rounded once), but ``x ** 0.5`` is not (``pow(-0.0, .5) == +0.0``),
  so the sqrt rule is limited to float32/float64 results. Integer ``x ** 2`` wraps exactly like ``x * x``.
* ``exp(log(x))`` is not ``x`` (``log`` of a negative is NaN), and ``x * 0`` is not ``0`` (NaN, inf, ``-x * 0 ==
  -0.0``): deliberately no rules for them.
* ``np.outer(a, b) -> reshape(a, (n, 1)) * reshape(b, (1, m))``: NumPy's own definition of ``outer`` (the operands
  ravelled), the same multiply loop, so the same bits and dtype; as a broadcast product it fuses with its consumer.
* Broadcast minimisation ``(M1 + s1) + (M2 + s2) -> (M1 + M2) + (s1 + s2)`` (and the same for ``*``), where the
  ``s`` operands are smaller than the result, saves one full-size pass. Integer (and bool) arithmetic wraps
  modulo 2**n, so it is associative and commutative and the rule is exact when all operands share one non-weak
  dtype. For floats it changes rounding, so it only runs when ``options["reassociate"]`` is True.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from jitgraph import config
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.types import TensorType
from jitgraph.passes.fold_constants import FOLD
from jitgraph.passes.manager import register_pass
from jitgraph.passes.moments import MOMENT_RULES
from jitgraph.passes.rewrite import Emitter, Match, Rule, const, pat, rewrite, var


def _value(node: Node) -> np.ndarray:
    return np.asarray(node.attrs["value"])


def _const_is(test: Callable[[Any], Any]) -> Callable[[Node], bool]:
    def where(node: Node) -> bool:
        raw = node.attrs["value"]
        if isinstance(raw, bool | int | float):  # the common case (literals): skip NumPy's reductions
            return bool(test(raw))
        value = np.asarray(raw)
        return value.size > 0 and bool(np.all(test(value)))

    return where


def _scalar_const(target: float) -> Callable[[Node], bool]:
    """A single-element constant equal to ``target`` (what NumPy's power fast path sees with stride 0)."""

    def where(node: Node) -> bool:
        value = _value(node)
        return value.size == 1 and value.dtype.kind in "iuf" and value.reshape(()) == target

    return where


def _signed_zero(negative: bool) -> Callable[[Node], bool]:
    """A float/complex zero constant whose sign bit (both parts, for complex) is ``negative``."""

    def test(v: Any) -> Any:
        v = np.asarray(v)
        parts = (v.real, v.imag) if v.dtype.kind == "c" else (v,)
        return (v == 0) & np.logical_and.reduce([np.signbit(p) == negative for p in parts])

    def where(node: Node) -> bool:
        return _value(node).dtype.kind in "fc" and _const_is(test)(node)

    return where


def _kind(node: Node) -> str:
    return node.type.dtype.kind if isinstance(node.type, TensorType) else ""


def _x_if(kinds: str) -> Callable[[Emitter, Match], Node | None]:
    return lambda emit, m: m["x"] if _kind(m["x"]) in kinds else None


is_one = _const_is(lambda v: v == 1)
is_zero = _const_is(lambda v: v == 0)


def _add_zero(emit: Emitter, m: Match) -> Node | None:
    x, c = m["x"], m["c"]
    if _kind(x) in "biu" and is_zero(c):
        return x
    if _kind(x) in "fc" and _signed_zero(negative=True)(c):
        return x
    return None


def _subtract_zero(emit: Emitter, m: Match) -> Node | None:
    x, c = m["x"], m["c"]
    if _kind(x) in "iu" and is_zero(c):
        return x
    if _kind(x) in "fc" and is_zero(c) and (_value(c).dtype.kind in "biu" or _signed_zero(negative=False)(c)):
        return x
    return None


def _compose_transposes(emit: Emitter, m: Match) -> Node:
    inner, outer = m["inner"].attrs["axes"], m["root"].attrs["axes"]
    axes = tuple(inner[a] for a in outer)
    if axes == tuple(range(len(axes))):
        return m["x"]
    return emit.op("transpose", m["x"], axes=axes)


def _collapse_reshapes(emit: Emitter, m: Match) -> Node:
    shape = m["root"].tensor_type.shape
    if shape == m["x"].tensor_type.shape:
        return m["x"]
    return emit.op("reshape", m["x"], shape=shape)


def _same_shape_as_input(node: Node) -> bool:
    return node.tensor_type.shape == node.inputs[0].tensor_type.shape


def _identity_axes(node: Node) -> bool:
    return tuple(node.attrs["axes"]) == tuple(range(len(node.attrs["axes"])))


def _square(emit: Emitter, m: Match) -> Node | None:
    return emit.op("multiply", m["x"], m["x"]) if _kind(m["x"]) in "iuf" else None


def _sqrt(emit: Emitter, m: Match) -> Node | None:
    if m["root"].tensor_type.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        return None
    return emit.op("sqrt", m["x"])


def _split(add: Node, shape: tuple[int, ...]) -> tuple[Node, Node] | None:
    """(full-size operand, smaller operand) of a binary node, or None."""
    a, b = add.inputs
    for big, small in ((a, b), (b, a)):
        bt, st = big.tensor_type, small.tensor_type
        if bt.shape == shape and not bt.weak and (st.weak or st.size < bt.size):
            return big, small
    return None


def _minimise_broadcasts(emit: Emitter, m: Match) -> Node | None:
    root, left, right = m["root"], m["l"], m["r"]
    shape = root.tensor_type.shape
    parts = _split(left, shape), _split(right, shape)
    if parts[0] is None or parts[1] is None:
        return None
    (m1, s1), (m2, s2) = parts
    types = [n.tensor_type for n in (root, left, right, m1, s1, m2, s2)]
    if len({t.dtype for t in types}) != 1:
        return None
    exact = types[0].dtype.kind in "biu" and not any(t.weak for t in types)
    if not (exact or config.option(emit.options, "reassociate")):
        return None
    small = emit.op(root.op, s1, s2)
    if small.tensor_type.size >= root.tensor_type.size:
        return None
    return emit.op(root.op, emit.op(root.op, m1, m2), small)


def _no_axes(node: Node) -> bool:
    return tuple(node.attrs.get("axis", (None,))) == ()


def _reduce_nothing(emit: Emitter, m: Match) -> Node:
    """A reduction over no axes is its operand in the result dtype (bool for any/all), as NumPy computes it."""
    return emit.op("astype", m["x"], dtype=m["root"].tensor_type.dtype)


def _outer_as_multiply(emit: Emitter, m: Match) -> Node | None:
    """``np.outer(a, b)`` is, in NumPy's own source, ``multiply(a.ravel()[:, None], b.ravel()[None, :])``: as that
    broadcast product it fuses with what consumes it (``A + 0.5 * np.outer(u, v)``: one pass, no outer matrix).
    Weak (Python scalar) operands decline: ``np.outer`` makes them arrays, so their dtype would count."""
    a, b = m["a"].tensor_type, m["b"].tensor_type
    if a.weak or b.weak:
        return None
    return emit.op("multiply", emit.op("reshape", m["a"], shape=(a.size, 1)), emit.op("reshape", m["b"], shape=(1, b.size)))


IDENTITY_RULES: tuple[Rule, ...] = (
    Rule("reduce_no_axes", pat(("sum", "prod", "max", "min", "mean", "any", "all"), var("x"), name="root",
                               where=_no_axes), _reduce_nothing, "reduce(x, axis=()) -> x.astype(result dtype)"),
    Rule("multiply_one", pat("multiply", var("x"), const("c", is_one), commutative=True), _x_if("biuf"),
         "x * 1 -> x (not complex: (inf+1j)*(1+0j) is inf+nanj)"),
    Rule("divide_one", pat("divide", var("x"), const("c", is_one)), _x_if("f"), "x / 1 -> x for floats"),
    Rule("add_zero", pat("add", var("x"), const("c"), commutative=True), _add_zero,
         "x + 0 -> x for ints; floats need -0.0 (since -0.0 + 0.0 == +0.0)"),
    Rule("subtract_zero", pat("subtract", var("x"), const("c")), _subtract_zero,
         "x - 0 -> x for ints; floats need +0.0 (x - +0.0 == x + -0.0)"),
    Rule("negate_twice", pat("negative", pat("negative", var("x"))), lambda emit, m: m["x"], "--x -> x"),
    Rule("compose_transposes", pat("transpose", pat("transpose", var("x"), name="inner"), name="root"),
         _compose_transposes, "transpose(transpose(x, p), q) -> transpose(x, p[q]) or x"),
    Rule("identity_transpose", pat("transpose", var("x"), where=_identity_axes), lambda emit, m: m["x"],
         "transpose(x, identity) -> x"),
    Rule("collapse_reshapes", pat("reshape", pat("reshape", var("x")), name="root"), _collapse_reshapes,
         "reshape(reshape(x, s1), s2) -> reshape(x, s2) or x"),
    Rule("identity_reshape", pat(("reshape", "broadcast_to"), var("x"), where=_same_shape_as_input),
         lambda emit, m: m["x"], "reshape/broadcast_to to x's own shape -> x"),
    Rule("outer_as_multiply", pat("outer", var("a"), var("b")), _outer_as_multiply,
         "outer(a, b) -> reshape(a, (n, 1)) * reshape(b, (1, m)) (NumPy's own definition)"),
    Rule("power_one", pat("power", var("x"), const("c", _scalar_const(1))), _x_if("iuf"), "x ** 1 -> x"),
    Rule("power_two", pat("power", var("x"), const("c", _scalar_const(2))), _square,
         "x ** 2 -> x * x (NumPy's own fast path for a scalar exponent; exact for float16 and ints too)"),
    Rule("power_half", pat("power", var("x"), const("c", _scalar_const(0.5)), name="root"), _sqrt,
         "x ** 0.5 -> sqrt(x) for float32/float64 (NumPy's fast path, -0.0 and -inf included)"),
)

BROADCAST_RULES: tuple[Rule, ...] = tuple(
    Rule(f"minimise_broadcasts_{op}",
         pat(op, pat(op, var("a"), var("b"), name="l"), pat(op, var("c"), var("d"), name="r"), name="root"),
         _minimise_broadcasts, f"(M1 {sym} s1) {sym} (M2 {sym} s2) -> (M1 {sym} M2) {sym} (s1 {sym} s2): "
                               "exact for integers, floats only with reassociate=True")
    for op, sym in (("add", "+"), ("multiply", "*"))
)

SIMPLIFY_RULES: tuple[Rule, ...] = (FOLD,) + IDENTITY_RULES + BROADCAST_RULES + MOMENT_RULES


@register_pass("simplify")
def simplify(graph: Graph, options: Mapping[str, Any]) -> Graph:
    return rewrite(graph, SIMPLIFY_RULES, options)
