"""Logistic regression trained by full-batch gradient descent, eager vs @jitgraph.compile."""

from __future__ import annotations

import numpy as np
from _harness import assert_same, first_call_time, median_time, parse_args, print_table

import jitgraph


def gd_step(w, b, x, y, lr, l2):
    z = x @ w + b
    p = 1.0 / (1.0 + np.exp(-z))
    loss = -np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7)) + 0.5 * l2 * np.sum(w * w)
    err = (p - y) / x.shape[0]
    w -= lr * (x.T @ err + l2 * w)
    b -= lr * err.sum()
    return loss


def main() -> None:
    args = parse_args(__doc__)
    n, d, steps = (256, 16, 20) if args.small else (65536, 256, 50)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, d)).astype(np.float32)
    true_w = rng.normal(size=d).astype(np.float32)
    y = (x @ true_w + 0.1 * rng.normal(size=n) > 0).astype(np.float32)
    step = jitgraph.compile(gd_step, backend=args.backend)

    we, be = np.zeros(d, np.float32), np.zeros(1, np.float32)
    wc, bc = we.copy(), be.copy()
    for k in range(steps):
        le = gd_step(we, be, x, y, 0.5, 1e-3)
        lc = step(wc, bc, x, y, 0.5, 1e-3)
        assert_same(le, lc, rtol=1e-4, what=f"loss at step {k}")
    assert_same((we, be), (wc, bc), rtol=1e-4, atol=1e-5, what="weights")
    print(f"final loss: eager {le:.6f}, compiled {lc:.6f}")

    fresh = jitgraph.compile(gd_step, backend=args.backend)
    w2, b2 = we.copy(), be.copy()
    compile_s = first_call_time(lambda: fresh(w2, b2, x, y, 0.0, 0.0))
    print_table("logistic_regression", [{
        "name": f"GD step, {n}x{d}", "eager": median_time(lambda: gd_step(we, be, x, y, 0.0, 0.0)),
        "compiled": median_time(lambda: fresh(w2, b2, x, y, 0.0, 0.0)), "compile": compile_s}])


if __name__ == "__main__":
    main()
