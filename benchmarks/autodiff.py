"""Gradients of plain NumPy code: jitgraph.value_and_grad vs a hand-written backward vs HIPS autograd vs jax.grad.

Run ``python benchmarks/autodiff.py`` (``--quick`` for small sizes). Workloads: the MLP loss of
examples/mlp_autodiff.py and an RNN (BPTT through a ``loop`` region). Columns:

* ``hand eager``: the hand-written backward in NumPy (MLP only); ``hand jitgraph``: the same, ``jitgraph.compile``\\ d;
* ``jitgraph``: ``jitgraph.value_and_grad(loss)`` (forward and backward as one compiled graph);
* ``autograd``: HIPS ``autograd.value_and_grad`` of the same code through ``autograd.numpy``;
* ``jax``: ``jax.jit(jax.value_and_grad(...))`` of the same code in ``jax.numpy``.

autograd and jax are optional (not project dependencies): their columns read "-" when they are not installed.
Every row checks that the gradients agree before timing.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from mlp_training import loss as mlp_loss  # the examples' model (examples/ is not a package)
from mlp_training import loss_and_gradients

import jitgraph


def mlp_hand(params, x, y):
    """The hand-written backward of examples/mlp_training.py, returning (loss, grads)."""
    return loss_and_gradients(params, x, y, x.shape[0])


def rnn_loss(params, xs, h0, np=np):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ params["W"] + h @ params["U"] + params["b"])
    return (h * h).mean()


def optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def median_time(fn: Callable[[], Any], repeat: int = 7) -> float:
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def contenders(loss: Callable[..., Any], args: tuple) -> dict[str, Callable[[], Any]]:
    """value_and_grad of ``loss`` (w.r.t. its first argument) by every available tool, as zero-argument calls."""
    found: dict[str, Callable[[], Any]] = {}
    vg = jitgraph.value_and_grad(loss)
    found["jitgraph"] = lambda: vg(*args)
    autograd = optional("autograd")
    if autograd is not None:
        anp = importlib.import_module("autograd.numpy")
        ag = autograd.value_and_grad(lambda *a: loss(*a, np=anp))
        found["autograd"] = lambda: ag(*args)
    jax = optional("jax")
    if jax is not None:
        jnp = importlib.import_module("jax.numpy")
        jg = jax.jit(jax.value_and_grad(lambda *a: loss(*a, np=jnp)))
        jargs = jax.tree_util.tree_map(jnp.asarray, args)
        found["jax"] = lambda: jax.block_until_ready(jg(*jargs))
    return found


def check(reference: tuple, other: tuple, what: str) -> None:
    value, grads = reference
    np.testing.assert_allclose(float(other[0]), float(value), rtol=1e-4, err_msg=what)
    for k in grads:
        np.testing.assert_allclose(np.asarray(other[1][k]), grads[k], rtol=1e-3, atol=1e-5, err_msg=f"{what} {k}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    quick = parser.parse_args().quick
    rng = np.random.default_rng(0)
    n, dim, hidden, classes = (256, 64, 64, 10) if quick else (256, 784, 512, 10)
    mlp_params = {"W1": (rng.normal(size=(dim, hidden)) / np.sqrt(dim)).astype(np.float32),
                  "b1": np.zeros(hidden, np.float32),
                  "W2": (rng.normal(size=(hidden, classes)) / np.sqrt(hidden)).astype(np.float32),
                  "b2": np.zeros(classes, np.float32)}
    x, y = rng.normal(size=(n, dim)).astype(np.float32), rng.integers(0, classes, n)
    steps, batch, width = (20, 8, 16) if quick else (100, 32, 128)
    rnn_params = {"W": rng.normal(size=(width, width)).astype(np.float32) * 0.1,
                  "U": rng.normal(size=(width, width)).astype(np.float32) * 0.1, "b": np.zeros(width, np.float32)}
    xs, h0 = rng.normal(size=(steps, batch, width)).astype(np.float32), np.zeros((batch, width), np.float32)

    hand_compiled = jitgraph.compile(mlp_hand)
    rows = []
    for name, loss, args, hand in [(f"MLP {dim}->{hidden}->{classes}, batch {n}", mlp_loss, (mlp_params, x, y),
                                    mlp_hand),
                                   (f"RNN {width} wide, {steps} steps, batch {batch}", rnn_loss,
                                    (rnn_params, xs, h0), None)]:
        calls = contenders(loss, args)
        reference = calls["jitgraph"]()
        row = {"workload": name}
        if hand is not None:
            check(reference, hand(*args), f"{name}: hand-written")
            row["hand eager"] = median_time(lambda hand=hand, args=args: hand(*args))
            row["hand jitgraph"] = median_time(lambda args=args: hand_compiled(*args))
        for tool, call in calls.items():
            check(reference, call(), f"{name}: {tool}")
            row[tool] = median_time(call)
        rows.append(row)

    columns = ["hand eager", "hand jitgraph", "jitgraph", "autograd", "jax"]
    print(f"{'workload':42s}" + "".join(f"{c:>15s}" for c in columns))
    for row in rows:
        cells = "".join(f"{row[c] * 1e3:12.3f} ms" if c in row else f"{'-':>15s}" for c in columns)
        print(f"{row['workload']:42s}{cells}")
    missing = [m for m in ("autograd", "jax") if optional(m) is None]
    if missing:
        print(f"(not installed, skipped: {', '.join(missing)}; gradients of every column agree with jitgraph's)")


if __name__ == "__main__":
    main()
