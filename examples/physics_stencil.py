"""Explicit finite-difference heat equation on a 2-D grid, written with slices, eager vs @jitgraph.compile."""

from __future__ import annotations

import numpy as np
from _harness import FirstCall, agreed, assert_same, median_time, parse_args, print_table

import jitgraph


def heat_step(u, alpha, dt):
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    u[1:-1, 1:-1] += alpha * dt * lap


def simulate(step, u, steps):
    for _ in range(steps):
        step(u, 0.2, 1.0)
    return u


def example_heat_step() -> tuple:
    """Arguments for ``python -m jitgraph explain examples/physics_stencil.py:heat_step``."""
    u = np.zeros((16, 16))
    u[4:12, 4:12] = 100.0
    return u, 0.2, 1.0


def main() -> None:
    args = parse_args(__doc__)
    n, steps = (32, 10) if args.small else (2048, 20)
    u0 = np.zeros((n, n), np.float64)
    u0[n // 4: 3 * n // 4, n // 4: 3 * n // 4] = 100.0
    compiled = jitgraph.compile(heat_step, backend=args.backend)
    first = FirstCall(compiled)
    ue, uc = simulate(heat_step, u0.copy(), steps), simulate(first, u0.copy(), steps)
    assert_same(ue, uc, rtol=1e-10, atol=1e-10, what="temperature field")
    agreed(f"heat field after {steps} in-place steps, total heat {ue.sum():.3f}")
    a, b = u0.copy(), u0.copy()
    print_table("physics_stencil", [{"name": f"heat step {n}x{n}", "eager": median_time(lambda: heat_step(a, 0.2, 1.0)),
                                     "compiled": median_time(lambda: compiled(b, 0.2, 1.0)),
                                     "compile": first.seconds}], compiled, first)


if __name__ == "__main__":
    main()
