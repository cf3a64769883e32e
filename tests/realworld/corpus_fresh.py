"""A third corpus, written for issue 21's eager mode after that change was built and before it was timed on these:
from-scratch ML and statistics in the style of public tutorials and course solutions, at a small size (the 2-10 us
calls where the call's own costs decide) and a medium one. Nothing here was tuned for; the README reports what it
measured, worst cases included."""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    from .corpus import Case, arr
except ImportError:  # run as a script's sibling module (benchmarks/realworld.py puts this folder on sys.path)
    from corpus import Case, arr  # type: ignore[no-redef]


def logistic_regression_step(w, b, X, y, lr=0.1):
    z = X @ w + b
    p = 1.0 / (1.0 + np.exp(-z))
    dw = X.T @ (p - y) / X.shape[0]
    db = np.mean(p - y)
    return w - lr * dw, b - lr * db


def zscore(X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


def minmax_scale(X):
    lo, hi = X.min(axis=0), X.max(axis=0)
    return (X - lo) / (hi - lo)


def cosine_similarity(A, B):
    an = A / np.linalg.norm(A, axis=1, keepdims=True)
    bn = B / np.linalg.norm(B, axis=1, keepdims=True)
    return an @ bn.T


def gaussian_nb_log_likelihood(X, means, variances, log_priors):
    ll = -0.5 * np.sum(np.log(2 * np.pi * variances)[None, :, :]
                       + (X[:, None, :] - means[None, :, :]) ** 2 / variances[None, :, :], axis=2)
    return ll + log_priors


def manhattan_distances(A, B):
    return np.abs(A[:, None, :] - B[None, :, :]).sum(axis=2)


def kmeans_assign(X, C):
    d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    return np.argmin(d, axis=1)


def conv1d_valid(x, w):
    k = w.shape[0]
    out = np.empty(x.shape[0] - k + 1)
    for i in range(out.shape[0]):
        out[i] = np.dot(x[i:i + k], w)
    return out


def maxpool1d(x, size=2):
    n = x.shape[0] // size
    return x[:n * size].reshape(n, size).max(axis=1)


def ema_rows(X, alpha=0.9):
    out = np.empty_like(X)
    acc = X[0].copy()
    for t in range(X.shape[0]):
        acc = alpha * acc + (1 - alpha) * X[t]
        out[t] = acc
    return out


def huber_grad(r, delta=1.0):
    return np.where(np.abs(r) <= delta, r, delta * np.sign(r))


def linreg_gd(X, y, lr=0.01, n_iter=20):
    w = np.zeros(X.shape[1])
    for _ in range(n_iter):
        grad = X.T @ (X @ w - y) / X.shape[0]
        w = w - lr * grad
    return w


def rnn_step_backward(dnext_h, x, prev_h, Wx, Wh, next_h):
    dtanh = dnext_h * (1 - next_h ** 2)
    dx = dtanh @ Wx.T
    dprev_h = dtanh @ Wh.T
    dWx = x.T @ dtanh
    dWh = prev_h.T @ dtanh
    db = dtanh.sum(axis=0)
    return dx, dprev_h, dWx, dWh, db


def layernorm_backward(dout, x, gamma, eps=1e-5):
    mu = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    xhat = (x - mu) / np.sqrt(var + eps)
    dxhat = dout * gamma
    n = x.shape[1]
    dx = (1.0 / n) / np.sqrt(var + eps) * (n * dxhat - dxhat.sum(axis=1, keepdims=True)
                                            - xhat * (dxhat * xhat).sum(axis=1, keepdims=True))
    return dx, (dout * xhat).sum(axis=0), dout.sum(axis=0)


class AdaDelta:
    def __init__(self, rho: float = 0.95, eps: float = 1e-6) -> None:
        self.rho, self.eps = rho, eps
        self.Eg: Any = None
        self.Edx: Any = None

    def update(self, w, g):
        if self.Eg is None:
            self.Eg = np.zeros_like(w)
            self.Edx = np.zeros_like(w)
        self.Eg = self.rho * self.Eg + (1 - self.rho) * g ** 2
        dx = -np.sqrt(self.Edx + self.eps) / np.sqrt(self.Eg + self.eps) * g
        self.Edx = self.rho * self.Edx + (1 - self.rho) * dx ** 2
        return w + dx


class NesterovDict:
    def __init__(self, lr: float = 0.01, mu: float = 0.9) -> None:
        self.lr, self.mu = lr, mu
        self.v: dict[str, np.ndarray] = {}

    def step(self, params, grads):
        for k in params:
            v_prev = self.v.get(k, np.zeros_like(params[k]))
            self.v[k] = self.mu * v_prev - self.lr * grads[k]
            params[k] += -self.mu * v_prev + (1 + self.mu) * self.v[k]


def perceptron_epoch(w, X, y):
    for i in range(X.shape[0]):
        if y[i] * (X[i] @ w) <= 0:
            w = w + y[i] * X[i]
    return w


def smooth_l1_loss(pred, target):
    d = np.abs(pred - target)
    return np.mean(np.where(d < 1.0, 0.5 * d ** 2, d - 0.5))


def softmax_cross_entropy_grad(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(logits.shape[0]), labels]).mean()
    p[np.arange(logits.shape[0]), labels] -= 1
    return loss, p / logits.shape[0]


def _labels(n: int, k: int) -> np.ndarray:
    return np.arange(n) % k


def _pm1(n: int) -> np.ndarray:
    return np.where(np.arange(n) % 2 == 0, 1.0, -1.0)


def _nb(n: int, d: int, k: int) -> tuple:
    return arr(n, d), arr(k, d, seed=1), np.abs(arr(k, d, seed=2)) + 0.5, np.log(np.full(k, 1.0 / k))


def _sizes(name: str, fn: Any, small: Any, medium: Any, kinds: tuple[str, str] = ("graph", "graph")) -> list[Case]:
    return [Case(f"{name}[small]", fn, small, kinds[0]), Case(f"{name}[medium]", fn, medium, kinds[1])]


CASES = [
    *_sizes("logistic_regression_step", logistic_regression_step,
            lambda: (arr(4), 0.0, arr(8, 4, seed=1), (_labels(8, 2)).astype(float)),
            lambda: (arr(64), 0.0, arr(2000, 64, seed=1), (_labels(2000, 2)).astype(float))),
    *_sizes("zscore", zscore, lambda: (arr(8, 4),), lambda: (arr(2000, 64),)),
    *_sizes("minmax_scale", minmax_scale, lambda: (arr(8, 4),), lambda: (arr(2000, 64),)),
    *_sizes("cosine_similarity", cosine_similarity, lambda: (arr(6, 4), arr(5, 4, seed=1)),
            lambda: (arr(300, 64), arr(200, 64, seed=1))),
    *_sizes("gaussian_nb_log_likelihood", gaussian_nb_log_likelihood, lambda: _nb(8, 4, 3), lambda: _nb(500, 32, 10)),
    *_sizes("manhattan_distances", manhattan_distances, lambda: (arr(6, 3), arr(5, 3, seed=1)),
            lambda: (arr(200, 16), arr(150, 16, seed=1))),
    *_sizes("kmeans_assign", kmeans_assign, lambda: (arr(10, 2), arr(3, 2, seed=1)),
            lambda: (arr(5000, 8), arr(16, 8, seed=1))),
    # A short loop is unrolled (one graph); a long one is a loop region, where np.dot of a data slice and an
    # array that is not one breaks: eager.
    *_sizes("conv1d_valid", conv1d_valid, lambda: (arr(16), arr(3, seed=1)), lambda: (arr(2000), arr(9, seed=1)),
            ("graph", "eager")),
    *_sizes("maxpool1d", maxpool1d, lambda: (arr(16),), lambda: (arr(100_000),)),
    *_sizes("ema_rows", ema_rows, lambda: (arr(6, 3),), lambda: (arr(500, 256),)),
    *_sizes("huber_grad", huber_grad, lambda: (arr(10),), lambda: (arr(200_000),)),
    *_sizes("linreg_gd", linreg_gd, lambda: (arr(10, 3), arr(10, seed=1)), lambda: (arr(1000, 32), arr(1000, seed=1))),
    *_sizes("rnn_step_backward", rnn_step_backward,
            lambda: (arr(4, 5), arr(4, 3, seed=1), arr(4, 5, seed=2), arr(3, 5, seed=3), arr(5, 5, seed=4),
                     np.tanh(arr(4, 5, seed=5))),
            lambda: (arr(64, 128), arr(64, 96, seed=1), arr(64, 128, seed=2), arr(96, 128, seed=3),
                     arr(128, 128, seed=4), np.tanh(arr(64, 128, seed=5)))),
    *_sizes("layernorm_backward", layernorm_backward,
            lambda: (arr(4, 6), arr(4, 6, seed=1), arr(6, seed=2)),
            lambda: (arr(256, 512), arr(256, 512, seed=1), arr(512, seed=2))),
    *_sizes("AdaDelta.update", AdaDelta.update, lambda: (AdaDelta(), arr(5, 3), arr(5, 3, seed=1)),
            lambda: (AdaDelta(), arr(256, 256), arr(256, 256, seed=1))),
    *_sizes("NesterovDict.step", NesterovDict.step,
            lambda: (NesterovDict(), {"W": arr(4, 3), "b": arr(3)}, {"W": arr(4, 3, seed=1), "b": arr(3, seed=1)}),
            lambda: (NesterovDict(), {"W": arr(256, 256), "b": arr(256)},
                     {"W": arr(256, 256, seed=1), "b": arr(256, seed=1)})),
    # A data-dependent `if` rebinding w to a new array: no cond (the result would alias differently): eager.
    *_sizes("perceptron_epoch", perceptron_epoch, lambda: (np.zeros(3), arr(10, 3), _pm1(10)),
            lambda: (np.zeros(16), arr(400, 16), _pm1(400)), ("eager", "eager")),
    *_sizes("smooth_l1_loss", smooth_l1_loss, lambda: (arr(10), arr(10, seed=1)),
            lambda: (arr(200_000), arr(200_000, seed=1))),
    *_sizes("softmax_cross_entropy_grad", softmax_cross_entropy_grad,
            lambda: (arr(6, 4), _labels(6, 4)), lambda: (arr(512, 100), _labels(512, 100))),
]
