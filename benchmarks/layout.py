"""Layout benchmark lines (issue 5): the same computation on differently laid-out inputs, compiled vs eager.

    python benchmarks/layout.py

* transposed vs contiguous input: ``(x.T * 2).T`` style elementwise work on a C array and on a transposed view;
* Fortran- vs C-ordered input: one elementwise op over 1e7 elements (target: F within 20% of C);
* ``A.T @ B`` vs ``np.ascontiguousarray(A.T) @ B``: BLAS gets the transposed view and its trans flag.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.timing import median  # after the path is set


def scale_shift(x):
    return np.tanh(x * 2.0 + 1.0)


def double_transposed(x):
    return (x.T * 2.0 + 1.0).T


def at_b(a, b):
    return np.maximum(a.T @ b, 0)


def contiguous_at_b(a, b):
    return np.maximum(np.ascontiguousarray(a.T) @ b, 0)


def main() -> None:
    os.environ.setdefault("JITGRAPH_CACHE_DIR", tempfile.mkdtemp(prefix="jitgraph-layout-"))
    import jitgraph

    rng = np.random.default_rng(0)
    c = rng.standard_normal((2500, 4000)).astype(np.float32)
    f = np.asfortranarray(c)
    t = np.ascontiguousarray(c.T).T  # a transposed view of a C array
    a = rng.standard_normal((1024, 512)).astype(np.float32)
    b = rng.standard_normal((1024, 768)).astype(np.float32)
    rows = [
        ("elementwise, C-ordered input", scale_shift, (c,)),
        ("elementwise, Fortran-ordered input", scale_shift, (f,)),
        ("elementwise, transposed view input", scale_shift, (t,)),
        ("(x.T*2+1).T on a C input", double_transposed, (c,)),
        ("maximum(A.T @ B, 0)", at_b, (a, b)),
        ("maximum(ascontiguousarray(A.T) @ B, 0)", contiguous_at_b, (a, b)),
    ]
    print(f"| {'case':<42} | {'NumPy ms':>9} | {'jitgraph ms':>11} | {'ratio':>6} |")
    print(f"|{'-' * 44}|{'-' * 11}|{'-' * 13}|{'-' * 8}|")
    for label, fn, args in rows:
        compiled = jitgraph.compile(fn)
        np.testing.assert_allclose(compiled(*args), fn(*args), rtol=2e-5, atol=1e-5)
        te = median(lambda: fn(*args), 20, float('inf'), warmup=True)  # noqa: B023
        tc = median(lambda: compiled(*args), 20, float('inf'), warmup=True)  # noqa: B023
        print(f"| {label:<42} | {te * 1e3:9.2f} | {tc * 1e3:11.2f} | {te / tc:5.1f}x |")


if __name__ == "__main__":
    main()
