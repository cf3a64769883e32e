"""Gradients of plain NumPy code: jitgraph.value_and_grad vs a hand-written backward vs HIPS autograd vs jax.grad.

Run ``python benchmarks/autodiff.py`` (``--quick`` for small sizes). On a small shared machine set
``OPENBLAS_NUM_THREADS=1``: OpenBLAS's spinning threads otherwise make every column that calls BLAS noisy by
tens of milliseconds. Workloads: the MLP loss of examples/mlp_autodiff.py and an RNN (BPTT through a ``loop``
region). Columns (milliseconds per call, medians of calls taken in alternating rounds, so a burst of load on the
machine lands on every column alike):

* ``eager fwd``: the loss alone in NumPy; ``jitgraph fwd``: the loss ``jitgraph.compile``\\ d (the gradient's cost
  is read against these);
* ``hand eager``: a hand-written backward in NumPy (loss and gradients); ``hand jitgraph``: the same, compiled (the
  MLP's comes from examples/mlp_training.py; the RNN's, written below, stores the hidden states in a list, which
  the tracer does not capture as one graph, so it has no compiled column);
* ``jitgraph``: ``jitgraph.value_and_grad(loss)`` (forward and backward as one compiled graph);
* ``autograd``: HIPS ``autograd.value_and_grad`` of the same code through ``autograd.numpy``;
* ``jax``: ``jax.jit(jax.value_and_grad(...))`` of the same code in ``jax.numpy`` (its first call, which compiles,
  is not timed, as for jitgraph).

autograd and jax are optional benchmark peers (``pip install autograd jax``), never dependencies: their columns
read "-" when they are not installed. Every gradient is checked against jitgraph's before anything is timed.
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

PEERS = ("autograd", "jax")
COLUMNS = ["eager fwd", "jitgraph fwd", "hand eager", "hand jitgraph", "jitgraph", *PEERS]


def mlp_hand(params, x, y):
    """The hand-written backward of examples/mlp_training.py, returning (loss, grads)."""
    return loss_and_gradients(params, x, y, x.shape[0])


def rnn_loss(params, xs, h0, np=np):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ params["W"] + h @ params["U"] + params["b"])
    return (h * h).mean()


def rnn_hand(params, xs, h0):
    """BPTT by hand: the forward keeps every hidden state, the backward walks them in reverse."""
    hs = [h0]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ params["W"] + hs[-1] @ params["U"] + params["b"]))
    h = hs[-1]
    g = 2 * h / h.size
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    for t in range(xs.shape[0] - 1, -1, -1):
        gz = g * (1 - hs[t + 1] * hs[t + 1])
        grads["W"] += xs[t].T @ gz
        grads["U"] += hs[t].T @ gz
        grads["b"] += gz.sum(axis=0)
        g = gz @ params["U"].T
    return (h * h).mean(), grads


def optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def peers(loss: Callable[..., Any], args: tuple) -> dict[str, Callable[[], Any]]:
    """value_and_grad of ``loss`` (w.r.t. its first argument) by every installed peer, as zero-argument calls."""
    found: dict[str, Callable[[], Any]] = {}
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


def alternating_medians(calls: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Median seconds per call of each entry, one call of each per round (every call made once untimed first)."""
    for call in calls.values():
        call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in samples.items()}


def workloads(quick: bool) -> list[tuple[str, Callable[..., Any], tuple, Callable[..., Any], bool]]:
    """(name, loss, args, hand-written loss-and-gradients, whether that compiles as one graph)."""
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
    return [(f"MLP {dim}->{hidden}->{classes}, batch {n}", mlp_loss, (mlp_params, x, y), mlp_hand, True),
            (f"RNN {width} wide, {steps} steps, batch {batch}", rnn_loss, (rnn_params, xs, h0), rnn_hand, False)]


def measure(name: str, loss: Callable[..., Any], args: tuple, hand: Callable[..., Any], hand_compiles: bool,
            rounds: int) -> dict[str, Any]:
    value_and_grad = jitgraph.value_and_grad(loss)
    forward = jitgraph.compile(loss)
    reference = value_and_grad(*args)
    calls: dict[str, Callable[[], Any]] = {"eager fwd": lambda: loss(*args), "jitgraph fwd": lambda: forward(*args),
                                           "hand eager": lambda: hand(*args)}
    if hand_compiles:
        hand_compiled = jitgraph.compile(hand)
        calls["hand jitgraph"] = lambda: hand_compiled(*args)
    calls["jitgraph"] = lambda: value_and_grad(*args)
    calls.update(peers(loss, args))
    for tool, call in calls.items():
        if "fwd" not in tool:
            check(reference, call(), f"{name}: {tool}")
    row: dict[str, Any] = {"workload": name, **alternating_medians(calls, rounds)}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--rounds", type=int, default=15, help="timed calls of each column")
    options = parser.parse_args()
    rows = [measure(*w, rounds=options.rounds) for w in workloads(options.quick)]

    print(f"{'workload (ms per call)':40s}" + "".join(f"{c:>14s}" for c in COLUMNS))
    for row in rows:
        cells = "".join(f"{row[c] * 1e3:14.3f}" if c in row else f"{'-':>14s}" for c in COLUMNS)
        print(f"{row['workload']:40s}{cells}")
    print("gradient cost (value_and_grad / forward):")
    for row in rows:
        ratios = [f"{row['jitgraph'] / row['jitgraph fwd']:.2f}x jitgraph's compiled forward",
                  f"{row['jitgraph'] / row['eager fwd']:.2f}x the eager forward",
                  f"{row['jitgraph'] / row['hand eager']:.2f}x the hand-written eager backward"]
        ratios += [f"{row[p] / row['jitgraph']:.2f}x jitgraph's time for {p}" for p in PEERS if p in row]
        print(f"  {row['workload']}: " + "; ".join(ratios))
    missing = [m for m in PEERS if optional(m) is None]
    print("gradients of every column agree with jitgraph's (rtol 1e-3)"
          + (f"; not installed, skipped: {', '.join(missing)}" if missing else ""))


if __name__ == "__main__":
    main()
