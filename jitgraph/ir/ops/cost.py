"""What an op costs per element, by class: the one table code generators ask when cost decides something.

Two decisions in the CPU backend depend on it, and they used to keep a set of "expensive" op names each:

* a launch weighs each op of a kernel body to decide from what size the kernel runs on several threads, and a
  kernel with math-bound ops keeps plain stores (its stores overlap the math, and streaming them gained nothing);
  these ask :func:`math_bound`;
* a reduction kernel keeps a value its final sweep needs in a scratch row instead of recomputing it when the value
  is costly to compute; that asks :func:`worth_keeping`.

The classes say why an op costs what it does, and the two questions are answered from them:

``LIBM``      a transcendental function: a library call per element, or a long polynomial (``exp``, ``tanh``, ...);
``DIVISION``  integer-style division with a floor or a remainder (``floor_divide``, ``remainder``, ``fmod``):
              several instructions and a branch per element, no single vector instruction;
``LATENCY``   one long-latency vector instruction (``divide``, ``sqrt``): cheap in a stream, yet dearer to
              recompute than to keep;
``CHEAP``     everything else: an add, a compare, a cast.

(``DIVISION`` values are not kept in scratch rows and ``LATENCY`` ops do not count as math-bound: those are the
choices the two sets made when they were measured, kept so that generated kernels stay the same.)
"""

from __future__ import annotations

import enum


class Cost(enum.Enum):
    CHEAP = "cheap"
    LATENCY = "latency"
    DIVISION = "division"
    LIBM = "libm"


COST: dict[str, Cost] = {
    **dict.fromkeys(("exp", "expm1", "log", "log1p", "tanh", "sin", "cos", "tan", "power", "sinh", "cosh", "arcsin",
                     "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "exp2", "log2", "log10", "arctan2", "hypot",
                     "logaddexp"), Cost.LIBM),
    **dict.fromkeys(("floor_divide", "remainder", "fmod"), Cost.DIVISION),
    **dict.fromkeys(("divide", "sqrt"), Cost.LATENCY),
}


def cost_of(op: str) -> Cost:
    """The cost class of op ``op`` (``CHEAP`` for any op not listed)."""
    return COST.get(op, Cost.CHEAP)


def math_bound(op: str) -> bool:
    """Whether a kernel doing ``op`` per element is bound by arithmetic rather than by memory (weighs 4 in a
    launch's cost estimate; such kernels keep plain stores)."""
    return cost_of(op) in (Cost.LIBM, Cost.DIVISION)


def worth_keeping(op: str) -> bool:
    """Whether a value computed by ``op`` is worth keeping in a scratch buffer rather than computing it again."""
    return cost_of(op) in (Cost.LIBM, Cost.LATENCY)


def numpy_is_enough(ops: list[str], elements: int, parallel_from: int) -> str | None:
    """Why a fused group of ``ops`` over ``elements`` elements should run as NumPy calls rather than as a kernel,
    or None to launch the kernel. ``parallel_from``: the size from which its kernel would run on several threads.

    One op fuses nothing: NumPy's own loop (SIMD, its reductions pairwise) is as fast as a kernel doing the same
    single pass, and the launch costs more -- unless the kernel would split the work across threads. (Groups of
    several ops over a handful of elements would be cheaper as NumPy calls too, by ~1 us; they keep their kernel,
    which tests of the kernel cache and of fusion build on tiny inputs.)"""
    if len(ops) == 1 and elements < parallel_from:
        return (f"one {ops[0]} over {elements} elements: NumPy's own loop does the same single pass, without a "
                "kernel launch's overhead")
    return None
