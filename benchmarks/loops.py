"""Loop-heavy scientific kernels: eager Python/NumPy vs jitgraph vs ``numba.njit`` on the same function.

Run ``python benchmarks/loops.py`` (``--quick`` for small sizes). Every kernel is written as plain NumPy/Python.
The jitgraph column is ``jitgraph.compile`` on the plain function: the tracer records loops, data-dependent ifs
and whiles as regions, and the graph runs on the loop code generator (``jitgraph.backends.cpu.scalar``). ``--hand-built`` uses the ``build_*`` graphs below
instead (the IR the tracer produces, written by hand). Every row checks that the three implementations agree
before timing them; times are medians of alternating rounds (eager, jitgraph, numba), each on fresh input copies.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the script runs from anywhere

from benchmarks.timing import settle
from jitgraph.ir.graph import Graph, GraphBuilder, Node
from jitgraph.ir.ops.control import build_cond, build_loop, build_while
from jitgraph.ir.ops.indexing import Operand, split_index
from jitgraph.ir.types import type_of
from jitgraph.tracer import symslice

# ----------------------------------------------------------------------------- the kernels, as users write them


def trisolve(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]
    return x


def lu(A):
    n = A.shape[0]
    for k in range(n):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    return A


def jacobi(u):
    for _ in range(50):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


def floyd_warshall(D):
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                d = D[i, k] + D[k, j]
                if d < D[i, j]:  # noqa: PLR1730 - a data-dependent branch on purpose
                    D[i, j] = d
    return D


def crc16(data):
    crc = 0xFFFF
    for i in range(data.shape[0]):
        crc ^= int(data[i]) << 8
        for _ in range(8):
            if crc & 0x8000:
                crc = ((crc << 1) ^ 0x1021) & 0xFFFF
            else:
                crc = (crc << 1) & 0xFFFF
    return crc


def spmv(indptr, indices, data, x):
    n = indptr.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        y[i] = s
    return y


def spmv_slices(indptr, indices, data, x):
    """CSR SpMV as NumPy code writes it (issue 19): row slices whose bounds are array data, and a gather."""
    n = indptr.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        start, end = indptr[i], indptr[i + 1]
        y[i] = np.dot(data[start:end], x[indices[start:end]])
    return y


def newton_sqrt(a, tol):
    x = 0.5 * (a + 1.0)
    err = np.max(np.abs(x * x - a))
    while err > tol:
        x = 0.5 * (x + a / x)
        err = np.max(np.abs(x * x - a))
    return x


def histogram(x, bins):
    counts = np.zeros(bins, dtype=np.int64)
    lo = x.min()
    width = (x.max() - lo) / bins
    for i in range(x.shape[0]):
        k = int((x[i] - lo) / width)
        if k >= bins:
            k = bins - 1
        counts[k] += 1
    return counts


def insertion_sort(a):
    for i in range(1, a.shape[0]):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


def viterbi(log_init, log_trans, log_emit, obs):
    n_states = log_init.shape[0]
    T = obs.shape[0]
    score = log_init + log_emit[:, obs[0]]
    back = np.zeros((T, n_states), dtype=np.int64)
    for t in range(1, T):
        cand = score[:, None] + log_trans
        back[t] = cand.argmax(axis=0)
        score = cand.max(axis=0) + log_emit[:, obs[t]]
    return score.max()


def viterbi_numba(log_init, log_trans, log_emit, obs):
    """The numba.njit reference for :func:`viterbi` (Numba cannot type ``argmax(axis=0)``/``max(axis=0)``): the same
    recursion with the column max and argmax written as loops, as a Numba user would write them."""
    n_states = log_init.shape[0]
    T = obs.shape[0]
    score = log_init + log_emit[:, obs[0]]
    back = np.zeros((T, n_states), dtype=np.int64)
    for t in range(1, T):
        cand = score[:, None] + log_trans
        new = np.empty(n_states)
        for j in range(n_states):
            best, arg = cand[0, j], 0
            for i in range(1, n_states):
                if cand[i, j] > best:
                    best, arg = cand[i, j], i
            back[t, j] = arg
            new[j] = best + log_emit[j, obs[t]]
        score = new
    return score.max()


def lcs_table(a, b):
    n, m = a.shape[0], b.shape[0]
    L = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                L[i, j] = L[i - 1, j - 1] + 1
            else:
                L[i, j] = max(L[i - 1, j], L[i, j - 1])
    return L[n, m]


def nbody_step(pos, vel, mass, dt):
    n = pos.shape[0]
    acc = np.zeros_like(pos)
    for i in range(n):
        for j in range(n):
            if i != j:
                dx = pos[j, 0] - pos[i, 0]
                dy = pos[j, 1] - pos[i, 1]
                dz = pos[j, 2] - pos[i, 2]
                r2 = dx * dx + dy * dy + dz * dz + 1e-3
                f = mass[j] / (r2 * np.sqrt(r2))
                acc[i, 0] += f * dx
                acc[i, 1] += f * dy
                acc[i, 2] += f * dz
    vel += dt * acc
    pos += dt * vel
    return pos


def power_iteration(A, v, tol):
    err = 1.0
    lam = 0.0
    while err > tol:
        w = A @ v
        lam_new = np.sqrt((w * w).sum())
        v = w / lam_new
        err = abs(lam_new - lam)
        lam = lam_new
    return lam


# ----------------------------------------------------------------------------- the graphs the tracer should record


def _at(b: GraphBuilder, x: Node, *idx: Node | int) -> Node:
    ops, spec = split_index(idx, lambda i: isinstance(i, Node))
    return b.op("getitem", x, *ops, spec=spec)


def _put(b: GraphBuilder, x: Node, value: Node, *idx: Node) -> Node:
    return b.op("setitem", x, value, *idx, spec=tuple(Operand(k) for k in range(len(idx))))


def _f64(b: GraphBuilder, v: float) -> Node:
    return b.const(np.float64(v))


def build_trisolve(L: np.ndarray, rhs: np.ndarray) -> Graph:
    """``x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]``: the dot of two symbolic slices lowers to a loop."""
    b = GraphBuilder()
    Lin, bin_ = b.input(type_of(L), "L"), b.input(type_of(rhs), "b")
    n = rhs.shape[0]
    x0 = b.op("zeros", shape=(n,), dtype=rhs.dtype)

    def row(rb: GraphBuilder, i: Node, x: Node) -> list[Node]:
        facts = frozenset({i})
        d = symslice.dot(rb, symslice.sym_view(rb, Lin, (i, slice(None, i)), facts),
                         symslice.sym_view(rb, x, (slice(None, i),), facts))
        value = rb.op("divide", rb.op("subtract", _at(rb, bin_, i), d), _at(rb, Lin, i, i))
        return [_put(rb, x, value, i)]

    (x,) = build_loop(b, 0, n, 1, [x0], row)
    return b.build([x])


def build_lu(A: np.ndarray) -> Graph:
    """``A[k+1:, k] /= A[k, k]; A[k+1:, k+1:] -= np.outer(A[k+1:, k], A[k, k+1:])`` through symbolic slices."""
    b = GraphBuilder()
    a_in = b.input(type_of(A), "A")
    n = A.shape[0]

    def step(rb: GraphBuilder, k: Node, a: Node) -> list[Node]:
        k1, facts = rb.op("add", k, rb.const(1)), frozenset({k})
        col = symslice.sym_view(rb, a, (slice(k1, None), k), facts)
        a = symslice.assign(rb, col, symslice.Map("divide", (col, _at(rb, a, k, k))), facts)
        block = symslice.sym_view(rb, a, (slice(k1, None), slice(k1, None)), facts)
        outer = symslice.Outer(symslice.sym_view(rb, a, (slice(k1, None), k), facts),
                               symslice.sym_view(rb, a, (k, slice(k1, None)), facts))
        return [symslice.assign(rb, block, symslice.Map("subtract", (block, outer)), facts)]

    (out,) = build_loop(b, 0, n, 1, [a_in], step)
    return b.build([out], [(0, out)])


def build_jacobi(u: np.ndarray) -> Graph:
    b = GraphBuilder()
    u_in = b.input(type_of(u), "u")
    inner, sl = slice(1, -1), (slice(None, -2), slice(2, None))

    def sweep(rb: GraphBuilder, t: Node, v: Node) -> list[Node]:
        views = [_at(rb, v, sl[0], inner), _at(rb, v, sl[1], inner), _at(rb, v, inner, sl[0]), _at(rb, v, inner, sl[1])]
        total = rb.op("add", rb.op("add", rb.op("add", views[0], views[1]), views[2]), views[3])
        new = rb.op("multiply", rb.const(0.25), total)
        return [rb.op("setitem", v, new, spec=(inner, inner))]

    (out,) = build_loop(b, 0, 50, 1, [u_in], sweep)
    return b.build([out], [(0, out)])


def build_floyd_warshall(D: np.ndarray) -> Graph:
    b = GraphBuilder()
    d_in = b.input(type_of(D), "D")
    n = D.shape[0]

    def over_k(rb: GraphBuilder, k: Node, d0: Node) -> list[Node]:
        def over_i(rb2: GraphBuilder, i: Node, d1: Node) -> list[Node]:
            def over_j(rb3: GraphBuilder, j: Node, d2: Node) -> list[Node]:
                d = rb3.op("add", _at(rb3, d2, i, k), _at(rb3, d2, k, j))
                return build_cond(rb3, rb3.op("less", d, _at(rb3, d2, i, j)),
                                  lambda cb: [_put(cb, d2, d, i, j)], lambda cb: [d2])

            return build_loop(rb2, 0, n, 1, [d1], over_j)

        return build_loop(rb, 0, n, 1, [d0], over_i)

    (out,) = build_loop(b, 0, n, 1, [d_in], over_k)
    return b.build([out], [(0, out)])


def build_crc16(data: np.ndarray) -> Graph:
    b = GraphBuilder()
    d_in = b.input(type_of(data), "data")
    i64 = np.int64

    def byte(rb: GraphBuilder, i: Node, crc: Node) -> list[Node]:
        crc1 = rb.op("bitwise_xor", crc, rb.op("left_shift", rb.op("astype", _at(rb, d_in, i), dtype=np.dtype(i64)),
                                               rb.const(8)))

        def bit(rb2: GraphBuilder, _: Node, c: Node) -> list[Node]:
            shifted = rb2.op("left_shift", c, rb2.const(1))
            return build_cond(
                rb2, rb2.op("bitwise_and", c, rb2.const(0x8000)),
                lambda cb: [cb.op("bitwise_and", cb.op("bitwise_xor", shifted, cb.const(0x1021)), cb.const(0xFFFF))],
                lambda cb: [cb.op("bitwise_and", shifted, cb.const(0xFFFF))])

        return build_loop(rb, 0, 8, 1, [crc1], bit)

    (crc,) = build_loop(b, 0, data.shape[0], 1, [b.const(i64(0xFFFF))], byte)
    return b.build([crc])


def build_spmv(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, x: np.ndarray) -> Graph:
    b = GraphBuilder()
    p_in, i_in, d_in, x_in = (b.input(type_of(v), name) for v, name in
                              ((indptr, "indptr"), (indices, "indices"), (data, "data"), (x, "x")))
    n = indptr.shape[0] - 1

    def row(rb: GraphBuilder, i: Node, y: Node) -> list[Node]:
        def term(rb2: GraphBuilder, k: Node, s: Node) -> list[Node]:
            col = _at(rb2, i_in, k)
            return [rb2.op("add", s, rb2.op("multiply", _at(rb2, d_in, k), _at(rb2, x_in, col)))]

        lo, hi = _at(rb, p_in, i), _at(rb, p_in, rb.op("add", i, rb.const(1)))
        (s,) = build_loop(rb, lo, hi, 1, [_f64(rb, 0.0)], term)
        return [_put(rb, y, s, i)]

    (y,) = build_loop(b, 0, n, 1, [b.op("zeros", shape=(n,), dtype=np.dtype(np.float64))], row)
    return b.build([y])


def build_newton_sqrt(a: np.ndarray, tol: float) -> Graph:
    b = GraphBuilder()
    a_in, tol_in = b.input(type_of(a), "a"), b.input(type_of(tol), "tol")

    def error(rb: GraphBuilder, x: Node) -> Node:
        return rb.op("max", rb.op("absolute", rb.op("subtract", rb.op("multiply", x, x), a_in)), axis=(0,),
                     keepdims=False)

    x0 = b.op("multiply", b.const(0.5), b.op("add", a_in, b.const(1.0)))

    def body(rb: GraphBuilder, x: Node, err: Node) -> list[Node]:
        x1 = rb.op("multiply", rb.const(0.5), rb.op("add", x, rb.op("divide", a_in, x)))
        return [x1, error(rb, x1)]

    x, _ = build_while(b, [x0, error(b, x0)], lambda rb, x, err: rb.op("greater", err, tol_in), body)
    return b.build([x])


# ----------------------------------------------------------------------------- inputs and the table


@dataclass
class Kernel:
    name: str
    fn: Callable[..., Any]
    build: Callable[..., Graph] | None  # None: traced only
    make: Callable[[bool], tuple[Any, ...]]
    numba_fn: Callable[..., Any] | None = None  # numba.njit's function when Numba cannot type ``fn`` itself


def _spd_lower(n: int, rng: np.random.Generator) -> np.ndarray:
    return np.tril(rng.uniform(-1, 1, (n, n))) + n * np.eye(n)


def _diag_dominant(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-1, 1, (n, n)) + n * np.eye(n)


def _csr(n: int, per_row: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    counts = rng.integers(0, 2 * per_row + 1, n)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    indices = rng.integers(0, n, indptr[-1]).astype(np.int64)
    return indptr, indices, rng.standard_normal(indptr[-1]), rng.standard_normal(n)


def kernels() -> list[Kernel]:
    rng = np.random.default_rng(0)
    return [
        Kernel("triangular solve", trisolve, build_trisolve,
               lambda q: (_spd_lower(24 if q else 2000, rng), rng.standard_normal(24 if q else 2000))),
        Kernel("LU decomposition", lu, build_lu, lambda q: (_diag_dominant(12 if q else 400, rng),)),
        Kernel("2-D Jacobi x50", jacobi, build_jacobi, lambda q: (rng.standard_normal((16, 16) if q else (500, 500)),)),
        Kernel("Floyd-Warshall", floyd_warshall, build_floyd_warshall,
               lambda q: (rng.uniform(1, 10, (10, 10) if q else (120, 120)),)),
        Kernel("CRC-16", crc16, build_crc16,
               lambda q: (rng.integers(0, 256, 64 if q else 1_000_000).astype(np.uint8),)),
        Kernel("CSR SpMV", spmv, build_spmv, lambda q: _csr(30 if q else 100_000, 10, rng)),
        Kernel("Newton sqrt (while)", newton_sqrt, build_newton_sqrt,
               lambda q: (rng.uniform(1, 100, 50 if q else 1_000_000), 1e-10)),
    ]


def traced_kernels() -> list[Kernel]:
    """Issue 21: six loops written before any tuning, and issue 19's CSR SpMV through row slices (2000 x 2000 at 1%
    density), traced only (no hand-built graph)."""
    rng = np.random.default_rng(1)
    return [
        Kernel("histogram", histogram, None, lambda q: (rng.standard_normal(100 if q else 1_000_000), 64)),
        Kernel("insertion sort", insertion_sort, None, lambda q: (rng.standard_normal(30 if q else 3000),)),
        Kernel("Viterbi", viterbi, None, lambda q: _hmm(8 if q else 32, 20 if q else 2000, rng), viterbi_numba),
        Kernel("LCS table", lcs_table, None,
               lambda q: tuple(rng.integers(0, 4, 20 if q else 1500).astype(np.int64) for _ in range(2))),
        Kernel("n-body step", nbody_step, None, lambda q: (rng.standard_normal((16 if q else 500, 3)),
                                                           rng.standard_normal((16 if q else 500, 3)),
                                                           rng.uniform(0.5, 1, 16 if q else 500), 0.01)),
        Kernel("power iteration (while)", power_iteration, None,
               lambda q: (_spd(20 if q else 300, rng), np.ones(20 if q else 300), 1e-9)),
        Kernel("CSR SpMV (slices)", spmv_slices, None, lambda q: _csr(30 if q else 2000, 20, rng)),
    ]


def _hmm(states: int, steps: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    def log_rows(shape: tuple[int, int]) -> np.ndarray:
        p = rng.uniform(0.1, 1, shape)
        return np.log(p / p.sum(axis=1, keepdims=True))
    return (np.log(np.full(states, 1.0 / states)), log_rows((states, states)), log_rows((states, 16)),
            rng.integers(0, 16, steps).astype(np.int64))


def _spd(n: int, rng: np.random.Generator) -> np.ndarray:
    a = rng.uniform(-1, 1, (n, n))
    return a @ a.T / n + np.diag(np.linspace(1, 2, n))


def _copy_args(args: tuple[Any, ...]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _agree(a: Any, b: Any) -> bool:
    return bool(np.allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-9, atol=1e-9))


def _alternating(calls: dict[str, Callable[..., Any] | None], args: tuple[Any, ...], rounds: int = 15,
                 budget: float = 3.0) -> dict[str, float]:
    """Median wall time of each call, timed in alternating rounds (eager, jitgraph, numba, eager, ...) on a fresh
    copy of the inputs each, so load from other processes and cache state fall on all columns alike. Eager gets
    at most 3 runs (one when a run exceeds a second: the eager CRC takes seconds); the rounds stop after the
    budget (at least 3), which counts the compiled columns' time only: a slow eager column would otherwise leave
    the compiled ones three samples each, and a median of three on a busy machine is noise."""
    times: dict[str, list[float]] = {name: [] for name, call in calls.items() if call is not None}
    spent = 0.0
    for r in range(rounds):
        for name, call in calls.items():
            if call is None or name == "eager" and (len(times[name]) >= 3 or sum(times[name]) > 1.0):
                continue
            fresh = _copy_args(args)
            t0 = time.perf_counter()
            call(*fresh)
            times[name].append(time.perf_counter() - t0)
            spent += times[name][-1] if name != "eager" else 0.0
        if r >= 2 and spent > budget:
            break
    return {name: statistics.median(v) for name, v in times.items()}


def _hand_built(k: Kernel, args: tuple[Any, ...]) -> tuple[Callable[..., Any], float]:
    from jitgraph.backends.base import get_backend
    from jitgraph.passes.manager import run_pipeline

    started = time.perf_counter()
    optimised, _ = run_pipeline(k.build(*args), {})
    driver = get_backend("cpu")(optimised, {"name": k.fn.__name__})
    if driver.fallback_reason() is not None:
        raise AssertionError(f"{k.name}: fell back to eager: {driver.fallback_reason()}")
    return (lambda *a: driver(list(a))[0]), time.perf_counter() - started


def _traced(k: Kernel, args: tuple[Any, ...]) -> tuple[Callable[..., Any], float]:
    import jitgraph

    compiled = jitgraph.compile(k.fn)
    started = time.perf_counter()
    compiled(*_copy_args(args))  # the first call traces, optimises and compiles
    first = time.perf_counter() - started
    info = compiled.cache_info()
    if info.fallbacks:
        raise AssertionError(f"{k.name}: did not compile to one graph: {jitgraph.explain(k.fn)(*args).break_reasons}")
    started = time.perf_counter()
    compiled(*_copy_args(args))
    warm = time.perf_counter() - started
    settle(compiled, lambda: compiled(*_copy_args(args)))  # past the tier-down probe (jit/tiering.py)
    return compiled, max(first - warm, 0.0)


def run_kernel(k: Kernel, quick: bool, hand_built: bool, rounds: int = 15) -> dict[str, Any]:
    import numba

    args = k.make(quick)
    expected = k.fn(*_copy_args(args))
    fn, compile_s = (_hand_built if hand_built and k.build is not None else _traced)(k, args)
    got = fn(*_copy_args(args))
    nb = numba.njit(k.numba_fn or k.fn)
    started = time.perf_counter()
    try:
        nb_value = nb(*_copy_args(args))
    except numba.core.errors.TypingError:  # Numba lacks a NumPy feature the kernel uses
        nb, nb_value = None, expected
    nb_compile = time.perf_counter() - started
    if not (_agree(got, expected) and _agree(nb_value, expected)):
        raise AssertionError(f"{k.name}: jitgraph, numba and eager disagree")

    t = _alternating({"eager": k.fn, "jitgraph": fn, "numba": nb}, args, rounds)
    return {"kernel": k.name, "eager": t["eager"], "jitgraph": t["jitgraph"], "numba": t.get("numba", math.nan),
            "compile": compile_s, "numba_compile": nb_compile}


def numba_startup() -> float:
    """Seconds for the first Numba compile of the process (LLVM set-up, typing registries, imports): paid once, by
    whichever function compiles first, so it is timed here and kept out of every kernel's compile columns."""
    import numba

    started = time.perf_counter()
    numba.njit(lambda a: a[0] + 1.0)(np.zeros(2))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test, not a measurement)")
    parser.add_argument("--only", help="run kernels whose name contains this text")
    parser.add_argument("--hand-built", action="store_true",
                        help="compile the hand-built graphs (build_*) instead of tracing the functions")
    parser.add_argument("--rounds", type=int, default=15,
                        help="alternating timing rounds per kernel (at most; they stop after ~3 s of compiled runs)")
    opts = parser.parse_args()
    how = "hand-built graphs" if opts.hand_built else "jitgraph.compile on the plain functions (one graph each)"
    print(f"jitgraph column: {how}; compile = first call minus a warm call (trace + passes + Numba)")
    print(f"Numba start-up, once per process, before the table (not in the compile columns): {numba_startup():.2f}s")
    header = (f"{'kernel':<22}{'eager':>11}{'jitgraph':>11}{'numba':>11}{'vs eager':>10}{'vs numba':>10}"
              f"{'compile':>9}{'nb comp':>9}")
    print(header)
    print("-" * len(header))
    for k in kernels() + traced_kernels():
        if opts.only and opts.only.lower() not in k.name.lower():
            continue
        try:
            r = run_kernel(k, opts.quick, opts.hand_built, opts.rounds)
        except AssertionError as e:  # a kernel that does not compile to one graph is reported, the table goes on
            print(f"{k.name:<22}  {str(e)[:200]}")
            continue
        print(f"{r['kernel']:<22}{r['eager'] * 1e3:>9.2f}ms{r['jitgraph'] * 1e3:>9.2f}ms{r['numba'] * 1e3:>9.2f}ms"
              f"{r['eager'] / r['jitgraph']:>9.1f}x{r['jitgraph'] / r['numba']:>9.2f}x"
              f"{r['compile']:>8.2f}s{r['numba_compile']:>8.2f}s")
    print("vs eager = eager time / jitgraph time (higher is better); vs numba = jitgraph time / numba.njit time "
          "on the same function (lower is better; target <= 1.25).")


if __name__ == "__main__":
    main()
