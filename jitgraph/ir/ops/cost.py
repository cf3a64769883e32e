"""What an op costs per element, by class: the one table code generators ask when cost decides something.

Three decisions in the CPU backend depend on it (the first two used to keep a set of "expensive" op names each):

* a launch weighs each op of a kernel body to decide from what size the kernel runs on several threads, and a
  kernel with math-bound ops keeps plain stores (its stores overlap the math, and streaming them gained nothing);
  these ask :func:`math_bound`;
* a reduction kernel keeps a value its final sweep needs in a scratch row instead of recomputing it when the value
  is costly to compute; that asks :func:`worth_keeping`;
* the compiled graph runs a fused group as its NumPy calls instead of a kernel when that is cheaper: one op over an
  array NumPy already runs in one optimal pass, or arrays so small that a kernel launch does not pay off (the sizes
  are known when an entry is compiled); that asks :func:`numpy_is_enough`, from the estimate below.

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
from dataclasses import dataclass
from typing import NamedTuple


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


# The estimate of :func:`numpy_is_enough`, measured on the 2-core development machine (AVX-512; NumPy 2 with its
# SIMD loops): a cached small call through the compiled driver, min of repeated timings. Fixed costs in microseconds:
NUMPY_CALL_US = 0.4  # one ufunc call on a small array: argument parsing, loop selection, the result's allocation
NUMPY_REDUCE_US = 1.2  # one reduction method (``x.sum(axis=..., keepdims=...)``: axis checks, the wrapper)
NUMPY_SCALAR_US = 0.2  # one 0-d op (``1.0 / n``), which a kernel computes once inside its loop nest for free
KERNEL_LAUNCH_US = 1.2  # the driver line, the launch-key lookup, a reused output buffer, Numba's dispatch
KERNEL_REDUCE_US = 0.3  # one reduction's scratch accumulators, allocated inside the kernel
KERNEL_ARRAY_US = 0.1  # Numba typing one more array argument (operand or output)
NUMPY_MATMUL_US = 1.0  # one small ``a @ b`` (a BLAS call behind NumPy's matmul dispatch), either way
KERNEL_PRODUCT_US = 0.5  # a launch with a BLAS product: the product's reused buffer and the views of it
# and per element of float32 (float64 costs twice as much), nanoseconds: one op of NumPy makes a pass over memory
# into a fresh buffer; a kernel keeps values in registers. NumPy's SIMD transcendental loops (SVML on AVX-512) are
# about as fast per element as the kernels' vectorised mathlib: what a kernel saves is the passes and the calls.
NUMPY_NS = {Cost.CHEAP: 0.25, Cost.LATENCY: 0.45, Cost.DIVISION: 1.5, Cost.LIBM: 0.5}
KERNEL_NS = {Cost.CHEAP: 0.08, Cost.LATENCY: 0.25, Cost.DIVISION: 1.5, Cost.LIBM: 0.6}
# A float max/min along a kernel's innermost axis over a value computed in the same sweep folds the row's values
# through one NaN-propagating accumulator (``jg_max_step``) in one loop over the row, which LLVM vectorises as it does
# the loaded-operand fold (kernel_source._element_loop): ``np.abs(x).max(axis=1)`` over (1024, 256), min of 7 on
# 2026-11-27: 43 us float32 / 74 us float64 as a kernel against 175 / 299 us as NumPy's calls, nothing measurable over
# the ops themselves (0.1 kept as a margin). An argmax/argmin keeps scalar lane accumulators over a buffered block
# (reduction_lanes.py), a chain LLVM does not vectorise: priced at the ~1.0 ns an element measured for the max in
# that form (not re-measured; a max beside a product in one sweep still takes that form and is under-priced here).
# A max over the operand as loaded runs one vectorised loop and costs nothing extra. Added per element, not scaled by
# the item size.
COMPARE_CHAIN_NS = {"max": 0.1, "min": 0.1, "argmax": 1.0, "argmin": 1.0}
COMPARE_REDUCTIONS = frozenset(("max", "min", "argmax", "argmin"))


class OpWork(NamedTuple):
    """One array op of a fused group: its name, the elements NumPy computes for it (an elementwise op its output's,
    a reduction its operand's), whether it is a reduction (a dearer NumPy call), and the elements the kernel
    computes for it (a value over the whole domain is recomputed in each sweep after its reduction level)."""

    op: str
    elements: int
    reduces: bool
    kernel_elements: int
    chained: bool = False  # a reduction along the kernel's innermost axis over a value computed in the group


@dataclass(frozen=True)
class GroupWork:
    """What the cost model knows of one fused group when its graph is compiled (every size is static there).

    ``ops``: the group's array ops; ``scalar_ops``: 0-d ops copied into the group; ``elements``: the size of the
    kernel's iteration domain; ``arrays``: the kernel's array arguments; ``itemsize``: bytes per element of its
    widest value; ``parallel_from``: the size from which the kernel would run on several threads."""

    ops: tuple[OpWork, ...]
    scalar_ops: int
    elements: int
    arrays: int
    itemsize: int
    parallel_from: int
    blas: bool = False  # a BLAS product heads the group (``ops`` is its epilogue)

    def numpy_us(self) -> float:
        """Estimated microseconds of running the group as one NumPy call per op."""
        scale = max(self.itemsize, 4) / 4
        calls = sum(NUMPY_REDUCE_US if w.reduces else NUMPY_CALL_US for w in self.ops)
        work = sum(w.elements * NUMPY_NS[cost_of(w.op)] for w in self.ops) * scale * 1e-3
        return calls + self.scalar_ops * NUMPY_SCALAR_US + work + self.blas * NUMPY_MATMUL_US

    def kernel_us(self) -> float:
        """Estimated microseconds of one launch of the group's kernel (serial: below ``parallel_from``)."""
        scale = max(self.itemsize, 4) / 4
        work = sum(w.kernel_elements * KERNEL_NS[cost_of(w.op)] for w in self.ops) * scale * 1e-3
        work += sum(w.kernel_elements * COMPARE_CHAIN_NS[w.op] for w in self.ops
                    if w.chained and w.op in COMPARE_REDUCTIONS) * 1e-3
        reductions = sum(w.reduces for w in self.ops)
        product = self.blas * (NUMPY_MATMUL_US + KERNEL_PRODUCT_US)
        return KERNEL_LAUNCH_US + self.arrays * KERNEL_ARRAY_US + reductions * KERNEL_REDUCE_US + work + product


def numpy_is_enough(work: GroupWork, small_groups: bool = True) -> str | None:
    """Why a fused group should run as NumPy calls inside the compiled graph rather than as a kernel, or None to
    launch the kernel.

    One op fuses nothing: NumPy's own loop (SIMD, its reductions pairwise) is as fast as a kernel doing the same
    single pass, and the launch costs more -- unless the kernel would split the work across threads. Several ops
    over arrays so small that the fixed cost of a launch outweighs what fusion saves (``a * b + c`` over 16
    elements: two NumPy calls take 0.7 us, the kernel 1.4 us) run as NumPy too, when the estimate says so and
    ``small_groups`` is True (``JITGRAPH_SMALL_KERNELS=1`` turns that off: the test suite's kernel tests use tiny
    arrays)."""
    if work.elements >= work.parallel_from:
        return None
    if len(work.ops) == 1 and not work.blas:
        op, n = work.ops[0].op, work.ops[0].elements
        return f"one {op} over {n} elements: NumPy's own loop does the same single pass, without a kernel " \
               "launch's overhead"
    numpy_us, kernel_us = work.numpy_us(), work.kernel_us()
    if small_groups and numpy_us < kernel_us:
        what = f"a product and {len(work.ops)} ops" if work.blas else f"{len(work.ops)} ops"
        return (f"{what} over {work.elements} elements: too small for a kernel launch to pay off "
                f"(estimated {numpy_us:.1f} us as NumPy calls, {kernel_us:.1f} us as a kernel)")
    return None
