"""Layout benchmarks (issue 5): compiled vs eager NumPy on transposed, Fortran-ordered and transposed-product inputs.

Each line prints eager NumPy's time, the compiled time and their ratio (best of several runs), plus the ratio
between the two layouts being compared. Run: ``python benchmarks/layout.py [backend] [n_rows n_cols]``
(default backend: cpu; default size 2000 x 5000 = 1e7 float32 elements).
"""

from __future__ import annotations

import sys
import timeit

import numpy as np

import jitgraph


def elementwise(x):
    return np.tanh(x * 0.5) * 2.0 + x


def round_trip(x):
    return (x.T * 2.0).T


def product_of_transpose(a, b):
    return a.T @ b


def product_of_copy(a, b):
    return np.ascontiguousarray(a.T) @ b


def best(fn, *args, number: int = 3, repeat: int = 5) -> float:
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=repeat)) / number


def line(label: str, fn, compiled, *args) -> float:
    expected, got = fn(*args), compiled(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    eager, fast = best(fn, *args), best(compiled, *args)
    entries = getattr(compiled, "entries", [])
    note = "" if entries and entries[-1].mode == "graph" else "   (NOT compiled: ran eagerly)"
    print(f"{label:<44} eager {eager * 1e3:8.2f} ms   compiled {fast * 1e3:8.2f} ms   eager/compiled "
          f"{eager / fast:5.2f}x{note}")
    return fast


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    rows, cols = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (2000, 5000)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    xt = np.ascontiguousarray(x.T).T  # same shape as x, Fortran-ordered memory
    f = jitgraph.compile(elementwise, backend=backend)
    print(f"backend {backend}, {rows} x {cols} float32")
    c = line("elementwise, C-ordered input", elementwise, f, x)
    t = line("elementwise, transposed view input (x.T)", elementwise, f, x.T)
    fo = line("elementwise, Fortran-ordered input", elementwise, f, xt)
    print(f"{'  transposed / contiguous (compiled)':<44} {t / c:5.2f}x")
    print(f"{'  Fortran / C (compiled; target <= 1.20)':<44} {fo / c:5.2f}x")
    line("(x.T * 2).T (layout pass: x * 2)", round_trip, jitgraph.compile(round_trip, backend=backend), x)
    n = 1000
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    pt = line("A.T @ B", product_of_transpose, jitgraph.compile(product_of_transpose, backend=backend), a, b)
    pc = line("np.ascontiguousarray(A.T) @ B", product_of_copy, jitgraph.compile(product_of_copy, backend=backend),
              a, b)
    print(f"{'  ascontiguousarray(A.T) @ B / A.T @ B':<44} {pc / pt:5.2f}x (compiled; the copy is removed)")


if __name__ == "__main__":
    main()
