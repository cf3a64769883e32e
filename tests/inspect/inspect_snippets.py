"""Functions the inspection tests explain. Kept in their own file so the snapshots' line numbers stay put."""

import numpy as np


def scale(v):
    return v * 2.0


def breaks(x, w):
    h = np.tanh(x @ w)
    print("sum of h:", h.sum(), file=None)  # a graph break
    return h + 1.0


def step(x, w, lr):
    h = np.tanh(x @ w)
    s = h.sum(axis=1)
    return scale(s) * lr + 1.0


def example_step():
    return np.ones((4, 3), np.float32), np.full((3, 5), 0.5, np.float32), 0.1


def example_breaks():
    return (np.ones((2, 2)), np.eye(2)), {}


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def example_softmax():
    return (np.random.default_rng(0).normal(size=(4096, 1024)),), {}


def trisolve(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def example_trisolve():
    rng = np.random.default_rng(0)
    L = np.tril(rng.normal(size=(64, 64))) + 64.0 * np.eye(64)
    return (L, rng.normal(size=64)), {}


# as examples/adam.py
def adam_update(p, g, m, v, lr, t, b1=0.9, b2=0.999, eps=1e-8):
    m *= b1
    m += (1 - b1) * g
    v *= b2
    v += (1 - b2) * (g * g)
    mhat = m / (1 - b1 ** t)
    vhat = v / (1 - b2 ** t)
    p -= lr * mhat / (np.sqrt(vhat) + eps)


def example_adam_update():
    rng = np.random.default_rng(0)
    p, g = rng.normal(size=1024).astype(np.float32), rng.normal(size=1024).astype(np.float32)
    return (p, g, np.zeros(1024, np.float32), np.zeros(1024, np.float32), 1e-3, 1.0), {}
