"""The floor: is a compiled function ever slower than the eager NumPy it replaces? (issue 21)

    python benchmarks/floor.py            # every function, float32 and float64
    python benchmarks/floor.py --quick    # shorter timing budget per row (a smoke run, ~noisier)
    python benchmarks/floor.py -k norm    # only functions whose name contains "norm"

About seventy small and medium functions written the way real code is written -- normalisation layers forward and
backward over both axes, optimisers, losses and their gradients with small matrix-vector products, statistics,
distance matrices, products with transposed operands, loops with array bodies -- each run eagerly and through
``jitgraph.compile``, in float32 and float64. They were written before any tuning, as a new user would write them.

Each row checks compiled == eager (within the dtype's tolerance), then times the two in alternating blocks
(``timing.paired_timings``) and reports the medians and their ratio (eager / compiled: above 1 is faster). A row is
"graph" when every call ran one compiled graph, otherwise the reason it fell back. The noise floor is the ratio of
eager against itself, timed the same way, over a sample of rows: a graph row below 0.95x that is inside the noise
is not a finding. The summary counts the one-graph rows below 0.95x and the geomean of the one-graph rows.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jitgraph
from benchmarks.timing import geomean, paired_timings

try:  # measured tier-down: a new entry's first calls alternate graph and eager runs (jit/tiering.py)
    from jitgraph.jit.tiering import PROBE_CALLS
except ImportError:  # a tree without it
    PROBE_CALLS = 0

# ----------------------------------------------------------------------------- normalisation layers


def batchnorm_fwd(x, g, b):
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def batchnorm_bwd(dy, x, g):
    n = x.shape[0]
    mu = x.mean(axis=0)
    xc = x - mu
    var = (xc * xc).mean(axis=0)
    inv = 1.0 / np.sqrt(var + 1e-5)
    xhat = xc * inv
    dg = (dy * xhat).sum(axis=0)
    db = dy.sum(axis=0)
    dxhat = dy * g
    dx = inv / n * (n * dxhat - dxhat.sum(axis=0) - xhat * (dxhat * xhat).sum(axis=0))
    return dx, dg, db


def layernorm_fwd(x, w, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * w + b


def layernorm_bwd(dy, x, w):
    d = x.shape[1]
    mu = x.mean(axis=1, keepdims=True)
    xc = x - mu
    inv = 1.0 / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + 1e-5)
    xhat = xc * inv
    dxhat = dy * w
    dx = inv / d * (d * dxhat - dxhat.sum(axis=1, keepdims=True) - xhat * (dxhat * xhat).sum(axis=1, keepdims=True))
    dw = (dy * xhat).sum(axis=0)
    db = dy.sum(axis=0)
    return dx, dw, db


def rmsnorm(x, w):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * w


def standardize_cols(x):
    return (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-8)


def l2_normalize_rows(x):
    return x / np.sqrt((x * x).sum(axis=1, keepdims=True) + 1e-12)


def l2_normalize_cols(x):
    return x / np.sqrt((x * x).sum(axis=0, keepdims=True) + 1e-12)


def minmax_cols(x):
    lo = x.min(axis=0)
    hi = x.max(axis=0)
    return (x - lo) / (hi - lo + 1e-12)


def group_norm(x):
    g = x.reshape(x.shape[0], 8, -1)
    mu = g.mean(axis=-1, keepdims=True)
    var = g.var(axis=-1, keepdims=True)
    return ((g - mu) / np.sqrt(var + 1e-5)).reshape(x.shape)


# ----------------------------------------------------------------------------- optimisers


def sgd_momentum(w, g, v):
    v *= 0.9
    v += g
    w -= 0.01 * v
    return w


def adam(w, g, m, v):
    m *= 0.9
    m += 0.1 * g
    v *= 0.999
    v += 0.001 * g * g
    w -= 1e-3 * (m / 0.1) / (np.sqrt(v / 0.001) + 1e-8)
    return w


def rmsprop(w, g, s):
    s[...] = 0.9 * s + 0.1 * g * g
    w -= 0.01 * g / (np.sqrt(s) + 1e-8)
    return w


def adagrad(w, g, s):
    s += g * g
    w -= 0.01 * g / (np.sqrt(s) + 1e-10)
    return w


def nesterov(w, g, v):
    v_prev = v.copy()
    v[...] = 0.9 * v - 0.01 * g
    w += -0.9 * v_prev + 1.9 * v
    return w


def clip_by_norm(g):
    norm = np.sqrt((g * g).sum())
    return g * np.minimum(1.0, 1.0 / (norm + 1e-6))


def adamw_fresh(w, g, m, v):
    m2 = 0.9 * m + 0.1 * g
    v2 = 0.999 * v + 0.001 * g * g
    w2 = w - 1e-3 * (m2 / (np.sqrt(v2) + 1e-8) + 0.01 * w)
    return w2, m2, v2


# ----------------------------------------------------------------------------- losses and gradients


def mse_loss(pred, y):
    return ((pred - y) ** 2).mean()


def mse_grad(pred, y):
    return 2.0 * (pred - y) / pred.size


def softmax_xent(logits, y):
    z = logits - logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -(y * (z - lse)).sum() / logits.shape[0]


def softmax_xent_grad(logits, y):
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=1, keepdims=True) - y) / logits.shape[0]


def logistic_grad(X, y, w):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return X.T @ (p - y) / X.shape[0]


def logreg_step(X, y, w):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    g = X.T @ (p - y) / X.shape[0] + 1e-4 * w
    return w - 0.1 * g


def linreg_grad(X, y, w):
    return X.T @ (X @ w - y) / X.shape[0]


def nll_grad(X, y, w):
    """Poisson regression: negative log-likelihood gradient."""
    eta = X @ w
    return X.T @ (np.exp(eta) - y) / X.shape[0]


def huber_loss(pred, y):
    r = np.abs(pred - y)
    return np.where(r < 1.0, 0.5 * r * r, r - 0.5).mean()


def hinge_grad(X, y, w):
    margin = y * (X @ w)
    active = (margin < 1.0).astype(X.dtype)
    return -(X.T @ (y * active)) / X.shape[0] + 1e-3 * w


def bce_loss(p, y):
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean()


def kl_div(p, q):
    return (p * np.log(p / q)).sum(axis=1)


def focal_loss(p, y):
    pt = np.where(y > 0.5, p, 1 - p)
    return (-(1 - pt) ** 2 * np.log(pt + 1e-8)).mean()


# ----------------------------------------------------------------------------- statistics


def col_mean_var(x):
    return x.mean(axis=0), x.var(axis=0)


def zscore_rows(x):
    return (x - x.mean(axis=1, keepdims=True)) / (x.std(axis=1, keepdims=True) + 1e-8)


def covariance(x):
    xc = x - x.mean(axis=0)
    return xc.T @ xc / (x.shape[0] - 1)


def correlation(x):
    xc = x - x.mean(axis=0)
    xs = xc / np.sqrt((xc * xc).sum(axis=0))
    return xs.T @ xs


def weighted_mean(x, w):
    return (w[:, None] * x).sum(axis=0) / w.sum()


def moments(v):
    mu = v.mean()
    d = v - mu
    m2 = (d * d).mean()
    return (d ** 3).mean() / m2 ** 1.5, (d ** 4).mean() / (m2 * m2) - 3.0


def logsumexp_rows(x):
    m = x.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]


def logsumexp_cols(x):
    m = x.max(axis=0)
    return m + np.log(np.exp(x - m).sum(axis=0))


def softmax_rows(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_cols(x):
    e = np.exp(x - x.max(axis=0))
    return e / e.sum(axis=0)


def gauss_logpdf(x, mu, sigma):
    z = (x - mu) / sigma
    return -0.5 * (z * z).sum(axis=1) - np.log(sigma).sum() - 0.5 * x.shape[1] * np.log(2 * np.pi)


def col_sum_sq(x):
    return (x * x).sum(axis=0)


def row_max_abs(x):
    return np.abs(x).max(axis=1)


# ----------------------------------------------------------------------------- distance matrices


def sqdist(x, y):
    return (x * x).sum(axis=1)[:, None] + (y * y).sum(axis=1)[None, :] - 2.0 * (x @ y.T)


def rbf_kernel(x, y):
    d = (x * x).sum(axis=1)[:, None] + (y * y).sum(axis=1)[None, :] - 2.0 * (x @ y.T)
    return np.exp(-0.5 * d)


def cosine_sim(x, y):
    xn = x / np.sqrt((x * x).sum(axis=1, keepdims=True))
    yn = y / np.sqrt((y * y).sum(axis=1, keepdims=True))
    return xn @ yn.T


def l1_dist(x, y):
    return np.abs(x[:, None, :] - y[None, :, :]).sum(axis=-1)


def kmeans_assign(x, c):
    d = (x * x).sum(axis=1)[:, None] + (c * c).sum(axis=1)[None, :] - 2.0 * (x @ c.T)
    return d.argmin(axis=1)


# ----------------------------------------------------------------------------- matrix-vector and products


def matvec(A, v):
    return A @ v


def matvec_t(A, v):
    return A.T @ v


def vecmat(v, A):
    return v @ A


def dot_bias(A, v, b):
    return np.dot(A, v) + b


def outer_update(A, u, v):
    return A + 0.5 * np.outer(u, v)


def gemver(A, u1, v1, u2, v2, y, z):
    B = A + np.outer(u1, v1) + np.outer(u2, v2)
    x = 0.5 * (B.T @ y) + z
    return B, 1.5 * (B @ x)


def gesummv(A, B, x):
    return 1.5 * (A @ x) + 1.2 * (B @ x)


def mvt(A, x1, x2, y1, y2):
    return x1 + A @ y1, x2 + A.T @ y2


def atax(A, x):
    return A.T @ (A @ x)


def bicg(A, p, r):
    return A @ p, A.T @ r


def gemm_tn(A, B):
    return A.T @ B


def gemm_nt(A, B):
    return A @ B.T


def linear_gelu(x, W, b):
    h = x @ W + b
    return 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))


def attention(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


def mixed_matvec(p, v):
    """float64 matrix times a float32 vector (issue 20): NumPy promotes."""
    return p @ v.astype(np.float32)


# ----------------------------------------------------------------------------- elementwise


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1 + np.exp(-x))


def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def horner(x):
    return ((((0.1 * x + 0.2) * x - 0.3) * x + 0.4) * x - 0.5) * x + 1.0


def leaky_relu_bwd(dy, x):
    return np.where(x > 0, dy, 0.01 * dy)


def axpy(a, x, y):
    return a * x + y


def relu(x):
    return np.maximum(x, 0)


# ----------------------------------------------------------------------------- loops with array bodies


def power_iteration(A, v):
    for _ in range(20):
        w = A @ v
        v = w / np.sqrt((w * w).sum())
    return v


def ema(x):
    s = x[0]
    for t in range(1, x.shape[0]):
        s = 0.9 * s + 0.1 * x[t]
    return s


def rnn_forward(xs, Wx, Wh):
    h = np.zeros(Wh.shape[0], dtype=xs.dtype)
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh)
    return h


def gd_loop(X, y, w):
    for _ in range(20):
        w = w - 0.01 * (X.T @ (X @ w - y)) / X.shape[0]
    return w


def heat_1d(u):
    for _ in range(50):
        u[1:-1] = u[1:-1] + 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def jacobi_solve(R, d, b, x):
    for _ in range(20):
        x = (b - R @ x) / d
    return x


def newton_while(a):
    x = 0.5 * (a + 1.0)
    err = np.max(np.abs(x * x - a))
    while err > 1e-4:
        x = 0.5 * (x + a / x)
        err = np.max(np.abs(x * x - a))
    return x


def diag_tanh_trace(a):
    t = 0.0
    for i in range(a.shape[0]):
        t += np.tanh(a[i, i])
    return a + t


# ----------------------------------------------------------------------------- the table

Maker = Callable[[np.random.Generator, Any], tuple[Any, ...]]


def _m(*shapes: tuple[int, ...], pos: bool = False) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        out = []
        for s in shapes:
            a = rng.standard_normal(s).astype(dt)
            out.append(np.abs(a) + 0.1 if pos else a)
        return tuple(out)
    return make


def _probs(n: int, k: int) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        p = rng.random((n, k)).astype(dt) + dt(0.05)
        q = rng.random((n, k)).astype(dt) + dt(0.05)
        return p / p.sum(axis=1, keepdims=True), q / q.sum(axis=1, keepdims=True)
    return make


def _classify(n: int, d: int, labels: str) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        X = rng.standard_normal((n, d)).astype(dt)
        y = rng.integers(0, 2, n).astype(dt)
        if labels == "pm":
            y = 2 * y - 1
        elif labels == "count":
            y = rng.poisson(1.0, n).astype(dt)
        w = (0.1 * rng.standard_normal(d)).astype(dt)
        return X, y, w
    return make


def _onehot(n: int, k: int) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        logits = rng.standard_normal((n, k)).astype(dt)
        y = np.eye(k, dtype=dt)[rng.integers(0, k, n)]
        return logits, y
    return make


def _opt(n: int, state: int) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        w = rng.standard_normal(n).astype(dt)
        g = (0.01 * rng.standard_normal(n)).astype(dt)
        rest = [np.abs(0.01 * rng.standard_normal(n)).astype(dt) for _ in range(state)]
        return (w, g, *rest)
    return make


def _spd(n: int) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        a = rng.standard_normal((n, n))
        A = (a @ a.T / n + np.eye(n)).astype(dt)
        return A, np.ones(n, dt)
    return make


def _jacobi(n: int) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        R = (0.1 * rng.standard_normal((n, n)) / np.sqrt(n)).astype(dt)
        np.fill_diagonal(R, 0)
        return R, np.full(n, 2.0, dt), rng.standard_normal(n).astype(dt), np.zeros(n, dt)
    return make


def _scalar_first(shape: tuple[int, ...]) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        return (dt(1.5), rng.standard_normal(shape).astype(dt), rng.standard_normal(shape).astype(dt))
    return make


def _weighted(n: int, d: int) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        return rng.standard_normal((n, d)).astype(dt), rng.random(n).astype(dt)
    return make


def _gauss(n: int, d: int) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        return (rng.standard_normal((n, d)).astype(dt), rng.standard_normal(d).astype(dt),
                (rng.random(d) + 0.5).astype(dt))
    return make


def _mixed(n: int) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        return rng.standard_normal((n, n)), rng.standard_normal(n).astype(dt)
    return make


def _pos_probs(n: int) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        return rng.random(n).astype(dt) * dt(0.98) + dt(0.01), rng.integers(0, 2, n).astype(dt)
    return make


def _rnn(t: int, d: int, h: int) -> Maker:
    def make(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
        return (rng.standard_normal((t, d)).astype(dt), (rng.standard_normal((d, h)) / np.sqrt(d)).astype(dt),
                (rng.standard_normal((h, h)) / np.sqrt(h)).astype(dt))
    return make


M, N = 256, 512  # the medium matrix of the normalisation rows (the shapes of issue 21's table)
FUNCTIONS: list[tuple[Callable[..., Any], Maker]] = [
    (batchnorm_fwd, _m((M, N), (N,), (N,))),
    (batchnorm_bwd, _m((M, N), (M, N), (N,))),
    (layernorm_fwd, _m((M, N), (N,), (N,))),
    (layernorm_bwd, _m((M, N), (M, N), (N,))),
    (rmsnorm, _m((M, N), (N,))),
    (standardize_cols, _m((M, N))),
    (l2_normalize_rows, _m((M, N))),
    (l2_normalize_cols, _m((M, N))),
    (minmax_cols, _m((M, N))),
    (group_norm, _m((64, 512))),
    (sgd_momentum, _opt(100_000, 1)),
    (adam, _opt(100_000, 2)),
    (rmsprop, _opt(100_000, 1)),
    (adagrad, _opt(100_000, 1)),
    (nesterov, _opt(100_000, 1)),
    (clip_by_norm, _m((100_000,))),
    (adamw_fresh, _opt(100_000, 2)),
    (mse_loss, _m((10_000,), (10_000,))),
    (mse_grad, _m((10_000,), (10_000,))),
    (softmax_xent, _onehot(256, 10)),
    (softmax_xent_grad, _onehot(256, 10)),
    (logistic_grad, _classify(500, 20, "01")),
    (logreg_step, _classify(500, 20, "01")),
    (linreg_grad, _classify(1000, 50, "01")),
    (nll_grad, _classify(500, 20, "count")),
    (huber_loss, _m((10_000,), (10_000,))),
    (hinge_grad, _classify(500, 20, "pm")),
    (bce_loss, _pos_probs(10_000)),
    (kl_div, _probs(256, 64)),
    (focal_loss, _pos_probs(10_000)),
    (col_mean_var, _m((M, N))),
    (zscore_rows, _m((M, N))),
    (covariance, _m((500, 64))),
    (correlation, _m((500, 64))),
    (weighted_mean, _weighted(1000, 64)),
    (moments, _m((100_000,))),
    (logsumexp_rows, _m((M, N))),
    (logsumexp_cols, _m((M, N))),
    (softmax_rows, _m((M, N))),
    (softmax_cols, _m((M, N))),
    (gauss_logpdf, _gauss(1000, 32)),
    (col_sum_sq, _m((1024, 256))),
    (row_max_abs, _m((1024, 256))),
    (sqdist, _m((256, 32), (128, 32))),
    (rbf_kernel, _m((256, 32), (128, 32))),
    (cosine_sim, _m((256, 32), (128, 32))),
    (l1_dist, _m((64, 16), (48, 16))),
    (kmeans_assign, _m((1000, 8), (16, 8))),
    (matvec, _m((500, 500), (500,))),
    (matvec_t, _m((500, 500), (500,))),
    (vecmat, _m((500,), (500, 500))),
    (dot_bias, _m((500, 500), (500,), (500,))),
    (outer_update, _m((300, 300), (300,), (300,))),
    (gemver, _m((200, 200), (200,), (200,), (200,), (200,), (200,), (200,))),
    (gesummv, _m((300, 300), (300, 300), (300,))),
    (mvt, _m((300, 300), (300,), (300,), (300,), (300,))),
    (atax, _m((400, 300), (300,))),
    (bicg, _m((400, 300), (300,), (400,))),
    (gemm_tn, _m((256, 128), (256, 64))),
    (gemm_nt, _m((128, 256), (64, 256))),
    (linear_gelu, _m((128, 256), (256, 256), (256,))),
    (attention, _m((64, 32), (64, 32), (64, 32))),
    (mixed_matvec, _mixed(300)),
    (gelu, _m((100_000,))),
    (silu, _m((100_000,))),
    (softplus, _m((100_000,))),
    (horner, _m((100_000,))),
    (leaky_relu_bwd, _m((100_000,), (100_000,))),
    (axpy, _scalar_first((100_000,))),
    (relu, _m((1000,))),
    (power_iteration, _spd(200)),
    (ema, _m((200, 64))),
    (rnn_forward, _rnn(50, 32, 64)),
    (gd_loop, _classify(500, 20, "01")),
    (heat_1d, _m((2000,))),
    (jacobi_solve, _jacobi(200)),
    (newton_while, _m((10_000,), pos=True)),
    (diag_tanh_trace, _m((100, 100))),
]


def _copy(args: tuple[Any, ...]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _close(a: Any, b: Any, dt: Any) -> bool:
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y, dt) for x, y in zip(a, b))
    tol = 2e-3 if dt == np.float32 else 1e-8
    return bool(np.allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=tol, atol=tol))


def run_row(fn: Callable[..., Any], make: Maker, dt: Any, budget: float, repeat: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    args = make(rng, dt)
    compiled = jitgraph.compile(fn)
    started = time.perf_counter()
    got = compiled(*_copy(args))
    first = time.perf_counter() - started
    want = fn(*_copy(args))
    info = compiled.cache_info()
    mode = "graph"
    if info.fallbacks:
        reasons = compiled.break_reasons()
        mode = "eager: " + (str(reasons[0])[:60] if reasons else "fallback")
    ok = _close(got, want, dt)
    eager_args, comp_args = _shared_or_own(fn, args)
    for _ in range(PROBE_CALLS):  # past the tier-down probe, as the first call is past the compile: steady state
        compiled(*comp_args)
    (e_med, _), (c_med, _) = paired_timings(lambda: fn(*eager_args), lambda: compiled(*comp_args), repeat,
                                            budget=budget)
    return {"name": fn.__name__, "dtype": np.dtype(dt).name, "eager": e_med, "compiled": c_med,
            "ratio": e_med / c_med, "mode": mode, "ok": ok, "first": first}


def _mutates(fn: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    """Whether a call of ``fn`` changes any of its array arguments."""
    mine = _copy(args)
    fn(*mine)
    return any(isinstance(a, np.ndarray) and not np.array_equal(a, b, equal_nan=True) for a, b in zip(args, mine))


def _shared_or_own(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[list[Any], list[Any]]:
    """The arguments of the eager and of the compiled side: one set of copies for both when ``fn`` leaves them as
    they were, else each side its own (optimisers update their arguments). Two copies of a 300x300 matrix sit at
    different addresses, and a BLAS matrix-vector product ran up to 20% faster on one than on the other, eager
    against eager: a ratio between two copies measured where the memory landed, not the code."""
    if _mutates(fn, args):
        return _copy(args), _copy(args)
    shared = _copy(args)
    return shared, shared


def noise_floor(rows: list[tuple[Callable[..., Any], Maker]], budget: float, repeat: int) -> list[float]:
    """Eager against itself, timed exactly as a row is: the spread of these ratios is what a ratio can mean."""
    ratios = []
    for fn, make in rows:
        args = make(np.random.default_rng(0), np.float32)
        a1, a2 = _shared_or_own(fn, args)
        (m1, _), (m2, _) = paired_timings(lambda f=fn, a=a1: f(*a), lambda f=fn, a=a2: f(*a), repeat, budget=budget)
        ratios.append(m1 / m2)
    return ratios


def _fmt(s: float) -> str:
    return f"{s * 1e6:9.1f}us" if s < 1e-3 else f"{s * 1e3:9.2f}ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a short timing budget per row")
    ap.add_argument("-k", default="", help="only functions whose name contains this")
    ap.add_argument("--dtype", choices=["float32", "float64", "both"], default="both")
    opts = ap.parse_args()
    budget, repeat = (0.3, 60) if opts.quick else (1.0, 200)
    chosen = [(f, m) for f, m in FUNCTIONS if opts.k in f.__name__]
    dtypes = [np.float32, np.float64] if opts.dtype == "both" else [getattr(np, opts.dtype)]
    print(f"{'function':<20}{'dtype':>8}{'eager':>12}{'compiled':>12}{'ratio':>8}  {'first call':>10}  mode")
    rows = []
    for fn, make in chosen:
        for dt in dtypes:
            try:
                r = run_row(fn, make, dt, budget, repeat)
            except Exception as e:  # noqa: BLE001 - a row that fails is reported, the table goes on
                print(f"{fn.__name__:<20}{np.dtype(dt).name:>8}  FAILED: {type(e).__name__}: {str(e)[:80]}")
                rows.append({"name": fn.__name__, "dtype": np.dtype(dt).name, "mode": "failed", "ok": False})
                continue
            rows.append(r)
            flag = "" if r["ok"] else "  MISMATCH"
            low = "  <0.95" if r["mode"] == "graph" and r["ratio"] < 0.95 else ""
            print(f"{r['name']:<20}{r['dtype']:>8}{_fmt(r['eager'])}{_fmt(r['compiled'])}{r['ratio']:7.2f}x "
                  f"{r['first']:10.2f}s  {r['mode']}{flag}{low}", flush=True)
    sample = chosen[:: max(1, len(chosen) // 10)]
    noise = noise_floor(sample, budget, repeat)
    graph = [r for r in rows if r["mode"] == "graph"]
    below = sorted((r for r in graph if r["ratio"] < 0.95), key=lambda r: r["ratio"])
    print()
    print(f"noise floor (eager vs itself, {len(noise)} rows): min {min(noise):.2f}x, max {max(noise):.2f}x, "
          f"median {float(np.median(noise)):.2f}x")
    if graph:
        geo = geomean([r["ratio"] for r in graph])
        print(f"one-graph rows: {len(graph)} of {len(rows)}; below 0.95x eager: {len(below)}; geomean {geo:.2f}x; "
              f"mismatches: {sum(not r['ok'] for r in rows)}")
    fell = [r for r in rows if r["mode"] != "graph"]
    if fell:
        print(f"not one graph ({len(fell)}): " + ", ".join(f"{r['name']}/{r['dtype']}" for r in fell))
    if below:
        print("below 0.95x: " + ", ".join(f"{r['name']}/{r['dtype']} {r['ratio']:.2f}x" for r in below))
    worst = sorted(graph, key=lambda r: r["ratio"])[:10]
    if worst:
        print("worst 10 one-graph rows: " + ", ".join(f"{r['name']}/{r['dtype']} {r['ratio']:.2f}x" for r in worst))


if __name__ == "__main__":
    main()
