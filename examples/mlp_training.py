"""Train a NumPy MLP (linear, layer norm, GELU, linear, softmax cross-entropy, Adam) eagerly and with
@jitgraph.compile; check they agree; show where the time goes.

The training step is ordinary NumPy: the forward pass, a hand-written backward pass and in-place Adam updates of a
dict of parameters. jitgraph captures all of it as one graph: the matrix products go to BLAS, everything between
them (layer norm forward and backward, GELU and its derivative, the softmax, the bias gradients, six Adam updates)
runs as a few fused kernels instead of ~90 NumPy temporaries. The whole run, compile included, is timed for both.

The first half of the file is the smaller two-layer ReLU MLP with SGD (``train_step``) that ``mlp_autodiff.py``, the
tests and ``python -m jitgraph explain examples/mlp_training.py:train_step`` use.
"""

from __future__ import annotations

import time

import numpy as np
from _harness import FirstCall, agreed, assert_same, median_time, parse_args, print_table

import jitgraph

B1, B2, EPS = 0.9, 0.999, 1e-8


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


def probabilities(params, x, np=np):
    """The forward pass up to the softmax: hidden activations and class probabilities. ``np`` is the array module
    (benchmarks/autodiff.py passes ``autograd.numpy`` and ``jax.numpy`` to differentiate the same code)."""
    h = np.maximum(x @ params["W1"] + params["b1"], 0)
    logits = h @ params["W2"] + params["b2"]
    logits = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    return h, e / e.sum(axis=1, keepdims=True)


def loss(params, x, y, eps=1e-9, np=np):
    """The cross-entropy loss alone, what ``mlp_autodiff.py`` differentiates with ``jitgraph.value_and_grad``."""
    n = x.shape[0]
    _, p = probabilities(params, x, np)
    return -np.log(p[np.arange(n), y] + eps).mean()


def loss_and_gradients(params, x, y, n_total):
    """Loss and hand-written gradients of the rows ``x, y``, divided by ``n_total``: the batch's size, or on a
    Dask worker the *global* batch's, so that the shards' losses and gradients add up to the whole batch's."""
    n = x.shape[0]
    h, p = probabilities(params, x)
    loss = -np.log(p[np.arange(n), y] + 1e-9).sum() / n_total
    dlogits = p.copy()
    dlogits[np.arange(n), y] -= 1
    dlogits /= n_total
    dh = dlogits @ params["W2"].T
    dh[h <= 0] = 0
    return loss, {"W1": x.T @ dh, "b1": dh.sum(axis=0), "W2": h.T @ dlogits, "b2": dlogits.sum(axis=0)}


def train_step(params, x, y, lr):
    """One SGD step on one batch (updates ``params`` in place)."""
    loss, grads = loss_and_gradients(params, x, y, x.shape[0])
    for name, grad in grads.items():
        params[name] -= lr * grad
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


# ---- the main example's model: layer norm, GELU, softmax cross-entropy, Adam ----------------------------------


def make_blobs(n: int, dim: int, classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian blobs, one per class, in ``dim`` dimensions; labels one-hot."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 0.1, size=(classes, dim)).astype(np.float32)  # overlapping: the loss stays away from 0
    labels = rng.integers(0, classes, size=n)
    x = centers[labels] + rng.normal(0, 1, size=(n, dim)).astype(np.float32)
    return x.astype(np.float32), np.eye(classes, dtype=np.float32)[labels]


def init_model(dim: int, hidden: int, classes: int, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    params = {
        "W1": (rng.normal(0, 1, (dim, hidden)) / np.sqrt(dim)).astype(np.float32),
        "b1": np.zeros(hidden, np.float32),
        "g": np.ones(hidden, np.float32),
        "beta": np.zeros(hidden, np.float32),
        "W2": (rng.normal(0, 1, (hidden, classes)) / np.sqrt(hidden)).astype(np.float32),
        "b2": np.zeros(classes, np.float32),
    }
    for name in list(params):  # Adam's moments
        params["m_" + name] = np.zeros_like(params[name])
        params["v_" + name] = np.zeros_like(params[name])
    return params


def adam(params, name, grad, step):
    m, v = params["m_" + name], params["v_" + name]
    m *= B1
    m += (1 - B1) * grad
    v *= B2
    v += (1 - B2) * grad * grad
    params[name] -= step * m / (np.sqrt(v) + EPS)


def model_step(params, x, y, step):
    """One Adam step of the main example's model; ``step`` is the bias-corrected learning rate (a 0-d array: it changes every step)."""
    n = x.shape[0]
    # forward: linear -> layer norm -> GELU -> linear -> softmax cross-entropy
    z = x @ params["W1"] + params["b1"]
    mu = z.mean(axis=1, keepdims=True)
    zc = z - mu
    inv = 1.0 / np.sqrt((zc * zc).mean(axis=1, keepdims=True) + 1e-5)
    zh = zc * inv
    a = zh * params["g"] + params["beta"]
    t = np.tanh(0.7978845608 * (a + 0.044715 * a ** 3))
    h = 0.5 * a * (1 + t)
    logits = h @ params["W2"] + params["b2"]
    s = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(s)
    se = e.sum(axis=1, keepdims=True)
    loss = -(y * (s - np.log(se))).sum() / n
    # backward
    dlogits = (e / se - y) / n
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = dlogits @ params["W2"].T
    da = dh * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * a * a))
    dg = (da * zh).sum(axis=0)
    dbeta = da.sum(axis=0)
    dzh = da * params["g"]
    hidden = z.shape[1]
    dz = inv / hidden * (hidden * dzh - dzh.sum(axis=1, keepdims=True) - zh * (dzh * zh).sum(axis=1, keepdims=True))
    dW1 = x.T @ dz
    db1 = dz.sum(axis=0)
    for name, grad in (("W1", dW1), ("b1", db1), ("g", dg), ("beta", dbeta), ("W2", dW2), ("b2", db2)):
        adam(params, name, grad, step)
    return loss


def products(params, x, y, step):
    """The step's BLAS work alone (same shapes): what no compiler removes."""
    n = x.shape[0]
    z = x @ params["W1"]
    logits = z @ params["W2"]
    dh = logits @ params["W2"].T
    return z.T @ logits, x.T @ dh, n


def best_time(fn, calls: int = 15) -> float:
    fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def train_model(step_fn, params, x, y, epochs: int, batch: int, lr: float) -> list[float]:
    losses = []
    k = 0
    for _ in range(epochs):
        total = 0.0
        for start in range(0, len(x) - batch + 1, batch):
            k += 1
            step = np.asarray(lr * np.sqrt(1 - B2 ** k) / (1 - B1 ** k), np.float32)
            total += float(step_fn(params, x[start:start + batch], y[start:start + batch], step))
        losses.append(total / (len(x) // batch))
    return losses


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    n, dim, hidden, classes, batch, epochs = (512, 32, 64, 10, 64, 2) if args.small else \
        (49152, 256, 512, 10, 128, 5)
    x, y = make_blobs(n, dim, classes)
    compiled_step = jitgraph.compile(model_step, backend=args.backend)
    first = FirstCall(compiled_step)

    eager_params, compiled_params = init_model(dim, hidden, classes), init_model(dim, hidden, classes)
    start = time.perf_counter()
    eager_losses = train_model(model_step, eager_params, x, y, epochs, batch, 1e-3)
    eager_total = time.perf_counter() - start
    start = time.perf_counter()
    compiled_losses = train_model(first, compiled_params, x, y, epochs, batch, 1e-3)
    compiled_total = time.perf_counter() - start

    print("epoch  eager loss   compiled loss")
    for epoch, (e, c) in enumerate(zip(eager_losses, compiled_losses)):
        print(f"{epoch:5d}  {e:10.6f}   {c:10.6f}")
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-3)
    assert_same({k: v for k, v in eager_params.items() if not k.startswith(("m_", "v_"))},
                {k: v for k, v in compiled_params.items() if not k.startswith(("m_", "v_"))},
                rtol=1e-3, atol=1e-4, what="params after training")
    agreed(f"loss per epoch and parameters after {epochs} epochs")
    steps = epochs * (n // batch)
    print(f"whole training, {steps} steps: eager {eager_total:.2f} s, compiled {compiled_total:.2f} s "
          f"(compile included: {first.seconds:.2f} s of it) -> {eager_total / compiled_total:.2f}x")

    xb, yb = x[:batch], y[:batch]
    pe, pc = init_model(dim, hidden, classes), init_model(dim, hidden, classes)
    step = np.asarray(0.0, np.float32)
    eager_step = median_time(lambda: model_step(pe, xb, yb, step))
    comp_step = median_time(lambda: compiled_step(pc, xb, yb, step))
    # The breakdown uses best-of times: on a shared machine one descheduled BLAS thread inflates a median.
    eager_best, comp_best, blas = (best_time(lambda f=f, p=params: f(p, xb, yb, step)) for f, params in
                                   ((model_step, pe), (compiled_step, pc), (products, pe)))
    print(f"where a step's time goes (best of 15): BLAS, the step's products alone, {blas * 1e3:.2f} ms; the rest: "
          f"eager {max(eager_best - blas, 0) * 1e3:.2f} ms of NumPy calls, compiled "
          f"{max(comp_best - blas, 0) * 1e3:.2f} ms of fused kernels and driver; compile {first.seconds:.2f} s once "
          f"(the time {max(eager_best - comp_best, 1e-9) * 1e3:.2f} ms/step saves in "
          f"{first.seconds / max(eager_best - comp_best, 1e-9):.0f} steps)")
    rows = [{"name": f"MLP step {dim}->{hidden}(LN, GELU)->{classes}, Adam, batch {batch}",
             "eager": eager_step, "compiled": comp_step, "compile": first.seconds}]
    print_table("mlp_training", rows, compiled_step, first)


if __name__ == "__main__":
    main()
