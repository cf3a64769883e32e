"""Hypothesis-generated random elementwise/reduction programs: gradients against central finite differences.

A program is a list of steps over a growing list of values (shapes (3, 4), (4,), (3, 1) and keepdims reductions
of them, so any two broadcast); each step applies a unary op, a binary op or a reduction to earlier values. The
rules are then tested in combination: broadcasting adjoints, fan-out (a value used twice) and reductions feeding
elementwise ops. Examples are few and bounded (the CI profile in tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
from gradcheck import check_grad
from hypothesis import given, settings
from hypothesis import strategies as st

UNARY = {
    "tanh": np.tanh, "sin": np.sin, "square": np.square, "negative": np.negative,
    "soft": lambda a: np.sqrt(1.0 + a * a), "exp": lambda a: np.exp(a * 0.5), "abs": lambda a: np.abs(a) + a,
}
BINARY = {
    "add": np.add, "multiply": np.multiply, "subtract": np.subtract,
    "ratio": lambda a, b: a / (1.5 + np.cos(b)), "maximum": np.maximum,
    "where": lambda a, b: np.where(a > b, a, b * 2.0),
}
REDUCE = {
    "sum0": lambda a: a.sum(axis=0, keepdims=True), "mean1": lambda a: a.mean(axis=-1, keepdims=True),
    "max0": lambda a: a.max(axis=0, keepdims=True), "all": lambda a: a.mean() + a,
}

step = st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY)), st.integers(0, 50), st.just(0)),
    st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY)), st.integers(0, 50), st.integers(0, 50)),
    st.tuples(st.just("reduce"), st.sampled_from(sorted(REDUCE)), st.integers(0, 50), st.just(0)),
)


def make_program(steps: list[tuple[str, str, int, int]]):
    def program(x, y, z):
        values = [x, y, z]
        for kind, name, i, j in steps:
            a, b = values[i % len(values)], values[j % len(values)]
            if kind == "unary":
                values.append(UNARY[name](a))
            elif kind == "binary":
                values.append(BINARY[name](a, b))
            else:
                values.append(REDUCE[name](a))
        return values[-1] + values[0] * 0.25

    return program


@settings(max_examples=25)
@given(steps=st.lists(step, min_size=1, max_size=6), seed=st.integers(0, 2 ** 16))
def test_random_program_gradients_match_finite_differences(steps, seed: int) -> None:
    rng = np.random.default_rng(seed)
    args = (rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4,)), rng.uniform(-1, 1, (3, 1)))
    # ties of maximum/max/where make the function non-differentiable there: nudge values apart
    args = tuple(a + 1e-3 * np.arange(a.size).reshape(a.shape) for a in args)
    check_grad(make_program(steps), *args, rtol=1e-4, atol=1e-6)
