"""Example NumPy programs shared by the tracer tests (and reusable by other test suites).

Each is plain NumPy, written the way a user would write it; none knows about jitgraph.
"""

from __future__ import annotations

import numpy as np


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def softmax_rows(x):
    """Softmax through a helper function."""
    return softmax(x * 2.0)


def relu(x):
    return np.maximum(x, 0)


def mlp_train_step(params, x, y, lr):
    """2-layer MLP: forward, fancy-index cross-entropy, hand-written backward, in-place SGD on a params dict."""
    n = x.shape[0]
    h_pre = x @ params["W1"] + params["b1"]
    h = relu(h_pre)
    logits = h @ params["W2"] + params["b2"]
    p = softmax(logits)
    loss = -np.mean(np.log(p[np.arange(n), y] + 1e-9))
    dlogits = p.copy()
    dlogits[np.arange(n), y] -= 1
    dlogits /= n
    grads = {
        "W2": h.T @ dlogits,
        "b2": dlogits.sum(axis=0),
    }
    dh = dlogits @ params["W2"].T
    return _finish(params, grads, x, dh * (h_pre > 0), lr, loss)


def _finish(params, grads, x, dh, lr, loss):
    grads["W1"] = x.T @ dh
    grads["b1"] = dh.sum(axis=0)
    for k in params:
        params[k] -= lr * grads[k]
    return loss


def init_mlp(rng, n_in=8, n_hidden=16, n_out=4, dtype=np.float32):
    return {
        "W1": (rng.standard_normal((n_in, n_hidden)) * 0.1).astype(dtype),
        "b1": np.zeros(n_hidden, dtype),
        "W2": (rng.standard_normal((n_hidden, n_out)) * 0.1).astype(dtype),
        "b2": np.zeros(n_out, dtype),
    }


def adam_update(p, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    """Adam: mutates p, m and v in place."""
    m *= b1
    m += (1 - b1) * g
    v[...] = b2 * v + (1 - b2) * g * g
    mhat = m / (1 - b1 ** t)
    vhat = v / (1 - b2 ** t)
    p -= lr * mhat / (np.sqrt(vhat) + eps)


def layernorm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


class Linear:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, x):
        return x @ self.W + self.b


class Model:
    def __init__(self, rng, n_in=8, n_hidden=16, n_out=4):
        self.l1 = Linear((rng.standard_normal((n_in, n_hidden)) * 0.1).astype(np.float32),
                         np.zeros(n_hidden, np.float32))
        self.l2 = Linear((rng.standard_normal((n_hidden, n_out)) * 0.1).astype(np.float32),
                         np.zeros(n_out, np.float32))

    def forward(self, x):
        return softmax(np.tanh(self.l1(x)) @ np.eye(self.l2.W.shape[0], dtype=np.float32) @ self.l2.W + self.l2.b)


def model_forward(model, x):
    return model.forward(x)


def sgd_dict_comprehension(params, grads, lr):
    return {k: params[k] - lr * grads[k] for k in params}


def tanh_loop(x, W):
    for _ in range(3):
        x = np.tanh(x @ W)
    return x
