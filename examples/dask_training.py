"""Data-parallel training of an MLP on a Dask cluster: each worker holds a shard of the data.

The model is the two-layer MLP (softmax cross-entropy, SGD) of mlp_training.py's first version. Each step, every worker
computes the gradient of its part of the global batch with a compiled function (the forward and backward pass of
``train_step``, without the update); the gradients are summed across workers in a tree of compiled additions; the client
updates the parameters once and broadcasts them to every worker. Because each shard's loss and gradient are divided by
the *global* batch size, their sum is exactly the full batch's, so the result equals single-process training on the same
batches (float32 sums in another order: within float tolerance), which this script checks.

    python examples/dask_training.py                          # a LocalCluster with 2 worker processes
    python examples/dask_training.py --scheduler tcp://host:8786 --workers 4
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _harness, run from anywhere
import cloudpickle
import mlp_training
from _harness import FirstCall, agreed, assert_same, print_table
from distributed import wait  # the dask extra: pip install 'jitgraph[dask]'
from mlp_training import init_params, loss_and_gradients, make_dataset, train_step

import jitgraph
import jitgraph.dask  # compiled functions defined here travel to the workers by value

cloudpickle.register_pickle_by_value(mlp_training)


# The model and its hand-written gradients are mlp_training.py's; that module travels to the workers by value
# (registered with cloudpickle below), so a worker needs no example file on its path.
shard_gradient = jitgraph.compile(loss_and_gradients)


@jitgraph.compile
def add_gradients(a: tuple[Any, dict[str, np.ndarray]], b: tuple[Any, dict[str, np.ndarray]]
                  ) -> tuple[Any, dict[str, np.ndarray]]:
    """One node of the reduction tree: two (loss, gradients) pairs summed."""
    return a[0] + b[0], {k: a[1][k] + b[1][k] for k in a[1]}


def worker_step(params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, lo: int, hi: int, n_total: int,
                gradient: Any = shard_gradient) -> tuple[Any, dict[str, np.ndarray]]:
    """On a worker: the gradient of rows ``lo:hi`` of the shard it holds."""
    return gradient(params, x[lo:hi], y[lo:hi], n_total)


def tree_sum(client: Any, parts: list[Any], add: Any = add_gradients) -> Any:
    """Sum futures pairwise, level by level (log2(workers) levels; each addition runs where its inputs are)."""
    while len(parts) > 1:
        parts = [client.submit(add, parts[i], parts[i + 1], pure=False) if i + 1 < len(parts)
                 else parts[i] for i in range(0, len(parts), 2)]
    return parts[0]


def shard(x: np.ndarray, y: np.ndarray, workers: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Contiguous shards, one per worker (equal sizes; rows that do not divide evenly are dropped)."""
    rows = len(x) // workers
    return [(x[w * rows:(w + 1) * rows], y[w * rows:(w + 1) * rows]) for w in range(workers)]


def train_distributed(client: Any, params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, *, epochs: int,
                      batch: int, lr: float, compiled: bool = True
                      ) -> tuple[dict[str, np.ndarray], list[float], float]:
    """Data-parallel SGD: shards scattered once to their workers, one gradient task per worker and step, a tree
    sum, one update on the client, the parameters broadcast. Returns the parameters, the loss of each step and
    the median seconds per step after the first (which compiles on each worker). ``compiled=False`` runs the same
    steps with eager NumPy (the uncompiled functions), for comparison."""
    gradient = shard_gradient if compiled else shard_gradient.fn
    add = add_gradients if compiled else add_gradients.fn
    addresses = jitgraph.dask.worker_addresses(client)
    workers = len(addresses)
    local = batch // workers
    shards = [(client.scatter(sx, workers=[a], hash=False), client.scatter(sy, workers=[a], hash=False))
              for (sx, sy), a in zip(shard(x, y, workers), addresses)]
    params = {k: v.copy() for k, v in params.items()}
    losses, seconds = [], []
    steps_per_epoch = (len(x) // workers) // local
    for step in range(epochs * steps_per_epoch):
        start = time.perf_counter()
        lo = (step % steps_per_epoch) * local
        [shared] = client.scatter([params], broadcast=True, hash=False)
        parts = []
        for (sx, sy), a in zip(shards, addresses):
            parts.append(client.submit(worker_step, shared, sx, sy, lo, lo + local, batch, gradient, workers=[a],
                                       pure=False))
            if step == 0 and compiled:  # the first worker compiles, the others then load its kernels from the
                wait(parts[0])           # shared cache instead of all compiling the same kernels at once
        loss, grads = tree_sum(client, parts, add).result()
        for k in params:
            params[k] -= lr * grads[k]
        losses.append(float(loss))
        seconds.append(time.perf_counter() - start)
    # The median: a worker's first compiled addition may come at any step (the tree's tasks run where their inputs
    # are), and its one-time trace and kernel load is not the cost of a step.
    return params, losses, float(np.median(seconds[1:] or seconds))


def global_batches(x: np.ndarray, y: np.ndarray, workers: int, batch: int, epochs: int):
    """The batches the distributed run uses, as one process sees them: step s is rows ``s*local:(s+1)*local`` of
    every shard, concatenated in worker order."""
    shards = shard(x, y, workers)
    local = batch // workers
    steps = len(shards[0][0]) // local
    for step in range(epochs * steps):
        lo = (step % steps) * local
        yield (np.concatenate([sx[lo:lo + local] for sx, _ in shards]),
               np.concatenate([sy[lo:lo + local] for _, sy in shards]))


def train_single(step: Any, params: dict[str, np.ndarray], batches: Any, lr: float) -> list[float]:
    """The same batches in one process with mlp_training's step (it updates ``params`` in place)."""
    return [float(step(params, xb, yb, lr)) for xb, yb in batches]


def run(client: Any, small: bool = True) -> dict[str, Any]:
    """Train on ``client``'s cluster and in one process; check they agree; return what was measured."""
    n, dim, hidden, classes, batch, epochs = (512, 32, 64, 10, 64, 2) if small else (16384, 784, 512, 10, 1024, 2)
    workers = len(jitgraph.dask.worker_addresses(client))
    x, y = make_dataset(n, dim, classes)
    params0 = init_params(dim, hidden, classes)
    dist_params, dist_losses, per_step = train_distributed(client, params0, x, y, epochs=epochs, batch=batch, lr=0.1)
    # The same steps with eager NumPy on the workers: the comparison under Dask (same tasks, same transfers).
    _, dask_eager_losses, dask_eager_per_step = train_distributed(client, params0, x, y, epochs=epochs, batch=batch,
                                                                  lr=0.1, compiled=False)
    eager_params = {k: v.copy() for k, v in params0.items()}
    start = time.perf_counter()
    eager_losses = train_single(train_step, eager_params, global_batches(x, y, workers, batch, epochs), 0.1)
    eager_per_step = (time.perf_counter() - start) / len(eager_losses)
    np.testing.assert_allclose(dist_losses, eager_losses, rtol=2e-3, atol=1e-5)
    np.testing.assert_allclose(dask_eager_losses, eager_losses, rtol=2e-3, atol=1e-5)
    assert_same(eager_params, dist_params, rtol=2e-3, atol=2e-4, what="params after distributed training")
    return {"workers": workers, "steps": len(dist_losses), "losses": dist_losses, "params": dist_params,
            "eager_losses": eager_losses, "per_step": per_step, "eager_per_step": eager_per_step,
            "dask_eager_per_step": dask_eager_per_step,
            "shape": (dim, hidden, classes, batch)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny sizes, for CI")
    parser.add_argument("--scheduler", help="address of a running dask scheduler (default: a LocalCluster)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    with client:
        result = run(client, small=args.small)
    print(f"{result['workers']} workers, {result['steps']} steps: loss {result['losses'][0]:.4f} -> "
          f"{result['losses'][-1]:.4f}")
    agreed(f"{result['steps']} data-parallel steps on {result['workers']} workers equal one-process training")
    dim, hidden, classes, batch = result["shape"]
    # One process, eager and compiled, beside the cluster's step with eager and compiled gradients.
    local = jitgraph.compile(train_step)
    first = FirstCall(local)
    xb, yb = make_dataset(batch, dim, classes)
    params = init_params(dim, hidden, classes)
    first(params, xb, yb, 0.0)
    per_call: dict[Any, list[float]] = {train_step: [], local: []}
    for _ in range(5):  # eager and compiled alternating, the median of each (lr 0: params stay as they are)
        for step, times in per_call.items():
            start = time.perf_counter()
            step(params, xb, yb, 0.0)
            times.append(time.perf_counter() - start)
    name = f"MLP step {dim}->{hidden}->{classes}, batch {batch}"
    rows = [{"name": f"{name}, 1 process", "eager": float(np.median(per_call[train_step])),
             "compiled": float(np.median(per_call[local])), "compile": first.seconds},
            {"name": f"{name}, {result['workers']} Dask workers (per step)", "eager": result["dask_eager_per_step"],
             "compiled": result["per_step"], "compile": first.seconds}]
    print_table("dask_training", rows, local, first)


if __name__ == "__main__":
    main()
