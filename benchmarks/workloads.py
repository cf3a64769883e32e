"""The six CPU workloads of issue 4, as plain NumPy functions, run eagerly and through ``jitgraph.compile``.

    python benchmarks/workloads.py            # full sizes: the README's Performance table
    python benchmarks/workloads.py --small    # tiny sizes, a smoke run
    python benchmarks/workloads.py --threshold  # the serial/parallel probe behind threads.PARALLEL_WORK

For each workload it checks compiled == eager, prints the median time of each (eager and compiled calls timed in
alternating blocks, ``timing.paired_timings``), the ratio, the cold compile time
(first call in this process, empty kernel cache) and the warm-cache first call (a fresh process with the cache
filled), and, for the memory-bound elementwise workloads, the fraction of the copy bandwidth reached (a copy on
every core; W6 updates in place, so its writes need no read-for-ownership and it can pass 100%): the workload's
median against the copy's median, the two timed in alternating blocks, and in parentheses the workload's best
time against the copy's best of 30 (the "copy bandwidth" line). ``torch.compile`` and
``jax.jit`` figures (``competitors.py``) appear only when those packages are installed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import competitors  # after the path is set, so the script runs from anywhere
from benchmarks.timing import median, paired_timings, settle, timings


# --- the workloads, written the way users write them ------------------------------------------------------------
def w1_fma_tanh(a, b, c):
    return np.tanh(a * b + c) * 0.5 + a


def w2_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def w3_layernorm(x, w, b):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    return xc / np.sqrt(var + 1e-5) * w + b


def w4_gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def w5_mlp_step(x, y, w1, b1, w2, b2):
    """One SGD step of a 784-512-10 MLP: ReLU, softmax cross-entropy (y one-hot), hand-written backward."""
    lr = 0.01
    n = x.shape[0]
    h = np.maximum(x @ w1 + b1, 0)
    logits = h @ w2 + b2
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = -(y * (z - np.log(s))).sum() / n
    dlogits = (e / s - y) / n
    dw2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = (dlogits @ w2.T) * (h > 0)
    dw1 = x.T @ dh
    db1 = dh.sum(axis=0)
    w1 -= lr * dw1
    b1 -= lr * db1
    w2 -= lr * dw2
    b2 -= lr * db2
    return loss


def w6_adam(p, g, m, v):
    lr, beta1, beta2, eps, t = 1e-3, 0.9, 0.999, 1e-8, 10
    m[...] = beta1 * m + (1 - beta1) * g
    v[...] = beta2 * v + (1 - beta2) * (g * g)
    mhat = m / (1 - beta1**t)
    vhat = v / (1 - beta2**t)
    p -= lr * mhat / (np.sqrt(vhat) + eps)


def make_inputs(name: str, scale: float = 1.0, dtype: str = "float32", seed: int = 0) -> list[np.ndarray]:
    """Inputs of workload ``name``; ``scale`` < 1 shrinks the sizes (tests use tiny ones)."""
    rng = np.random.default_rng(seed)

    def r(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(dtype)

    n = max(int(1e7 * scale), 8)
    rows, cols = max(int(4096 * scale), 2), max(int(1024 * min(1.0, scale * 16)), 4)
    if name == "W1":
        return [r(n), r(n), r(n)]
    if name in ("W2",):
        return [r(rows, cols)]
    if name == "W3":
        return [r(rows, cols), r(cols), r(cols)]
    if name == "W4":
        return [r(n)]
    if name == "W5":
        batch, din, hid = max(int(256 * scale), 4), max(int(784 * scale), 6), max(int(512 * scale), 5)
        y = np.zeros((batch, 10), dtype)
        y[np.arange(batch), rng.integers(0, 10, batch)] = 1
        return [r(batch, din), y, r(din, hid) * 0.05, r(hid) * 0.0, r(hid, 10) * 0.05, r(10) * 0.0]
    if name == "W6":
        return [r(n), r(n), r(n) * 0.1, np.abs(r(n)) * 0.01]
    raise KeyError(name)


WORKLOADS: dict[str, tuple[str, Callable[..., object]]] = {
    "W1": ("tanh(a*b+c)*0.5+a, 1e7", w1_fma_tanh),
    "W2": ("row softmax (4096,1024)", w2_softmax),
    "W3": ("layernorm (4096,1024)", w3_layernorm),
    "W4": ("tanh-GELU, 1e7", w4_gelu),
    "W5": ("MLP step 784-512-10, b256", w5_mlp_step),
    "W6": ("Adam, 1e7 params in place", w6_adam),
}
NUMBA_INIT: list[float] = []  # Numba's one-time target initialisation in each warm subprocess (not jitgraph time)
BANDWIDTH_BOUND = {"W1": 4, "W4": 2, "W6": 7}  # arrays streamed (read + written) per element


class CopyProbe:
    """A plain copy (read + write) on every core: the bound elementwise kernels aim at.

    Each core copies its own contiguous slice at once (``np.copyto`` releases the GIL), as the compiled kernels'
    threads do; a one-thread copy understates what the machine can stream."""

    def __init__(self, n: int = 10**7) -> None:
        from concurrent.futures import ThreadPoolExecutor

        workers = os.cpu_count() or 1
        src = np.ones(n, np.float32)
        dst = np.empty_like(src)
        bounds = np.linspace(0, n, workers + 1).astype(int)
        self.parts = [(dst[lo:hi], src[lo:hi]) for lo, hi in itertools.pairwise(bounds)]
        self.pool = ThreadPoolExecutor(workers)
        self.bytes = 2 * src.nbytes  # read once, written once
        self.call()

    def call(self) -> None:
        list(self.pool.map(lambda pair: np.copyto(*pair), self.parts))


def copy_bandwidth(probe: CopyProbe) -> float:
    """Bytes per second of the copy, best of 30: a busy machine can only make a copy slower."""
    return probe.bytes / timings(probe.call, 30)[1]


def results_agree(name: str, got: object, want: object, inputs_got: list, inputs_want: list) -> bool:
    rtol, atol = (2e-3, 1e-4) if name == "W5" else (1e-4, 1e-5)
    ok = all(np.allclose(a, b, rtol=rtol, atol=atol) for a, b in zip(inputs_got, inputs_want))
    if got is not None or want is not None:
        ok = ok and np.allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)
    return ok


def run_one(name: str, scale: float, repeat: int) -> dict:
    import jitgraph

    _, fn = WORKLOADS[name]
    compiled = jitgraph.compile(fn)
    base = make_inputs(name, scale)
    a = [x.copy() for x in base]
    b = [x.copy() for x in base]
    t = time.perf_counter()
    got = compiled(*a)
    cold = time.perf_counter() - t
    want = fn(*b)
    agree = results_agree(name, got, want, a, b)
    # In-place workloads change their inputs each call; that is fine for timing.
    ea = [x.copy() for x in base]
    ca = [x.copy() for x in base]
    settle(compiled, lambda: compiled(*ca))  # past the tier-down probe: the steady state
    # Alternating blocks of eager and compiled calls (paired_timings): both see the machine in the same state.
    (eager_t, eager_best), (comp_t, comp_best) = paired_timings(lambda: fn(*ea), lambda: compiled(*ca), repeat)
    return {"name": name, "eager": eager_t, "compiled": comp_t, "cold": cold, "agree": bool(agree),
            "best_ratio": eager_best / comp_best, "compiled_best": comp_best,
            "call": lambda: compiled(*ca), "arrays": ca}  # for the pairings with the copy and competitors


def warm_first_call(name: str, scale: float, cache_dir: str) -> float:
    """First-call time of ``name`` in a fresh process whose kernel cache is already filled."""
    root = str(Path(__file__).resolve().parent.parent)
    code = (f"import json,sys,time; sys.path.insert(0, {root!r}); import benchmarks.workloads as w, jitgraph;"
            f"fn = jitgraph.compile(w.WORKLOADS[{name!r}][1]); args = w.make_inputs({name!r}, {scale!r});"
            "from numba.core.registry import cpu_target; t = time.perf_counter(); cpu_target.target_context.refresh();"
            "init = time.perf_counter() - t;"
            "t = time.perf_counter(); fn(*args); print(json.dumps([time.perf_counter() - t, init]))")
    env = dict(os.environ, JITGRAPH_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        print(out.stderr[-3000:], file=sys.stderr)
        return float("nan")
    first, numba_init = json.loads(out.stdout.strip().splitlines()[-1])
    NUMBA_INIT.append(numba_init)
    return first


def small_call_overhead() -> tuple[float, float]:
    import jitgraph

    def fma(a, b, c):
        return a * b + c

    f = jitgraph.compile(fma)
    xs = [np.ones(16, np.float32) for _ in range(3)]
    f(*xs)
    return median(lambda: fma(*xs), 20000, 1.0), median(lambda: f(*xs), 20000, 1.0)


def threshold_probe() -> None:
    """Serial vs parallel time of a one-add kernel over growing sizes (what PARALLEL_WORK is read from)."""
    import jitgraph

    def add(a, b):
        return a + b

    from jitgraph.backends.cpu import threads

    for n in (10**4, 3 * 10**4, 10**5, 3 * 10**5, 10**6, 3 * 10**6):
        a, b = np.ones(n, np.float32), np.ones(n, np.float32)
        row = []
        for work in (1 << 62, 1):
            threads.PARALLEL_WORK = work
            f = jitgraph.compile(add)
            f(a, b)
            row.append(median(lambda: f(a, b), 200, 1.0) * 1e6)  # noqa: B023
        print(f"n={n:>8}  serial {row[0]:9.1f} us   parallel {row[1]:9.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny sizes (smoke run)")
    parser.add_argument("--threshold", action="store_true", help="print the serial/parallel probe and exit")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    args = parser.parse_args()
    cache_dir = os.environ.get("JITGRAPH_CACHE_DIR") or tempfile.mkdtemp(prefix="jitgraph-bench-")
    os.environ["JITGRAPH_CACHE_DIR"] = cache_dir
    if args.threshold:
        threshold_probe()
        return
    scale = 1e-3 if args.small else 1.0
    names = [n for n in WORKLOADS if not args.only or n in args.only.split(",")]
    probe = CopyProbe()
    bw = copy_bandwidth(probe)
    extras = competitors.available()  # torch.compile / jax.jit columns, only where installed
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"copy bandwidth: {bw / 1e9:.1f} GB/s; {os.cpu_count()} CPUs, load average {load}; cache: {cache_dir}")
    print(competitors.target_line())
    header = f"| {'workload':<32} | {'NumPy ms':>9} | {'jitgraph ms':>11} | {'ratio':>6} | {'best':>6} " \
             f"| {'cold s':>6} | {'warm 1st s':>10} | {'% of bw (best)':>14} | ok |"
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    rows = []
    for name in names:
        res = run_one(name, scale, 30)
        res["warm"] = warm_first_call(name, scale, cache_dir)
        base = make_inputs(name, scale)
        bound = BANDWIDTH_BOUND.get(name)
        call, arrays = res.pop("call"), res.pop("arrays")  # not part of the printed (or JSON) results
        res["extra"] = {kind: competitors.measure(kind, name, WORKLOADS[name][1], base, 30, paired_timings,
                                                  results_agree, call, arrays)
                        for kind in extras}
        frac = f"{'-':>14}"
        if bound:
            # The copy timed in alternating blocks with the workload: both medians from the same machine state.
            (copy_t, _), (kernel_t, _) = paired_timings(probe.call, call, 30)
            traffic = bound * base[0].nbytes
            paired = 100 * (traffic / kernel_t) / (probe.bytes / copy_t)
            frac = f"{paired:6.0f}% ({100 * traffic / bw / res['compiled_best']:3.0f}%)"
        label = f"{name} {WORKLOADS[name][0]}"
        print(f"| {label:<32} | {res['eager'] * 1e3:9.2f} | {res['compiled'] * 1e3:11.2f} | "
              f"{res['eager'] / res['compiled']:5.1f}x | {res['best_ratio']:5.1f}x | {res['cold']:6.2f} | "
              f"{res['warm']:10.3f} | {frac} | "
              f"{'yes' if res['agree'] else 'NO'} |")
        rows.append(res)
    if NUMBA_INIT:
        print(f"warm 1st: first call in a new process with the kernel cache filled, after Numba's own one-time "
              f"start-up ({min(NUMBA_INIT):.2f}-{max(NUMBA_INIT):.2f} s, not counted)")
    eager_small, comp_small = small_call_overhead()
    print(f"\nsmall call (a*b+c, three 16-element float32 arrays): NumPy {eager_small * 1e6:.1f} us, "
          f"jitgraph {comp_small * 1e6:.1f} us (+{(comp_small - eager_small) * 1e6:.1f} us)")
    if extras:
        print("\nCompetitors on the same workloads (median time, first-call compile time in parentheses, and in "
              "brackets jitgraph's median timed in alternating blocks with that competitor):")
        print("| workload | jitgraph | " + " | ".join(extras) + " |")
        print("|---|---|" + "---|" * len(extras))
        for res in rows:
            cells = [competitors.cell(res["extra"][kind]) for kind in extras]
            head = f"| {res['name']} | {res['compiled'] * 1e3:.2f} ms ({res['cold']:.1f} s) | "
            print(head + " | ".join(cells) + " |")
    if os.environ.get("JITGRAPH_BENCH_JSON"):
        Path(os.environ["JITGRAPH_BENCH_JSON"]).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
