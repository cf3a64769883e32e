"""Derivative rules (VJPs) of the elementwise ops: one entry per op name, as data.

Each entry gives, per input, ``d(e, node, g) -> cotangent`` (``None``: that input gets no gradient, such as an
integer exponent's). ``node`` is the forward value (its ``inputs`` are the primals, the node itself the result, so
``exp`` reuses its output), ``g`` the output's cotangent. The shapes returned may be the broadcast shape: the
transform sums them down to each input's shape (``Emitter.fit``), so no rule deals with broadcasting.

Conventions at non-differentiable points follow JAX: ``abs``/``sign`` have slope 0 at 0 (``sign(0) = 0``),
``maximum``/``minimum`` split the cotangent equally between tied operands, piecewise-constant functions
(``floor``, ``ceil``, ``rint``, ``trunc``, ``sign``, ``floor_divide``, ``heaviside``) have zero gradient, ``clip``
passes the gradient where ``lo <= x <= hi`` and gives the bounds what lies outside, and ``x ** y`` differentiates
in ``y`` as ``x ** y * log(x)`` with ``log(0)`` taken as 0 (JAX's choice, so ``0 ** y`` has a finite slope).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from jitgraph.autodiff.emit import Emitter, dtype_of, is_float, shape_of
from jitgraph.ir.graph import Node

Partial = Callable[[Emitter, Node, Node], Node]
Rule = Callable[[Emitter, Node, Node, tuple[bool, ...]], Sequence[Node | None]]


def per_input(*partials: Partial | None) -> Rule:
    """A rule from one partial per input, each built only when that input wants a gradient."""

    def rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
        return [p(e, node, g) if (p is not None and want) else None for p, want in zip(partials, wants)]

    return rule


def _x(node: Node) -> Node:
    return node.inputs[0]


def _y(node: Node) -> Node:
    return node.inputs[1]


def _zero(e: Emitter, node: Node, g: Node) -> Node:
    return e.zeros(shape_of(g), dtype_of(g))  # not g * 0: an infinite cotangent would make NaN


def _unary(d: Callable[[Emitter, Node, Node], Node]) -> Rule:
    """``g * d(x, out)`` for a unary function with derivative ``d``."""
    return per_input(lambda e, n, g: e.mul(g, d(e, _x(n), n)))


def _pow_dy(e: Emitter, n: Node, g: Node) -> Node:
    x = _x(n)
    safe = e.where(e.fn("equal", x, 0.0), 1.0, x)  # JAX: log(0) read as 0, so 0 ** y has slope 0 in y
    return e.mul(g, e.mul(n, e.fn("log", safe)))


def _pow_dx(e: Emitter, n: Node, g: Node) -> Node:
    x, y = n.inputs
    if y.op == "const":  # x ** 2: a literal exponent keeps the rule a single power (or none)
        value = y.attrs["value"]
        if np.ndim(value) == 0 and value in (1, 2):
            return g if value == 1 else e.mul(g, e.mul(x, 2.0))
        ym1 = e.const(float(value) - 1.0 if not isinstance(value, int) else value - 1)
    else:
        ym1 = e.sub(y, 1)
    return e.mul(g, e.mul(y, e.fn("power", x, ym1)))


def _tie_split(e: Emitter, a: Node, b: Node, wins: str) -> Node:
    """1 where ``a`` wins the comparison, 1/2 where it ties with ``b`` (JAX's rule for maximum/minimum), else 0."""
    return e.where(e.fn(wins, a, b), 1.0, e.where(e.fn("equal", a, b), 0.5, 0.0))


def _extremum(wins: str) -> Rule:
    return per_input(lambda e, n, g: e.mul(g, _tie_split(e, _x(n), _y(n), wins)),
                     lambda e, n, g: e.mul(g, _tie_split(e, _y(n), _x(n), wins)))


def _where_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    cond = node.inputs[0]
    return [None, e.where(cond, g, 0.0) if wants[1] else None, e.where(cond, 0.0, g) if wants[2] else None]


def _clip_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    x, lo, hi = node.inputs
    below, above = e.fn("less", x, lo), e.fn("greater", x, hi)
    inside = e.fn("logical_not", e.fn("logical_or", below, above))
    return [e.where(inside, g, 0.0) if wants[0] else None,
            e.where(e.fn("logical_and", below, e.fn("logical_not", above)), g, 0.0) if wants[1] else None,
            e.where(above, g, 0.0) if wants[2] else None]


def _astype_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list[Node | None]:
    x = _x(node)
    return [e.cast(g, x) if wants[0] and is_float(x) else None]


def _sqrt1m(e: Emitter, x: Node) -> Node:
    return e.fn("sqrt", e.sub(1.0, e.square(x)))


LN2, LN10 = math.log(2.0), math.log(10.0)

ELEMENTWISE_VJP: dict[str, Rule] = {
    "add": per_input(lambda e, n, g: g, lambda e, n, g: g),
    "subtract": per_input(lambda e, n, g: g, lambda e, n, g: e.neg(g)),
    "multiply": per_input(lambda e, n, g: e.mul(g, _y(n)), lambda e, n, g: e.mul(g, _x(n))),
    "divide": per_input(lambda e, n, g: e.div(g, _y(n)), lambda e, n, g: e.neg(e.div(e.mul(g, n), _y(n)))),
    "power": per_input(_pow_dx, _pow_dy),
    "float_power": per_input(_pow_dx, _pow_dy),
    "maximum": _extremum("greater"),
    "minimum": _extremum("less"),
    "fmax": _extremum("greater"),
    "fmin": _extremum("less"),
    "remainder": per_input(lambda e, n, g: g, lambda e, n, g: e.neg(e.mul(g, e.fn("floor_divide", _x(n), _y(n))))),
    "fmod": per_input(lambda e, n, g: g, lambda e, n, g: e.neg(e.mul(g, e.fn("trunc", e.div(_x(n), _y(n)))))),
    "floor_divide": per_input(_zero, _zero),
    "heaviside": per_input(_zero, _zero),
    "arctan2": per_input(  # arctan2(y=x0, x=x1)
        lambda e, n, g: e.div(e.mul(g, _y(n)), e.add(e.square(_x(n)), e.square(_y(n)))),
        lambda e, n, g: e.neg(e.div(e.mul(g, _x(n)), e.add(e.square(_x(n)), e.square(_y(n)))))),
    "hypot": per_input(lambda e, n, g: e.div(e.mul(g, _x(n)), n), lambda e, n, g: e.div(e.mul(g, _y(n)), n)),
    "logaddexp": per_input(lambda e, n, g: e.mul(g, e.fn("exp", e.sub(_x(n), n))),
                           lambda e, n, g: e.mul(g, e.fn("exp", e.sub(_y(n), n)))),
    "copysign": per_input(lambda e, n, g: e.mul(g, e.mul(e.fn("sign", _x(n)), e.fn("sign", n))), _zero),
    "negative": per_input(lambda e, n, g: e.neg(g)),
    "positive": per_input(lambda e, n, g: g),
    "copy": per_input(lambda e, n, g: g),
    "absolute": _unary(lambda e, x, out: e.fn("sign", x)),
    "exp": _unary(lambda e, x, out: out),
    "exp2": _unary(lambda e, x, out: e.mul(out, LN2)),
    "expm1": _unary(lambda e, x, out: e.add(out, 1.0)),
    "log": per_input(lambda e, n, g: e.div(g, _x(n))),
    "log2": per_input(lambda e, n, g: e.div(g, e.mul(_x(n), LN2))),
    "log10": per_input(lambda e, n, g: e.div(g, e.mul(_x(n), LN10))),
    "log1p": per_input(lambda e, n, g: e.div(g, e.add(_x(n), 1.0))),
    "sqrt": per_input(lambda e, n, g: e.div(e.mul(g, 0.5), n)),
    "cbrt": per_input(lambda e, n, g: e.div(g, e.mul(e.square(n), 3.0))),
    "square": _unary(lambda e, x, out: e.mul(x, 2.0)),
    "reciprocal": _unary(lambda e, x, out: e.neg(e.square(out))),
    "sin": _unary(lambda e, x, out: e.fn("cos", x)),
    "cos": _unary(lambda e, x, out: e.neg(e.fn("sin", x))),
    "tan": _unary(lambda e, x, out: e.add(e.square(out), 1.0)),
    "tanh": _unary(lambda e, x, out: e.sub(1.0, e.square(out))),
    "sinh": _unary(lambda e, x, out: e.fn("cosh", x)),
    "cosh": _unary(lambda e, x, out: e.fn("sinh", x)),
    "arcsin": per_input(lambda e, n, g: e.div(g, _sqrt1m(e, _x(n)))),
    "arccos": per_input(lambda e, n, g: e.neg(e.div(g, _sqrt1m(e, _x(n))))),
    "arctan": per_input(lambda e, n, g: e.div(g, e.add(e.square(_x(n)), 1.0))),
    "arcsinh": per_input(lambda e, n, g: e.div(g, e.fn("sqrt", e.add(e.square(_x(n)), 1.0)))),
    "arccosh": per_input(lambda e, n, g: e.div(g, e.fn("sqrt", e.sub(e.square(_x(n)), 1.0)))),
    "arctanh": per_input(lambda e, n, g: e.div(g, e.sub(1.0, e.square(_x(n))))),
    "deg2rad": _unary(lambda e, x, out: e.const(math.pi / 180.0)),
    "rad2deg": _unary(lambda e, x, out: e.const(180.0 / math.pi)),
    "sign": per_input(_zero),
    "floor": per_input(_zero),
    "ceil": per_input(_zero),
    "trunc": per_input(_zero),
    "rint": per_input(_zero),
    "where": _where_rule,
    "clip": _clip_rule,
    "astype": _astype_rule,
}
