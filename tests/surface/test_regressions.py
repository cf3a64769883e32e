"""The four capture bugs of issue 19, each compiled to one graph and compared with eager NumPy (values, dtypes,
shapes), with the tracer alone (eager interpreter) and with the CPU backend's pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tracer.helpers import run_both

BACKENDS = ["eager", "cpu"]
FULL = {}  # the default pipeline (fuse included): the fuse bug only shows there


def sums_with_negated_operand(a, b, s):
    d = a * b
    return np.sum(d * -s, axis=0) + np.sum(d, axis=0) * -s


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("s_shape", [(), (4,), (1, 4), (3, 4)])
def test_fuse_cycle_between_kernels(backend, s_shape):
    """pass 'fuse' failed: KeyError <Node sum>: the reduction kernel read ``-s`` from the kernel that read its sum."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    s = rng.standard_normal(s_shape) if s_shape else 2.5
    run_both(sums_with_negated_operand, a, b, s, backend=backend, options=FULL)


def comprehension_in_loop(x):
    for t in range(3):
        y = [x[t] for k in range(2)]
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_list_comprehension_in_loop(backend):
    """3.11: internal error "Cell is empty" (an empty comprehension cell in a loop snapshot); 3.12+: a variable
    first bound in a loop region was dropped ("referenced before assignment"): the loop now unrolls."""
    run_both(comprehension_in_loop, np.arange(12.0).reshape(3, 4), backend=backend, options=FULL)


def escape(cr, ci, maxit):
    out = np.zeros(cr.shape[0], np.int64)
    for k in range(cr.shape[0]):
        zr = zi = 0.0; it = 0  # the source, as written
        while zr * zr + zi * zi < 4.0 and it < maxit:
            zr, zi = zr * zr - zi * zi + cr[k], 2.0 * zr * zi + ci[k]
            it += 1
        out[k] = it
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [5, 60])
def test_escape_time_while_and_in_for(backend, n):
    """RecursionError: ``while A and B`` whose head test is decided at trace time became nested conds per
    unrolled iteration. The bottom test is now a while region with an ``and`` chain."""
    cr, ci = np.linspace(-2.0, 1.0, n), np.linspace(-1.2, 1.2, n)
    run_both(escape, cr, ci, 40, backend=backend, options=FULL)


def edit_distance(a, b):
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1), np.int64)
    for i in range(n + 1):
        D[i, 0] = i
    for j in range(m + 1):
        D[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            c = 0 if a[i - 1] == b[j - 1] else 1
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1, D[i - 1, j - 1] + c)
    return D[n, m]


@pytest.mark.parametrize("backend", BACKENDS)
def test_edit_distance_table(backend):
    """builtin min() of three array scalars and a ternary on array data: one graph."""
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 4, 20), rng.integers(0, 4, 25)
    run_both(edit_distance, a, b, backend=backend, options=FULL)
    run_both(edit_distance, np.array([1, 2, 3]), np.array([1, 2, 3]), backend=backend, options=FULL)


def clip_by_norm(g):
    norm = np.sqrt((g * g).sum())
    return g * min(1.0, 1.0 / (norm + 1e-6))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scale", [0.01, 100.0])
def test_norm_clip_one_graph(backend, scale):
    """``g * min(1.0, 1.0 / (norm + 1e-6))`` sent a whole Adam step to eager."""
    run_both(clip_by_norm, np.linspace(-1.0, 1.0, 7) * scale, backend=backend, options=FULL)
