"""Train a two-layer NumPy MLP on a synthetic dataset, eagerly and with @jitgraph.compile, and check they agree.

The training step is ordinary NumPy: forward pass, softmax cross-entropy with fancy indexing, a hand-written
backward pass and in-place SGD updates of a dict of parameters. jitgraph captures all of it as one graph.
"""

from __future__ import annotations

import time

import numpy as np
from _harness import FirstCall, agreed, assert_same, median_time, parse_args, print_table

import jitgraph


def make_dataset(n: int, dim: int, classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian blobs, one per class, in ``dim`` dimensions."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 3, size=(classes, dim)).astype(np.float32)
    y = rng.integers(0, classes, size=n)
    x = centers[y] + rng.normal(0, 1, size=(n, dim)).astype(np.float32)
    return x.astype(np.float32), y.astype(np.int64)


def init_params(dim: int, hidden: int, classes: int, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "W1": (rng.normal(0, 1, (dim, hidden)) / np.sqrt(dim)).astype(np.float32),
        "b1": np.zeros(hidden, np.float32),
        "W2": (rng.normal(0, 1, (hidden, classes)) / np.sqrt(hidden)).astype(np.float32),
        "b2": np.zeros(classes, np.float32),
    }


def train_step(params, x, y, lr):
    n = x.shape[0]
    h = np.maximum(x @ params["W1"] + params["b1"], 0)
    logits = h @ params["W2"] + params["b2"]
    logits = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    p = e / e.sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(n), y] + 1e-9).mean()
    dlogits = p.copy()
    dlogits[np.arange(n), y] -= 1
    dlogits /= n
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = dlogits @ params["W2"].T
    dh[h <= 0] = 0
    dW1 = x.T @ dh
    db1 = dh.sum(axis=0)
    params["W1"] -= lr * dW1
    params["b1"] -= lr * db1
    params["W2"] -= lr * dW2
    params["b2"] -= lr * db2
    return loss


def train(step, params, x, y, epochs: int, batch: int, lr: float) -> list[float]:
    losses = []
    for _ in range(epochs):
        total = 0.0
        for start in range(0, len(x) - batch + 1, batch):
            total += float(step(params, x[start:start + batch], y[start:start + batch], lr))
        losses.append(total / (len(x) // batch))
    return losses


def example_train_step() -> tuple:
    """Arguments for ``python -m jitgraph explain examples/mlp_training.py:train_step``."""
    x, y = make_dataset(64, 32, 10)
    return init_params(32, 64, 10), x, y, 0.1


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    n, dim, hidden, classes, batch, epochs = (512, 32, 64, 10, 64, 3) if args.small else (8192, 784, 512, 10, 256, 3)
    x, y = make_dataset(n, dim, classes)
    compiled_step = jitgraph.compile(train_step, backend=args.backend)
    first = FirstCall(compiled_step)

    eager_params, compiled_params = init_params(dim, hidden, classes), init_params(dim, hidden, classes)
    start = time.perf_counter()
    eager_losses = train(train_step, eager_params, x, y, epochs, batch, 0.1)
    eager_total = time.perf_counter() - start
    start = time.perf_counter()
    compiled_losses = train(first, compiled_params, x, y, epochs, batch, 0.1)
    compiled_total = time.perf_counter() - start

    print("epoch  eager loss   compiled loss")
    for epoch, (e, c) in enumerate(zip(eager_losses, compiled_losses)):
        print(f"{epoch:5d}  {e:10.6f}   {c:10.6f}")
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-3)
    assert_same(eager_params, compiled_params, rtol=1e-3, atol=1e-4, what="params after training")
    agreed(f"loss per epoch and parameters after {epochs} epochs")
    print(f"whole training: eager {eager_total:.2f} s, compiled {compiled_total:.2f} s (compile included)")

    xb, yb = x[:batch], y[:batch]
    pe, pc = init_params(dim, hidden, classes), init_params(dim, hidden, classes)
    rows = [{"name": f"MLP step {dim}->{hidden}->{classes}, batch {batch}",
             "eager": median_time(lambda: train_step(pe, xb, yb, 0.0)),
             "compiled": median_time(lambda: compiled_step(pc, xb, yb, 0.0)), "compile": first.seconds}]
    print_table("mlp_training", rows, compiled_step, first)


if __name__ == "__main__":
    main()
