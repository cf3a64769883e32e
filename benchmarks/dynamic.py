"""The five size-changing loops of issue 20: how many entries each compiles, and eager vs compiled wall time.

Run ``python benchmarks/dynamic.py`` (``--part loops``, ``workloads`` or ``corpus`` for one table). Each loop is plain NumPy, run once eagerly and twice compiled (cold: a fresh
``jitgraph.compile``, so every trace and compile is paid; warm: the same compiled function again, every entry
cached). ``compile s`` is cold minus warm. ``entries`` counts traces; ``recomp`` recompiles; ``inst`` the sizes served
by instantiating a symbolic trace (no trace, jit/symbolic_sizes.py); ``variants`` entries traced again only for new
sizes of dynamic dimensions whose symbolic trace failed (``new ms``: what each instance or variant costs before its
first run, trace or instantiation to code generation, mean); ``numba``
counts Numba dispatchers the cold pass compiled or loaded from Numba's disk cache: loop drivers (one whose source
another size compiled already is shared, not counted) and fused kernels (first calls; a kernel whose source another
size started is shared). Every row checks that compiled and eager results agree.
``tests/dynamic/test_loops.py`` runs the same loops (smaller) with their entry budgets.

The second table runs the six workloads W1-W6 of ``benchmarks/workloads.py`` (imported, not copied) with static and
with dynamic shapes. *static*: ``jitgraph.compile(fn)``, warmed up at the workload's size. *dynamic*:
``jitgraph.compile(fn, dynamic=True)``, traced with symbolic sizes at 3/4 of the batch dimension (dim 0 of every
input that shares the first input's dim 0), then called at the workload's size: that call is an *instance* of the
symbolic trace (``inst`` 1: no trace; the same kernels, which take their extents as run-time arguments, no Numba
compile: ``new size s`` is its first-call time), or a size variant or recompile where the symbolic trace failed.
Both are then timed at the workload's size in alternating blocks (``timing.paired_timings``, medians) and compared:
``ratio`` = dynamic / static. ``noise`` is the same pairing of the static function against a second static
function (``jitgraph.compile(fn)`` again): the same kernels, but their own result buffers, whose placement in memory
(huge pages or not) alone moved W1 and W3 by up to 8% here; so a ratio is only a difference beyond its noise.
Every row checks both results against eager NumPy. Both sides run the same Numba dispatcher per kernel and launch
code that differs only in its extents, so a dynamic row slower beyond the noise would be news (none was here: W1 and
W6 once came out 17% slower with inputs copied for each side, 0-3% with shared inputs).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the script runs from anywhere

import jitgraph
from benchmarks import floor, workloads
from benchmarks.timing import paired_timings, settle
from jitgraph.backends.cpu import cache as kernel_cache

# ----------------------------------------------------------------------------- the steps, as users write them


def mlp_step(x, y, w1, w2, lr):
    """One SGD step of a 2-layer MLP with softmax cross-entropy (``y`` one-hot)."""
    h = np.maximum(x @ w1, 0.0)
    o = h @ w2
    e = np.exp(o - o.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    loss = -np.sum(y * np.log(p + 1e-7)) / x.shape[0]
    d_o = (p - y) / x.shape[0]
    d_h = (d_o @ w2.T) * (h > 0)
    return w1 - lr * (x.T @ d_h), w2 - lr * (h.T @ d_o), loss


def rnn_forward(xs, h, wx, wh):
    """A recurrent cell over a sequence of ``xs.shape[0]`` steps."""
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh)
    return h


def attention(q, k, v):
    """Softmax attention over ``q.shape[0]`` tokens."""
    s = q @ k.T / np.sqrt(q.shape[-1])
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    return p @ v


def adam_step(p, g, m, v, t, lr):
    """Adam with a step counter and a clipped gradient."""
    norm = np.sqrt(np.sum(g * g))
    g = g * min(1.0, 1.0 / (norm + 1e-6))
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    mh = m / (1 - 0.9 ** t)
    vh = v / (1 - 0.999 ** t)
    return p - lr * mh / (np.sqrt(vh) + 1e-8), m, v


def kmeans_step(points, centroids):
    """One Lloyd iteration: assign every point to its nearest centroid, then move the centroids."""
    d = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=-1)
    assign = d.argmin(axis=1)
    onehot = (assign[:, None] == np.arange(centroids.shape[0])[None, :]).astype(points.dtype)
    counts = onehot.sum(axis=0)
    return (onehot.T @ points) / np.maximum(counts, 1.0)[:, None]


# ----------------------------------------------------------------------------- the loops


def mlp_epoch(step: Callable, scale: int = 1) -> list[Any]:
    rng = np.random.default_rng(0)
    n = 1000 // scale
    x = rng.standard_normal((n, 784 // scale)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)]
    w1 = (rng.standard_normal((784 // scale, 64)) * 0.05).astype(np.float32)
    w2 = (rng.standard_normal((64, 10)) * 0.05).astype(np.float32)
    losses = []
    batch = 128 // scale
    for i, start in enumerate(range(0, n, batch)):
        lr = 0.1 * 0.95 ** i
        w1, w2, loss = step(x[start:start + batch], y[start:start + batch], w1, w2, lr)
        losses.append(loss)
    return [w1, w2, np.array(losses)]


def rnn_sequences(step: Callable, scale: int = 1) -> list[Any]:
    rng = np.random.default_rng(1)
    d = 32 // scale
    wx = (rng.standard_normal((d, d)) * 0.3).astype(np.float32)
    wh = (rng.standard_normal((d, d)) * 0.3).astype(np.float32)
    lengths = [5, 9, 12, 7, 20, 3, 15, 9, 11, 6, 17, 13, 4, 5]  # 14 sequences, 12 lengths
    return [step(rng.standard_normal((n, d)).astype(np.float32), np.zeros(d, np.float32), wx, wh)
            for n in lengths]


def attention_lengths(step: Callable, scale: int = 1) -> list[Any]:
    rng = np.random.default_rng(2)
    d = 64 // scale
    out = []
    for n in (16, 24, 32, 40, 48, 56, 64, 72, 80, 96):
        q, k, v = (rng.standard_normal((n // scale, d)).astype(np.float32) for _ in range(3))
        out.append(step(q, k, v))
    return out


def adam_steps(step: Callable, scale: int = 1) -> list[Any]:
    rng = np.random.default_rng(3)
    n = 4096 // scale
    p = rng.standard_normal(n)
    m, v = np.zeros(n), np.zeros(n)
    for t in range(1, 31):
        g = rng.standard_normal(n) * (0.1 if t % 2 else 10.0)  # every other gradient is clipped
        p, m, v = step(p, g, m, v, t, 1e-3)
    return [p, m, v]


def kmeans_clouds(step: Callable, scale: int = 1) -> list[Any]:
    rng = np.random.default_rng(4)
    out = []
    for n in (500, 800, 300, 1200, 650, 900):
        points = rng.standard_normal((n // scale, 3))
        centroids = points[:8].copy()
        for _ in range(5):
            centroids = step(points, centroids)
        out.append(centroids)
    return out


@dataclass
class Loop:
    name: str
    step: Callable
    run: Callable[[Callable, int], list[Any]]
    budget: int  # the "should be" entries


LOOPS = [
    Loop("MLP epoch, last batch short", mlp_step, mlp_epoch, 2),
    Loop("RNN cell, 12 sequence lengths", rnn_forward, rnn_sequences, 2),
    Loop("softmax attention, 10 lengths", attention, attention_lengths, 2),
    Loop("Adam, step counter + clipping", adam_step, adam_steps, 3),
    Loop("k-means, 6 point-cloud sizes", kmeans_step, kmeans_clouds, 2),
]


def agree(a: list[Any], b: list[Any], rtol: float = 2e-3, atol: float = 2e-4) -> bool:
    return len(a) == len(b) and all(np.allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=rtol,
                                                atol=atol) for x, y in zip(a, b))


def loop_drivers_compiled(f: Any) -> int:
    """Entries whose loop driver Numba compiled for them: a driver whose source another size compiled already
    (run-time trip counts, ``RegionDriver.shared``) is not counted."""
    return sum(1 for e in f.explain().entries
               if e.mode == "graph" and getattr(e.compiled, "shared", None) is False)


def kernels_started() -> int:
    """Fused-kernel dispatchers whose first call compiled them or loaded them from Numba's disk cache, so far."""
    return kernel_cache.STATS["compiled"] + kernel_cache.STATS["cache_hits"]


def variant_ms(f: Any) -> float:
    """Mean time (trace, passes, code generation) of the size variants and instances: what each new size of a dynamic
    dimension costs before its first run (0 without either). ``pass:*`` times are parts of ``passes``."""
    times = [sum(t for k, t in e.times.items() if not k.startswith("pass:")) for e in f.entries
             if e.variant or e.instance_of is not None]
    return 1e3 * sum(times) / len(times) if times else 0.0


def loops_table(scale: int) -> None:
    print(f"{'loop':34} {'entries':>7} {'recomp':>6} {'variants':>8} {'inst':>4} {'budget':>6} {'numba':>5} "
          f"{'new ms':>6} {'compile s':>9} {'eager s':>8} {'cold s':>8} {'warm s':>8}  agree  fallbacks")
    for loop in LOOPS:
        t0 = time.perf_counter()
        expected = loop.run(loop.step, scale)
        eager = time.perf_counter() - t0
        f = jitgraph.compile(loop.step)
        kernels = kernels_started()
        t0 = time.perf_counter()
        got = loop.run(f, scale)
        cold = time.perf_counter() - t0
        kernels = kernels_started() - kernels
        t0 = time.perf_counter()
        loop.run(f, scale)
        warm = time.perf_counter() - t0
        info = f.cache_info()
        print(f"{loop.name:34} {info.entries:7d} {info.recompiles:6d} {info.size_variants:8d} "
              f"{info.size_instances:4d} {loop.budget:6d} "
              f"{loop_drivers_compiled(f) + kernels:5d} {variant_ms(f):6.1f} {cold - warm:9.2f} {eager:8.3f} "
              f"{cold:8.2f} {warm:8.3f}  {'yes' if agree(got, expected) else 'NO':5}  {info.fallbacks}")


# ----------------------------------------------------------------------------- W1-W6, static vs dynamic shapes


def shorter_batch(inputs: list[np.ndarray], fraction: float = 0.75) -> list[np.ndarray]:
    """The inputs with the batch dimension cut to ``fraction``: dim 0 of every array whose dim 0 is the first
    input's (W3's weights and W5's parameters keep their sizes). Copies, so in-place workloads touch nothing else."""
    n = inputs[0].shape[0]
    m = max(int(n * fraction), 1)
    return [(x[:m] if x.ndim and x.shape[0] == n else x).copy() for x in inputs]


@dataclass
class Comparison:
    """One workload, static against dynamic shapes (module docstring)."""

    name: str
    static: float  # median seconds
    dynamic: float
    noise: float  # static against a second static function: the second median over the first
    entries: int
    variants: int
    instances: int
    new_size: float  # first call of the dynamic function at the workload's size, after the shorter batch
    agree: bool


def compare(name: str, scale: float, repeat: int = 30) -> Comparison:
    _, fn = workloads.WORKLOADS[name]
    base = workloads.make_inputs(name, scale)
    want_args = [x.copy() for x in base]
    want = fn(*want_args)
    static, dynamic, again = jitgraph.compile(fn), jitgraph.compile(fn, dynamic=True), jitgraph.compile(fn)
    s_args, d_args = [x.copy() for x in base], [x.copy() for x in base]
    got_static = static(*s_args)
    again(*[x.copy() for x in base])
    dynamic(*shorter_batch(base))
    t = time.perf_counter()
    got_dynamic = dynamic(*d_args)
    new_size = time.perf_counter() - t
    agree = (workloads.results_agree(name, got_static, want, s_args, want_args)
             and workloads.results_agree(name, got_dynamic, want, d_args, want_args))
    # Both sides run on the same arrays: separate copies of 40 MB inputs alone moved a memory-bound workload by up
    # to 15% (where their pages landed), which would be charged to static or dynamic shapes. In-place workloads
    # (W5, W6) keep updating them; their speed does not depend on the values.
    args = [x.copy() for x in base]
    for f in (static, dynamic, again):
        settle(f, lambda f=f: f(*args))  # past the tier-down probe (jit/tiering.py): the steady state
    (t_static, _), (t_dynamic, _) = paired_timings(lambda: static(*args), lambda: dynamic(*args), repeat)
    (n_first, _), (n_second, _) = paired_timings(lambda: static(*args), lambda: again(*args), repeat)
    info = dynamic.cache_info()
    return Comparison(name, t_static, t_dynamic, n_second / n_first, info.entries, info.size_variants,
                      info.size_instances, new_size, agree)


def workloads_table(scale: float) -> None:
    print(f"{'workload':34} {'static ms':>9} {'dynamic ms':>10} {'ratio':>6} {'noise':>6} {'entries':>7} "
          f"{'variants':>8} {'inst':>4} {'new size s':>10}  agree")
    worst = 0.0
    for name, (label, _) in workloads.WORKLOADS.items():
        c = compare(name, scale)
        worst = max(worst, abs(c.noise - 1))
        print(f"{name + ' ' + label:34} {c.static * 1e3:9.2f} {c.dynamic * 1e3:10.2f} {c.dynamic / c.static:6.3f} "
              f"{c.noise:6.3f} {c.entries:7d} {c.variants:8d} {c.instances:4d} {c.new_size:10.3f}  "
              f"{'yes' if c.agree else 'NO'}")
    print(f"ratio: dynamic / static median; noise: a second static function / static (largest deviation "
          f"{100 * worst:.1f}%)")


# ----------------------------------------------------------------------------- symbolic sizes over the floor corpus


def _cut(args: tuple[Any, ...], n: int, m: int) -> tuple[Any, ...]:
    """Every axis of length ``n`` (the first argument's dim 0) cut to ``m``; copies, so in-place code is compared."""
    def one(a: Any) -> Any:
        if not isinstance(a, np.ndarray):
            return a
        return a[tuple(slice(0, m) if d == n else slice(None) for d in a.shape)].copy()
    return tuple(one(a) for a in args)


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, tuple):
        return isinstance(got, tuple) and len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
    got, want = np.asarray(got), np.asarray(want)
    return got.shape == want.shape and got.dtype == want.dtype and \
        bool(np.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True))


def corpus_table() -> None:
    """Each function of ``benchmarks/floor.py`` (written for issue 21, not for this) at six sizes of its batch
    dimension, float32 and float64, compiled with the defaults: every call against eager NumPy (results and the
    arguments it mutates), and how the sizes were served -- traces (entries), instances of a symbolic trace, size
    variants, eager calls."""
    rows, wrong = [], []
    for fn, make in floor.FUNCTIONS:
        for dt in (np.float32, np.float64):
            base = make(np.random.default_rng(0), dt)
            n = base[0].shape[0] if isinstance(base[0], np.ndarray) and base[0].ndim else 0
            if n < 8:
                continue
            f = jitgraph.compile(fn)
            for frac in (0.5, 0.75, 1.0, 0.3, 0.9, 0.6):
                m = max(2, int(n * frac))
                args, want_args = _cut(base, n, m), _cut(base, n, m)
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want = fn(*want_args)
                    got = f(*args)
                if not (_same(got, want) and all(_same(a, b) for a, b in zip(args, want_args))):
                    wrong.append(f"{fn.__name__}/{dt.__name__} at {m}")
            info = f.cache_info()
            rows.append((f"{fn.__name__}/{dt.__name__}", info.entries, info.size_instances, info.size_variants,
                         info.fallbacks))
    served = sum(1 for r in rows if r[2])
    print(f"floor corpus, 6 sizes each: {len(rows)} functions, {served} served by one symbolic trace after the first "
          f"recompile; traces {sum(r[1] for r in rows)}, instances {sum(r[2] for r in rows)}, size variants "
          f"{sum(r[3] for r in rows)}, eager calls {sum(r[4] for r in rows)}; wrong: {len(wrong)} {wrong[:5]}")
    for name, entries, inst, variants, eager in rows:
        if not inst:
            print(f"  traced per size: {name:32} entries {entries}, variants {variants}, eager calls {eager}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1, help="divide the sizes by this (quick runs)")
    parser.add_argument("--part", choices=("all", "loops", "workloads", "corpus"), default="all",
                        help="which table to print")
    args = parser.parse_args()
    if args.part in ("all", "loops"):
        loops_table(args.scale)
    if args.part in ("all", "workloads"):
        if args.part == "all":
            print()
        workloads_table(1.0 / args.scale)
    if args.part in ("all", "corpus"):
        if args.part == "all":
            print()
        corpus_table()


if __name__ == "__main__":
    main()
