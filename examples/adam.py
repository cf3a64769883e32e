"""An Adam optimizer update that mutates p, m and v in place, eager vs @jitgraph.compile."""

from __future__ import annotations

import numpy as np
from _harness import FirstCall, agreed, assert_same, median_time, parse_args, print_table

import jitgraph


def adam_update(p, g, m, v, lr, t, b1=0.9, b2=0.999, eps=1e-8):
    m *= b1
    m += (1 - b1) * g
    v *= b2
    v += (1 - b2) * (g * g)
    mhat = m / (1 - b1 ** t)
    vhat = v / (1 - b2 ** t)
    p -= lr * mhat / (np.sqrt(vhat) + eps)


def example_adam_update() -> tuple:
    """Arguments for ``python -m jitgraph explain examples/adam.py:adam_update``."""
    rng = np.random.default_rng(0)
    p, g = rng.normal(size=1024).astype(np.float32), rng.normal(size=1024).astype(np.float32)
    return p, g, np.zeros(1024, np.float32), np.zeros(1024, np.float32), 1e-3, 1.0


def main() -> None:
    args = parse_args(__doc__)
    n = 4096 if args.small else 10_000_000
    rng = np.random.default_rng(0)
    state = [rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32),
             np.zeros(n, np.float32), np.zeros(n, np.float32)]
    eager_state = [a.copy() for a in state]
    compiled_state = [a.copy() for a in state]
    update = jitgraph.compile(adam_update, backend=args.backend)
    first = FirstCall(update)
    for t in range(1, 6):  # the int step counter is traced as a runtime value after its first change
        adam_update(*eager_state, 1e-3, t)
        first(*compiled_state, 1e-3, t)
    assert_same(eager_state, compiled_state, rtol=1e-5, atol=1e-6, what="p, g, m, v after 5 steps")
    assert len(update.entries) == 2, update.recompile_reasons()
    agreed("p, m and v after 5 in-place steps (2 compiles: t = 1, then t as a runtime value)")

    print_table("adam", [{"name": f"Adam, {n:.0e} float32 params",
                          "eager": median_time(lambda: adam_update(*eager_state, 1e-3, 6)),
                          "compiled": median_time(lambda: update(*compiled_state, 1e-3, 6)),
                          "compile": first.seconds}], update, first)


if __name__ == "__main__":
    main()
