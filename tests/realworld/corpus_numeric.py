"""Issue 19's corpus extension: from-scratch ML and scientific NumPy in the style of public repositories (written
for this project, before any tuning of the tracer): im2col convolutions with ``np.pad``, pooling, masked losses,
norm-clipped optimisers, dynamic-programming tables, k-means and k-NN with ``argsort``, sparse products, histograms,
linear solves and decompositions, stencils and small recurrent cells.

Each :class:`~corpus.Case` makes fresh arguments; ``kind`` is what the compiler is expected to do with it, as in
``corpus.py`` (``"graph"``: one compiled graph per call; ``"split"``: a data-dependent branch that changes a dict or
aliases an argument, not a cond, run split; ``"eager"``: the whole function eagerly, with the reason -- here the
CSR idiom, slices whose bounds are array data). The cases are run by ``tests/realworld/test_corpus_numeric.py`` and ``benchmarks/realworld.py``.
"""

from __future__ import annotations

import math

import numpy as np

try:
    from .corpus import Case, arr, rng
except ImportError:  # imported as a top-level module by benchmarks/realworld.py
    from corpus import Case, arr, rng  # type: ignore[no-redef]


# ---- convolution, im2col style ----------------------------------------------------------------------------------
def im2col(input_data, filter_h, filter_w, stride=1, pad=0):
    N, C, H, W = input_data.shape
    out_h = (H + 2 * pad - filter_h) // stride + 1
    out_w = (W + 2 * pad - filter_w) // stride + 1
    img = np.pad(input_data, [(0, 0), (0, 0), (pad, pad), (pad, pad)], "constant")
    col = np.zeros((N, C, filter_h, filter_w, out_h, out_w))
    for y in range(filter_h):
        y_max = y + stride * out_h
        for x in range(filter_w):
            x_max = x + stride * out_w
            col[:, :, y, x, :, :] = img[:, :, y:y_max:stride, x:x_max:stride]
    col = col.transpose(0, 4, 5, 1, 2, 3).reshape(N * out_h * out_w, -1)
    return col


def col2im(col, input_shape, filter_h, filter_w, stride=1, pad=0):
    N, C, H, W = input_shape
    out_h = (H + 2 * pad - filter_h) // stride + 1
    out_w = (W + 2 * pad - filter_w) // stride + 1
    col = col.reshape(N, out_h, out_w, C, filter_h, filter_w).transpose(0, 3, 4, 5, 1, 2)
    img = np.zeros((N, C, H + 2 * pad + stride - 1, W + 2 * pad + stride - 1))
    for y in range(filter_h):
        y_max = y + stride * out_h
        for x in range(filter_w):
            x_max = x + stride * out_w
            img[:, :, y:y_max:stride, x:x_max:stride] += col[:, :, y, x, :, :]
    return img[:, :, pad:H + pad, pad:W + pad]


class Convolution:
    def __init__(self, W, b, stride=1, pad=1):
        self.W, self.b = W, b
        self.stride, self.pad = stride, pad

    def forward(self, x):
        FN, _, FH, FW = self.W.shape
        N, _, H, W = x.shape
        out_h = 1 + int((H + 2 * self.pad - FH) / self.stride)
        out_w = 1 + int((W + 2 * self.pad - FW) / self.stride)
        col = im2col(x, FH, FW, self.stride, self.pad)
        col_W = self.W.reshape(FN, -1).T
        out = np.dot(col, col_W) + self.b
        out = out.reshape(N, out_h, out_w, -1).transpose(0, 3, 1, 2)
        self.x, self.col, self.col_W = x, col, col_W
        return out

    def backward(self, dout):
        FN, C, FH, FW = self.W.shape
        dout = dout.transpose(0, 2, 3, 1).reshape(-1, FN)
        self.db = np.sum(dout, axis=0)
        self.dW = np.dot(self.col.T, dout).transpose(1, 0).reshape(FN, C, FH, FW)
        dcol = np.dot(dout, self.col_W.T)
        return col2im(dcol, self.x.shape, FH, FW, self.stride, self.pad)


class Pooling:
    def __init__(self, pool_h=2, pool_w=2, stride=2, pad=0):
        self.pool_h, self.pool_w, self.stride, self.pad = pool_h, pool_w, stride, pad

    def forward(self, x):
        N, C, H, W = x.shape
        out_h = int(1 + (H - self.pool_h) / self.stride)
        out_w = int(1 + (W - self.pool_w) / self.stride)
        col = im2col(x, self.pool_h, self.pool_w, self.stride, self.pad)
        col = col.reshape(-1, self.pool_h * self.pool_w)
        self.arg_max = np.argmax(col, axis=1)
        out = np.max(col, axis=1)
        return out.reshape(N, out_h, out_w, C).transpose(0, 3, 1, 2)


def conv2d_direct(x, w):
    """A direct 2-D convolution, one output pixel at a time (the style that timed out compiling in the issue)."""
    n, _, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, f, h, wd))
    for i in range(h):
        for j in range(wd):
            patch = xp[:, :, i:i + kh, j:j + kw]
            out[:, :, i, j] = (patch[:, None] * w[None]).sum(axis=(2, 3, 4))
    return out


def box_blur_reflect(img):
    p = np.pad(img, 1, mode="reflect")
    out = np.zeros_like(img)
    for dy in range(3):
        for dx in range(3):
            out += p[dy:dy + img.shape[0], dx:dx + img.shape[1]]
    return out / 9.0


def sobel_edges(img):
    p = np.pad(img, 1, mode="edge")
    gx = (p[1:-1, 2:] - p[1:-1, :-2]) * 2 + (p[:-2, 2:] - p[:-2, :-2]) + (p[2:, 2:] - p[2:, :-2])
    gy = (p[2:, 1:-1] - p[:-2, 1:-1]) * 2 + (p[2:, :-2] - p[:-2, :-2]) + (p[2:, 2:] - p[:-2, 2:])
    return np.hypot(gx, gy)


def periodic_laplacian(u):
    p = np.pad(u, 1, mode="wrap")
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u


def flip_augment(batch):
    flipped = np.flip(batch, axis=-1)
    return np.concatenate([batch, flipped], axis=0)


def avg_pool_reshape(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).mean(axis=(3, 5))


# ---- losses ----------------------------------------------------------------------------------------------------
def masked_mse(pred, target, mask):
    diff = (pred - target) * mask
    return (diff ** 2).sum() / max(mask.sum(), 1.0)


def masked_cross_entropy(logits, labels, mask):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    nll = -log_probs[range(logits.shape[0]), labels]
    return (nll * mask).sum() / mask.sum()


def softmax_loss_vectorized(W, X, y, reg):
    num_train = X.shape[0]
    scores = X.dot(W)
    scores -= np.max(scores, axis=1, keepdims=True)
    probs = np.exp(scores) / np.sum(np.exp(scores), axis=1, keepdims=True)
    loss = -np.sum(np.log(probs[range(num_train), y])) / num_train + reg * np.sum(W * W)
    dscores = probs.copy()
    dscores[range(num_train), y] -= 1
    dW = X.T.dot(dscores) / num_train + 2 * reg * W
    return loss, dW


def svm_loss_vectorized(W, X, y, reg):
    num_train = X.shape[0]
    scores = X.dot(W)
    correct = scores[np.arange(num_train), y]
    margins = np.maximum(0, scores - correct[:, np.newaxis] + 1)
    margins[np.arange(num_train), y] = 0
    loss = np.sum(margins) / num_train + reg * np.sum(W * W)
    binary = margins.copy()
    binary[margins > 0] = 1
    row_sum = np.sum(binary, axis=1)
    binary[np.arange(num_train), y] = -row_sum
    dW = X.T.dot(binary) / num_train + 2 * reg * W
    return loss, dW


def huber_loss(pred, target, delta=1.0):
    err = pred - target
    small = np.abs(err) <= delta
    loss = np.where(small, 0.5 * err ** 2, delta * (np.abs(err) - 0.5 * delta))
    grad = np.where(small, err, delta * np.sign(err))
    return loss.mean(), grad / err.size


def bce_ignore_index(p, y):
    """Binary cross-entropy where label -1 means "ignore": those entries are zeroed by a mask store."""
    p = np.clip(p, 1e-7, 1 - 1e-7)
    loss = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    loss[y < 0] = 0.0
    return loss.sum() / max(1, int((y >= 0).sum()))


# ---- optimisers with clipping ----------------------------------------------------------------------------------
class ClippedAdam:
    def __init__(self, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8):
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.m = None
        self.v = None
        self.t = 0

    def update(self, w, g):
        norm = np.sqrt((g * g).sum())
        g = g * min(1.0, 1.0 / (norm + 1e-6))
        if self.m is None:
            self.m, self.v = np.zeros_like(w), np.zeros_like(w)
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * g
        self.v = self.beta2 * self.v + (1 - self.beta2) * g * g
        mhat = self.m / (1 - self.beta1 ** self.t)
        vhat = self.v / (1 - self.beta2 ** self.t)
        return w - self.lr * mhat / (np.sqrt(vhat) + self.eps)


def clip_grad_norm(grads, max_norm):
    total = math.sqrt(sum(float(np.sum(g ** 2)) for g in grads.values()))
    scale = max_norm / (total + 1e-6)
    if scale < 1:
        for k in grads:
            grads[k] = grads[k] * scale
    return total


def sgd_clip_value(params, grads, lr=0.1, clip=0.5, wd=1e-4):
    for k in params:
        g = np.clip(grads[k], -clip, clip) + wd * params[k]
        params[k] -= lr * g
    return params


def rmsprop_norm_clip(w, g, cache, lr=0.01, decay=0.9, max_norm=1.0):
    n = np.linalg.norm(g)
    if n > max_norm:
        g = g * (max_norm / n)
    cache = decay * cache + (1 - decay) * g ** 2
    w = w - lr * g / (np.sqrt(cache) + 1e-8)
    return w, cache


def adamw_step(w, g, m, v, t, lr=1e-3, wd=1e-2):
    b1, b2 = 0.9, 0.999
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    w = w - lr_t * m / (np.sqrt(v) + 1e-8) - lr * wd * w
    return w, m, v


# ---- dynamic programming ---------------------------------------------------------------------------------------
def edit_distance(a, b):
    n, m = len(a), len(b)
    D = np.zeros((n + 1, m + 1), dtype=np.int64)
    D[:, 0] = np.arange(n + 1)
    D[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            c = 0 if a[i - 1] == b[j - 1] else 1
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1, D[i - 1, j - 1] + c)
    return D[n, m]


def lcs_length(a, b):
    n, m = len(a), len(b)
    L = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                L[i, j] = L[i - 1, j - 1] + 1
            else:
                L[i, j] = max(L[i - 1, j], L[i, j - 1])
    return L[n, m]


def knapsack(values, weights, capacity):
    dp = np.zeros(capacity + 1)
    for v, w in zip(values, weights):
        dp[w:] = np.maximum(dp[w:], dp[:-w] + v)
    return dp[capacity]


def viterbi(log_A, log_B, log_pi, obs):
    T, S = obs.shape[0], log_A.shape[0]
    delta = log_pi + log_B[:, obs[0]]
    psi = np.zeros((T, S), dtype=np.int64)
    for t in range(1, T):
        scores = delta[:, None] + log_A
        psi[t] = np.argmax(scores, axis=0)
        delta = np.max(scores, axis=0) + log_B[:, obs[t]]
    path = np.zeros(T, dtype=np.int64)
    path[-1] = np.argmax(delta)
    for t in range(T - 2, -1, -1):
        path[t] = psi[t + 1, path[t + 1]]
    return path, delta.max()


def dtw_distance(s, t):
    n, m = s.shape[0], t.shape[0]
    D = np.full((n + 1, m + 1), np.inf)
    D[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = abs(s[i - 1] - t[j - 1])
            D[i, j] = cost + min(D[i - 1, j], D[i, j - 1], D[i - 1, j - 1])
    return D[n, m]


# ---- clustering and neighbours ----------------------------------------------------------------------------------
def kmeans_step(X, centroids):
    d = np.sum((X[:, None, :] - centroids[None, :, :]) ** 2, axis=2)
    labels = np.argmin(d, axis=1)
    onehot = (labels[:, None] == np.arange(centroids.shape[0])[None, :]).astype(X.dtype)
    counts = onehot.sum(axis=0)
    new = onehot.T @ X / np.maximum(counts, 1)[:, None]
    return new, labels, d.min(axis=1).sum()


def knn_predict(X_train, y_train, X_test, k=3, n_classes=3):
    dists = np.sqrt(np.sum(X_test ** 2, axis=1)[:, None] + np.sum(X_train ** 2, axis=1) - 2 * X_test @ X_train.T)
    nearest = np.argsort(dists, axis=1)[:, :k]
    votes = y_train[nearest]
    counts = np.zeros((X_test.shape[0], n_classes))
    for c in range(n_classes):
        counts[:, c] = (votes == c).sum(axis=1)
    return np.argmax(counts, axis=1)


def kmeans_sorted_init(X, k):
    """Farthest-from-mean seeding: sort points by their distance to the mean, take evenly spaced ones."""
    d = np.linalg.norm(X - X.mean(axis=0), axis=1)
    order = np.argsort(d)
    idx = order[np.linspace(0, X.shape[0] - 1, k).astype(int)]
    return X[idx]


def pairwise_sq_dists(X):
    sq = (X ** 2).sum(axis=1)
    return np.add.outer(sq, sq) - 2 * X @ X.T


def gmm_e_step(X, means, covs, weights):
    n, k = X.shape[0], means.shape[0]
    log_r = np.zeros((n, k))
    for j in range(k):
        diff = X - means[j]
        inv = np.linalg.inv(covs[j])
        maha = np.sum(diff @ inv * diff, axis=1)
        log_r[:, j] = np.log(weights[j]) - 0.5 * (maha + np.log(np.linalg.det(covs[j])) + X.shape[1] *
                                                  np.log(2 * np.pi))
    m = log_r.max(axis=1, keepdims=True)
    log_norm = m + np.log(np.exp(log_r - m).sum(axis=1, keepdims=True))
    return np.exp(log_r - log_norm), log_norm.sum()


# ---- sparse and scatter ----------------------------------------------------------------------------------------
def csr_spmv(data, indices, indptr, x):
    n = indptr.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        start, end = indptr[i], indptr[i + 1]
        y[i] = np.dot(data[start:end], x[indices[start:end]])
    return y


def coo_spmv(rows, cols, vals, x, n):
    y = np.zeros(n)
    np.add.at(y, rows, vals * x[cols])
    return y


def embedding_backward(ids, dout, vocab):
    dW = np.zeros((vocab, dout.shape[1]))
    np.add.at(dW, ids, dout)
    return dW


def one_hot(y, k):
    out = np.zeros((y.shape[0], k))
    out[np.arange(y.shape[0]), y] = 1
    return out


# ---- histograms ------------------------------------------------------------------------------------------------
def histogram_equalize(img, nbins=16):
    hist, _ = np.histogram(img.ravel(), bins=nbins, range=(0.0, 1.0))
    cdf = hist.cumsum().astype(np.float64)
    cdf = cdf / cdf[-1]
    idx = np.clip((img * nbins).astype(np.int64), 0, nbins - 1)
    return cdf[idx]


def histogram_entropy(x, bins=10):
    hist, _ = np.histogram(x, bins=bins)
    p = hist / hist.sum()
    return -np.sum(p * np.log(p + 1e-12))


def density_histogram(x):
    h, edges = np.histogram(x, bins=8, range=(-3, 3), density=True)
    centres = 0.5 * (edges[1:] + edges[:-1])
    return h, centres


# ---- linear solves and decompositions --------------------------------------------------------------------------
def ridge_closed_form(X, y, alpha=1.0):
    A = X.T @ X + alpha * np.eye(X.shape[1])
    return np.linalg.solve(A, X.T @ y)


def normal_equation_inv(X, y):
    Xb = np.c_[np.ones((X.shape[0], 1)), X]
    theta = np.linalg.inv(Xb.T.dot(Xb)).dot(Xb.T).dot(y)
    return theta


def gp_predict(X, y, Xs, noise=1e-2, ls=1.0):
    def rbf(a, b):
        d = np.sum(a ** 2, 1).reshape(-1, 1) + np.sum(b ** 2, 1) - 2 * a @ b.T
        return np.exp(-0.5 * d / ls ** 2)

    K = rbf(X, X) + noise * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    Ks = rbf(X, Xs)
    mu = Ks.T @ alpha
    v = np.linalg.solve(L, Ks)
    var = np.diag(rbf(Xs, Xs)) - np.sum(v ** 2, axis=0)
    return mu, var


def newton_logreg_step(w, X, y, lam=1e-2):
    p = 1 / (1 + np.exp(-X @ w))
    grad = X.T @ (p - y) + lam * w
    H = X.T @ (X * (p * (1 - p))[:, None]) + lam * np.eye(X.shape[1])
    return w - np.linalg.solve(H, grad)


def mahalanobis(X, mu, cov):
    inv = np.linalg.inv(cov)
    d = X - mu
    return np.sqrt(np.einsum("ij,jk,ik->i", d, inv, d))


def pca_eigh(X, k=2):
    Xc = X - X.mean(axis=0)
    cov = np.cov(Xc, rowvar=False)
    vals, vecs = np.linalg.eigh(cov)
    idx = np.argsort(vals)[::-1]
    vecs = vecs[:, idx[:k]]
    return Xc @ vecs, vals[idx[:k]]


def gaussian_logpdf(X, mu, cov):
    d = X.shape[1]
    diff = X - mu
    sol = np.linalg.solve(cov, diff.T).T
    return -0.5 * (np.sum(diff * sol, axis=1) + d * np.log(2 * np.pi) + np.log(np.linalg.det(cov)))


def kalman_update(x, P, z, H, R):
    S = H @ P @ H.T + R
    K = P @ H.T @ np.linalg.inv(S)
    x = x + K @ (z - H @ x)
    P = (np.eye(P.shape[0]) - K @ H) @ P
    return x, P


def correlation_matrix(X):
    C = np.cov(X, rowvar=False)
    s = np.sqrt(np.diag(C))
    return C / np.outer(s, s)


def spectral_embedding(W, k=2):
    deg = W.sum(axis=1)
    L = np.diag(deg) - W
    _, vecs = np.linalg.eigh(L)
    return vecs[:, 1:k + 1]


def whitening_cholesky(X):
    C = np.cov(X, rowvar=False) + 1e-6 * np.eye(X.shape[1])
    L = np.linalg.cholesky(C)
    return np.linalg.solve(L, (X - X.mean(axis=0)).T).T


# ---- grids, stencils, recurrences ------------------------------------------------------------------------------
def rbf_on_grid(centres, gamma=2.0):
    gx, gy = np.mgrid[-1:1:5j, -1:1:5j]
    pts = np.stack([gx.ravel(), gy.ravel()], axis=1)
    d = ((pts[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * d).sum(axis=1).reshape(5, 5)


def scale_rows_prealloc(x, w):
    out = np.ndarray(x.shape)
    for i in range(x.shape[0]):
        out[i] = x[i] * w[i]
    return out


def heat_1d(u, alpha=0.1, steps=10):
    u = u.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def jacobi_solve(A, b, iters=20):
    D = np.diag(A)
    R = A - np.diag(D)
    x = np.zeros_like(b)
    for _ in range(iters):
        x = (b - R @ x) / D
    return x


def power_iteration(A, iters=15):
    v = np.ones(A.shape[0]) / math.sqrt(A.shape[0])
    for _ in range(iters):
        w = A @ v
        v = w / np.linalg.norm(w)
    return v @ A @ v, v


def rnn_forward(x, h0, Wx, Wh, b):
    N, T, _ = x.shape
    h = np.zeros((N, T, h0.shape[1]))
    prev = h0
    for t in range(T):
        prev = np.tanh(x[:, t, :] @ Wx + prev @ Wh + b)
        h[:, t, :] = prev
    return h


def lstm_step(x, h, c, Wx, Wh, b):
    a = x @ Wx + h @ Wh + b
    i, f, o, g = np.split(a, 4, axis=1)
    i, f, o = 1 / (1 + np.exp(-i)), 1 / (1 + np.exp(-f)), 1 / (1 + np.exp(-o))
    c_next = f * c + i * np.tanh(g)
    h_next = o * np.tanh(c_next)
    return h_next, c_next


def moving_average(x, w=3):
    c = np.cumsum(x)
    c[w:] = c[w:] - c[:-w]
    return c[w - 1:] / w


def mandelbrot_escape(cr, ci, maxit):
    out = np.zeros(cr.shape[0], np.int64)
    for k in range(cr.shape[0]):
        zr = zi = 0.0
        it = 0
        while zr * zr + zi * zi < 4.0 and it < maxit:
            zr, zi = zr * zr - zi * zi + cr[k], 2.0 * zr * zi + ci[k]
            it += 1
        out[k] = it
    return out


def batchnorm_backward(dout, x, gamma, eps=1e-5):
    N = x.shape[0]
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    xhat = (x - mu) / np.sqrt(var + eps)
    dgamma = np.sum(dout * xhat, axis=0)
    dbeta = np.sum(dout, axis=0)
    dxhat = dout * gamma
    dx = (1.0 / N) / np.sqrt(var + eps) * (N * dxhat - dxhat.sum(axis=0) - xhat * (dxhat * xhat).sum(axis=0))
    return dx, dgamma, dbeta


# ---- the cases -------------------------------------------------------------------------------------------------
def _img(n=2, c=2, h=5, w=5, seed=0):
    return arr(n, c, h, w, seed=seed)


def _conv_primed():
    conv = Convolution(arr(3, 2, 3, 3, seed=1) * 0.1, np.zeros(3))
    conv.forward(_img())
    return conv


def _spd(d=4, seed=0):
    a = arr(d, d, seed=seed)
    return a @ a.T + d * np.eye(d)


def _csr():
    dense = np.where(rng(4).random((6, 6)) < 0.4, arr(6, 6, seed=5), 0.0)
    data, indices, indptr = [], [], [0]
    for row in dense:
        nz = np.nonzero(row)[0]
        data.extend(row[nz])
        indices.extend(nz)
        indptr.append(len(data))
    return np.array(data), np.array(indices, dtype=np.int64), np.array(indptr, dtype=np.int64), arr(6, seed=6)


def _gmm():
    X = arr(10, 2, seed=2)
    return X, arr(2, 2, seed=3), np.stack([_spd(2, 4), _spd(2, 5)]), np.array([0.4, 0.6])


def _hmm():
    g = rng(7)
    A = g.random((3, 3))
    B = g.random((3, 4))
    return (np.log(A / A.sum(1, keepdims=True)), np.log(B / B.sum(1, keepdims=True)), np.log(np.full(3, 1 / 3)),
            g.integers(0, 4, 6))


CASES = [
    Case("im2col", im2col, lambda: (_img(), 3, 3, 1, 1)),
    Case("Convolution.forward", Convolution.forward,
         lambda: (Convolution(arr(3, 2, 3, 3, seed=1) * 0.1, np.zeros(3)), _img())),
    Case("Convolution.backward", Convolution.backward, lambda: (_conv_primed(), arr(2, 3, 5, 5, seed=2))),
    Case("Pooling.forward", Pooling.forward, lambda: (Pooling(), arr(2, 2, 4, 4))),
    Case("conv2d_direct", conv2d_direct, lambda: (arr(1, 2, 4, 4), arr(2, 2, 3, 3, seed=1))),
    Case("box_blur_reflect", box_blur_reflect, lambda: (arr(6, 7),)),
    Case("sobel_edges", sobel_edges, lambda: (arr(6, 6),)),
    Case("periodic_laplacian", periodic_laplacian, lambda: (arr(5, 6),)),
    Case("flip_augment", flip_augment, lambda: (arr(2, 3, 4),)),
    Case("avg_pool_reshape", avg_pool_reshape, lambda: (arr(2, 3, 4, 4),)),
    Case("masked_mse", masked_mse, lambda: (arr(6, 3), arr(6, 3, seed=1), (rng(2).random((6, 3)) > 0.3) * 1.0)),
    Case("masked_cross_entropy", masked_cross_entropy,
         lambda: (arr(6, 4), np.array([0, 3, 1, 2, 2, 0]), np.array([1.0, 1, 0, 1, 0, 1]))),
    Case("softmax_loss_vectorized", softmax_loss_vectorized,
         lambda: (arr(5, 3, seed=1) * 0.01, arr(6, 5), np.array([0, 2, 1, 1, 0, 2]), 0.1)),
    Case("svm_loss_vectorized", svm_loss_vectorized,
         lambda: (arr(5, 3, seed=1) * 0.01, arr(6, 5), np.array([0, 2, 1, 1, 0, 2]), 0.1)),
    Case("huber_loss", huber_loss, lambda: (arr(8), arr(8, seed=1) * 2)),
    Case("bce_ignore_index", bce_ignore_index,
         lambda: (rng(3).random(8), np.array([1.0, 0, -1, 1, 0, -1, 1, 1]))),
    Case("ClippedAdam.update", ClippedAdam.update, lambda: (ClippedAdam(), arr(5), arr(5, seed=1) * 3)),
    Case("clip_grad_norm", clip_grad_norm, lambda: ({"W": arr(4, 3), "b": arr(3, seed=1)}, 1.0)),
    Case("sgd_clip_value", sgd_clip_value, lambda: ({"W": arr(4, 3), "b": arr(3, seed=1)},
                                                    {"W": arr(4, 3, seed=2), "b": arr(3, seed=3)})),
    Case("rmsprop_norm_clip", rmsprop_norm_clip, lambda: (arr(5), arr(5, seed=1) * 3, np.zeros(5))),
    Case("adamw_step", adamw_step, lambda: (arr(5), arr(5, seed=1), np.zeros(5), np.zeros(5), 3)),
    Case("edit_distance", edit_distance, lambda: (np.array([1, 2, 3, 4, 2]), np.array([1, 3, 3, 2, 2, 4]))),
    Case("lcs_length", lcs_length, lambda: (np.array([1, 2, 3, 4, 2]), np.array([1, 3, 3, 2, 2, 4]))),
    Case("knapsack", knapsack, lambda: ([3.0, 4.0, 5.0, 6.0], [2, 3, 4, 5], 8)),
    Case("viterbi", viterbi, _hmm),
    Case("dtw_distance", dtw_distance, lambda: (arr(5), arr(6, seed=1))),
    Case("kmeans_step", kmeans_step, lambda: (arr(12, 2), arr(3, 2, seed=1))),
    Case("knn_predict", knn_predict, lambda: (arr(10, 3), np.arange(10) % 3, arr(4, 3, seed=1))),
    Case("kmeans_sorted_init", kmeans_sorted_init, lambda: (arr(9, 2), 3)),
    Case("pairwise_sq_dists", pairwise_sq_dists, lambda: (arr(5, 3),)),
    Case("gmm_e_step", gmm_e_step, _gmm),
    Case("csr_spmv", csr_spmv, _csr),
    Case("coo_spmv", coo_spmv, lambda: (np.array([0, 1, 1, 3, 4]), np.array([1, 0, 2, 3, 0]), arr(5), arr(5, seed=1),
                                        5)),
    Case("embedding_backward", embedding_backward, lambda: (np.array([1, 3, 1, 0]), arr(4, 3), 5)),
    Case("one_hot", one_hot, lambda: (np.array([0, 2, 1, 2]), 3)),
    Case("histogram_equalize", histogram_equalize, lambda: (rng(1).random((6, 6)),)),
    Case("histogram_entropy", histogram_entropy, lambda: (arr(40),)),
    Case("density_histogram", density_histogram, lambda: (arr(50),)),
    Case("ridge_closed_form", ridge_closed_form, lambda: (arr(8, 3), arr(8, seed=1))),
    Case("normal_equation_inv", normal_equation_inv, lambda: (arr(8, 2), arr(8, seed=1))),
    Case("gp_predict", gp_predict, lambda: (arr(6, 2), arr(6, seed=1), arr(3, 2, seed=2))),
    Case("newton_logreg_step", newton_logreg_step,
         lambda: (np.zeros(3), arr(10, 3), (arr(10, seed=1) > 0).astype(np.float64))),
    Case("mahalanobis", mahalanobis, lambda: (arr(6, 3), arr(3, seed=1), _spd(3))),
    Case("pca_eigh", pca_eigh, lambda: (arr(10, 4),)),
    Case("gaussian_logpdf", gaussian_logpdf, lambda: (arr(6, 3), arr(3, seed=1), _spd(3))),
    Case("kalman_update", kalman_update,
         lambda: (arr(4), _spd(4), arr(2, seed=1), arr(2, 4, seed=2), np.eye(2) * 0.5)),
    Case("correlation_matrix", correlation_matrix, lambda: (arr(10, 3),)),
    Case("spectral_embedding", spectral_embedding, lambda: (np.abs(_spd(5)) - np.diag(np.diag(np.abs(_spd(5)))),)),
    Case("whitening_cholesky", whitening_cholesky, lambda: (arr(10, 3),)),
    Case("rbf_on_grid", rbf_on_grid, lambda: (arr(3, 2),)),
    Case("scale_rows_prealloc", scale_rows_prealloc, lambda: (arr(4, 3), arr(4, seed=1))),
    Case("heat_1d", heat_1d, lambda: (arr(10),)),
    Case("jacobi_solve", jacobi_solve, lambda: (_spd(4), arr(4, seed=1))),
    Case("power_iteration", power_iteration, lambda: (_spd(4),)),
    Case("rnn_forward", rnn_forward,
         lambda: (arr(2, 4, 3), np.zeros((2, 5)), arr(3, 5, seed=1) * 0.3, arr(5, 5, seed=2) * 0.3, np.zeros(5))),
    Case("lstm_step", lstm_step, lambda: (arr(2, 3), arr(2, 4, seed=1), arr(2, 4, seed=2), arr(3, 16, seed=3) * 0.3,
                                          arr(4, 16, seed=4) * 0.3, np.zeros(16))),
    Case("moving_average", moving_average, lambda: (arr(10),)),
    Case("mandelbrot_escape", mandelbrot_escape, lambda: (np.linspace(-2, 0.5, 6), np.linspace(-1, 1, 6), 30)),
    Case("batchnorm_backward", batchnorm_backward, lambda: (arr(6, 3), arr(6, 3, seed=1), np.ones(3))),
]
