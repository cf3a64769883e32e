"""Compiled functions under Dask on 1 and 2 worker processes, eager NumPy under Dask beside them.

Two workloads:

* a bandwidth-bound elementwise function over a chunked float64 array held by the workers (the input is
  persisted on the cluster first; the output is persisted and released, so nothing travels to the client);
* the data-parallel MLP training step of ``examples/dask_training.py`` (gradients on each worker's shard, a tree
  sum, one update, a broadcast), median seconds per step after the first, compiled and eager epochs alternating.

Each cluster is a ``LocalCluster(n_workers=k, threads_per_worker=1, processes=True)`` sharing one kernel cache, so
the second cluster's workers load kernels the first compiled. Timings are medians of a few runs; the first run of
each (compiles on every worker) is not timed. On a machine with two cores, two workers cannot scale past 2x and
share memory bandwidth: see README "Dask" for what a real cluster changes.

    python benchmarks/dask_scaling.py            # ~1-2 minutes
    python benchmarks/dask_scaling.py --small    # a quick check that it runs
"""

from __future__ import annotations

import argparse
import itertools
import site
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import dask
import dask.array as da
from dask_training import init_params, make_dataset, train_distributed
from distributed import Client, LocalCluster, wait

import jitgraph
import jitgraph.dask as jd

ROUNDS = 5  # alternating compiled/eager training epochs per cluster


def saxpy_tanh(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bandwidth-bound: two reads and one write per element, a little arithmetic (NumPy makes 4 temporaries)."""
    return np.tanh(0.5 * x) * 2.0 + y * 0.25


compiled_saxpy = jitgraph.compile(saxpy_tanh)


def time_elementwise(client: Client, n: int, chunk: int, repeat: int) -> dict[str, float]:
    """Seconds per pass of the elementwise function over n float64 elements, compiled and eager, under Dask."""
    # x and y as rows of one array: block i of both is made by one task, so both sit on the same worker (two
    # arrays made separately would be spread independently, and half the blocks would travel to their partner).
    both = da.random.default_rng(0).random((2, n), chunks=(2, chunk))
    x, y = client.persist([both[0], both[1]])
    wait([x, y])
    out: dict[str, float] = {}
    # A new name for every run: the same graph again would find its keys still in the workers' memory and
    # return at once (a release is asynchronous).
    names = (f"run-{i}" for i in itertools.count())
    for label, make in (("compiled", lambda: jd.map_blocks(compiled_saxpy, x, y, name=next(names))),
                        ("eager", lambda: da.map_blocks(saxpy_tanh, x, y, dtype=np.float64, name=next(names)))):
        result = make().persist()
        wait(result)
        assert np.allclose(result[:1000].compute(), saxpy_tanh(x[:1000].compute(), y[:1000].compute()))
        del result
        times = []
        for _ in range(repeat):
            graph = make()  # building the graph (tracing, for the compiled one) is not timed: the run is
            start = time.perf_counter()
            result = graph.persist()
            wait(result)
            times.append(time.perf_counter() - start)
            del result
        out[label] = float(np.median(times))
        out[label + " best"] = float(min(times))
    return out


def time_training(client: Client, small: bool) -> dict[str, float]:
    """Seconds per data-parallel training step, compiled and eager gradients, on this cluster."""
    n, dim, hidden, classes, batch = (1024, 32, 64, 10, 128) if small else (16384, 784, 256, 10, 2048)
    x, y = make_dataset(n, dim, classes)
    runs: dict[str, list[float]] = {"compiled": [], "eager": []}
    for _ in range(ROUNDS):  # compiled and eager epochs alternating, so both see the machine in the same states
        for label, times in runs.items():
            _, _, per_step = train_distributed(client, init_params(dim, hidden, classes), x, y, epochs=1,
                                               batch=batch, lr=0.1, compiled=label == "compiled")
            times.append(per_step)  # the median over the epoch's steps after the first
    return {label: float(np.median(times)) for label, times in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--workers", default="1,2", help="worker counts to try (comma-separated)")
    args = parser.parse_args()
    n, chunk, repeat = (2**20, 2**17, 3) if args.small else (2**25, 2**22, 7)
    rows = []
    for workers in [int(w) for w in args.workers.split(",")]:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            client.run(site.addsitedir, str(ROOT / "examples"))
            with dask.config.set(scheduler=client):
                elementwise = time_elementwise(client, n, chunk, repeat)
                training = time_training(client, args.small)
            rows.append((workers, elementwise, training))
    gb = 3 * n * 8 / 1e9
    print(f"elementwise: {n:,} float64 in chunks of {chunk:,} ({gb:.2f} GB read+written per pass); "
          f"training: data-parallel MLP step ({'small' if args.small else '784->256->10, global batch 2048'})")
    print(f"elementwise: median (best) of the runs; train step: median over an epoch's steps after the first, "
          f"the median of {ROUNDS} alternating compiled/eager epochs")
    print(f"{'workers':>7} | {'elementwise eager':>19} | {'compiled':>19} | {'GB/s':>5} | "
          f"{'train step eager':>16} | {'compiled':>9}")
    for workers, e, t in rows:
        print(f"{workers:>7} | {e['eager'] * 1e3:>7.1f} ({e['eager best'] * 1e3:>6.1f}) ms | "
              f"{e['compiled'] * 1e3:>7.1f} ({e['compiled best'] * 1e3:>6.1f}) ms | {gb / e['compiled best']:>5.2f} | "
              f"{t['eager'] * 1e3:>13.1f} ms | {t['compiled'] * 1e3:>6.1f} ms")

if __name__ == "__main__":
    main()
