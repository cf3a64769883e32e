"""Logistic regression trained by full-batch gradient descent, eager vs @jitgraph.compile."""

from __future__ import annotations

import numpy as np
from _harness import FirstCall, agreed, assert_same, median_time, parse_args, print_table

import jitgraph


def gd_step(w, b, x, y, lr, l2):
    z = x @ w + b
    p = 1.0 / (1.0 + np.exp(-z))
    loss = -np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7)) + 0.5 * l2 * np.sum(w * w)
    err = (p - y) / x.shape[0]
    w -= lr * (x.T @ err + l2 * w)
    b -= lr * err.sum()
    return loss


def example_gd_step() -> tuple:
    """Arguments for ``python -m jitgraph explain examples/logistic_regression.py:gd_step``."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 16)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    return np.zeros(16, np.float32), np.zeros(1, np.float32), x, y, 0.5, 1e-3


def main() -> None:
    args = parse_args(__doc__)
    n, d, steps = (256, 16, 20) if args.small else (65536, 256, 50)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, d)).astype(np.float32)
    true_w = rng.normal(size=d).astype(np.float32)
    y = (x @ true_w + 0.1 * rng.normal(size=n) > 0).astype(np.float32)
    step = jitgraph.compile(gd_step, backend=args.backend)
    first = FirstCall(step)

    we, be = np.zeros(d, np.float32), np.zeros(1, np.float32)
    wc, bc = we.copy(), be.copy()
    for k in range(steps):
        le = gd_step(we, be, x, y, 0.5, 1e-3)
        lc = first(wc, bc, x, y, 0.5, 1e-3)
        assert_same(le, lc, rtol=1e-4, what=f"loss at step {k}")
    assert_same((we, be), (wc, bc), rtol=1e-4, atol=1e-5, what="weights")
    agreed(f"loss at each of {steps} steps and the final weights")
    print(f"final loss: eager {le:.6f}, compiled {lc:.6f}")

    print_table("logistic_regression", [{
        "name": f"GD step, {n}x{d}", "eager": median_time(lambda: gd_step(we, be, x, y, 0.0, 0.0)),
        "compiled": median_time(lambda: step(wc, bc, x, y, 0.0, 0.0)), "compile": first.seconds}], step, first)


if __name__ == "__main__":
    main()
