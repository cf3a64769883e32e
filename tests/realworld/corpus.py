"""A corpus of stateful NumPy code in the style of public "from scratch" machine-learning repositories (written
for this project): layer classes whose forward/backward cache inputs on ``self``, optimizers with state in
attributes and dicts, a whole ``train_on_batch`` over a small network object, and functions with a print, a
logging call, an ``np.random`` draw, a LAPACK call (``np.linalg.solve``/``inv``) or a data-dependent size
(``np.unique``, ``x[x > 0]``) in the middle.

Each :class:`Case` makes fresh arguments; ``kind`` is what the compiler should do with it: ``"graph"`` (every call
runs one compiled graph, the side effects replayed) ``"split"`` (an uncapturable call in the middle) or ``"eager"`` (a data-dependent size: the whole function runs
eagerly, with the reason).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger("realworld")
DT = np.float64


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def arr(*shape: int, seed: int = 0, dtype: Any = DT) -> np.ndarray:
    return rng(seed).standard_normal(shape).astype(dtype)


# ---- layers ---------------------------------------------------------------------------------------------------
class Dense:
    def __init__(self, n_in: int, n_out: int, seed: int = 0) -> None:
        limit = 1 / np.sqrt(n_in)
        self.W = rng(seed).uniform(-limit, limit, (n_in, n_out))
        self.w0 = np.zeros((1, n_out))
        self.trainable = True

    def forward(self, X):
        self.layer_input = X
        return X.dot(self.W) + self.w0

    def backward(self, accum_grad, lr=0.01):
        W = self.W
        if self.trainable:
            grad_w = self.layer_input.T.dot(accum_grad)
            grad_w0 = np.sum(accum_grad, axis=0, keepdims=True)
            self.W = self.W - lr * grad_w
            self.w0 = self.w0 - lr * grad_w0
        return accum_grad.dot(W.T)


class ReLU:
    def forward(self, X):
        self.mask = X > 0
        return X * self.mask

    def backward(self, grad):
        return grad * self.mask


class LeakyReLU:
    def __init__(self, alpha: float = 0.2) -> None:
        self.alpha = alpha

    def forward(self, x):
        self.x = x
        return np.where(x >= 0, x, self.alpha * x)

    def backward(self, grad):
        return grad * np.where(self.x >= 0, 1, self.alpha)


class Sigmoid:
    def forward(self, x):
        self.out = 1 / (1 + np.exp(-x))
        return self.out

    def backward(self, dout):
        return dout * self.out * (1.0 - self.out)


class Tanh:
    def forward(self, x):
        self.cache = {"x": x, "y": np.tanh(x)}
        return self.cache["y"]

    def backward(self, grad):
        y = self.cache["y"]
        return grad * (1 - y ** 2)


class Softmax:
    def forward(self, x):
        e_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
        self.probs = e_x / np.sum(e_x, axis=-1, keepdims=True)
        return self.probs


class BatchNorm:
    def __init__(self, n: int, momentum: float = 0.9) -> None:
        self.momentum = momentum
        self.eps = 1e-5
        self.gamma = np.ones(n)
        self.beta = np.zeros(n)
        self.running_mean = np.zeros(n)
        self.running_var = np.ones(n)

    def forward(self, X):
        mean = np.mean(X, axis=0)
        var = np.var(X, axis=0)
        self.running_mean = self.momentum * self.running_mean + (1 - self.momentum) * mean
        self.running_var = self.momentum * self.running_var + (1 - self.momentum) * var
        self.X_centered = X - mean
        self.stddev_inv = 1 / np.sqrt(var + self.eps)
        X_norm = self.X_centered * self.stddev_inv
        return self.gamma * X_norm + self.beta


class LayerNorm:
    def __init__(self, n: int) -> None:
        self.params = {"g": np.ones(n), "b": np.zeros(n)}
        self.cache: dict[str, Any] = {}

    def forward(self, x):
        mu = x.mean(axis=-1, keepdims=True)
        var = x.var(axis=-1, keepdims=True)
        xhat = (x - mu) / np.sqrt(var + 1e-5)
        self.cache["xhat"] = xhat
        self.cache["var"] = var
        return self.params["g"] * xhat + self.params["b"]


class Embedding:
    def __init__(self) -> None:
        self.W = arr(10, 4, seed=3)

    def forward(self, ids):
        self.last_ids = ids
        return self.W[ids]


class Dropout:
    def __init__(self, p: float = 0.5) -> None:
        self.p = p

    def forward(self, X):
        self._mask = np.random.uniform(size=X.shape) > self.p  # a draw in the middle
        return X * self._mask / (1 - self.p)


# ---- losses ---------------------------------------------------------------------------------------------------
class MSE:
    def loss(self, y, p):
        self.diff = p - y
        return 0.5 * np.mean(self.diff ** 2)

    def gradient(self, y, p):
        return -(y - p)


class CrossEntropy:
    def forward(self, p, y):
        p = np.clip(p, 1e-15, 1 - 1e-15)
        self.p, self.y = p, y
        return -np.sum(y * np.log(p)) / y.shape[0]

    def backward(self):
        return -(self.y / self.p) + (1 - self.y) / (1 - self.p)


# ---- optimizers -----------------------------------------------------------------------------------------------
class SGD:
    def __init__(self, lr: float = 0.01, momentum: float = 0.0) -> None:
        self.lr = lr
        self.momentum = momentum
        self.w_updt = None

    def update(self, w, grad_wrt_w):
        if self.w_updt is None:
            self.w_updt = np.zeros(np.shape(w))
        self.w_updt = self.momentum * self.w_updt + (1 - self.momentum) * grad_wrt_w
        return w - self.lr * self.w_updt


class Momentum:
    def __init__(self, lr: float = 0.01, mu: float = 0.9) -> None:
        self.lr, self.mu = lr, mu
        self.velocity: dict[str, np.ndarray] = {}

    def step(self, params, grads):
        for k in params:
            v = self.velocity.setdefault(k, np.zeros_like(params[k]))
            v = self.mu * v - self.lr * grads[k]
            self.velocity[k] = v
            params[k] = params[k] + v


class Adagrad:
    def __init__(self, lr: float = 0.01) -> None:
        self.lr = lr
        self.G = None
        self.eps = 1e-8

    def update(self, w, grad):
        if self.G is None:
            self.G = np.zeros(np.shape(w))
        self.G = self.G + np.power(grad, 2)
        return w - self.lr * grad / np.sqrt(self.G + self.eps)


class RMSprop:
    def __init__(self, lr: float = 0.01, rho: float = 0.9) -> None:
        self.lr, self.rho, self.eps = lr, rho, 1e-8
        self.Eg = None

    def update(self, w, grad):
        if self.Eg is None:
            self.Eg = np.zeros(np.shape(grad))
        self.Eg = self.rho * self.Eg + (1 - self.rho) * np.power(grad, 2)
        return w - self.lr * grad / np.sqrt(self.Eg + self.eps)


class Adam:
    def __init__(self, lr: float = 0.001, b1: float = 0.9, b2: float = 0.999) -> None:
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, 1e-8
        self.m = None
        self.v = None
        self.t = 0

    def update(self, w, grad):
        if self.m is None:
            self.m = np.zeros(np.shape(grad))
            self.v = np.zeros(np.shape(grad))
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * np.power(grad, 2)
        m_hat = self.m / (1 - self.b1 ** self.t)
        v_hat = self.v / (1 - self.b2 ** self.t)
        self.w_updt = self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
        return w - self.w_updt


class AdamDict:
    """State in dicts keyed by parameter name (the style of many CS231n-like solutions)."""

    def __init__(self, lr: float = 1e-3) -> None:
        self.lr = lr
        self.config = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "t": 0}
        self.m: dict[str, np.ndarray] = {}
        self.v: dict[str, np.ndarray] = {}

    def step(self, params, grads):
        self.config["t"] += 1
        t = self.config["t"]
        b1, b2 = self.config["beta1"], self.config["beta2"]
        for k in sorted(params):
            if k not in self.m:
                self.m[k] = np.zeros_like(params[k])
                self.v[k] = np.zeros_like(params[k])
            self.m[k] = b1 * self.m[k] + (1 - b1) * grads[k]
            self.v[k] = b2 * self.v[k] + (1 - b2) * grads[k] ** 2
            mt = self.m[k] / (1 - b1 ** t)
            vt = self.v[k] / (1 - b2 ** t)
            params[k] -= self.lr * mt / (np.sqrt(vt) + self.config["epsilon"])
        return params


class NesterovInPlace:
    def __init__(self, lr: float = 0.01, mu: float = 0.9) -> None:
        self.lr, self.mu = lr, mu
        self.v = np.zeros(5)

    def step(self, w, dw):
        v_prev = self.v.copy()
        self.v *= self.mu
        self.v -= self.lr * dw
        w += -self.mu * v_prev + (1 + self.mu) * self.v
        return w


# ---- a small network and its training step --------------------------------------------------------------------
class Net:
    def __init__(self, optimizer: Any = None) -> None:
        self.layers = [Dense(4, 8, seed=1), ReLU(), Dense(8, 3, seed=2), Softmax()]
        self.loss_fn = CrossEntropy()
        self.errors: list[Any] = []
        self.optimizer = optimizer

    def forward(self, X):
        out = X
        for layer in self.layers:
            out = layer.forward(out)
        return out

    def backward(self, grad):
        for layer in reversed(self.layers[:-1]):
            grad = layer.backward(grad)
        return grad

    def train_on_batch(self, X, y):
        p = self.forward(X)
        loss = self.loss_fn.forward(p, y)
        grad = (p - y) / y.shape[0]
        self.backward(grad)
        return loss

    def train_logged(self, X, y):
        loss = self.train_on_batch(X, y)
        self.errors.append(loss)
        return loss


class TwoLayerNet:
    """Parameters in a dict, an optimizer object updating them, a loss history list."""

    def __init__(self, optim: Any) -> None:
        self.params = {"W1": arr(4, 6, seed=5) * 0.1, "b1": np.zeros(6), "W2": arr(6, 3, seed=6) * 0.1,
                       "b2": np.zeros(3)}
        self.optim = optim
        self.history: dict[str, list] = {"loss": []}

    def loss(self, X, y):
        h = np.maximum(0, X @ self.params["W1"] + self.params["b1"])
        scores = h @ self.params["W2"] + self.params["b2"]
        diff = scores - y
        loss = 0.5 * np.sum(diff ** 2) / X.shape[0]
        dscores = diff / X.shape[0]
        grads = {"W2": h.T @ dscores, "b2": dscores.sum(axis=0)}
        dh = dscores @ self.params["W2"].T
        dh[h <= 0] = 0
        grads["W1"] = X.T @ dh
        grads["b1"] = dh.sum(axis=0)
        return loss, grads

    def train_step(self, X, y):
        loss, grads = self.loss(X, y)
        self.optim.step(self.params, grads)
        self.history["loss"].append(loss)
        return loss


class LinearRegression:
    def __init__(self) -> None:
        self.w = np.zeros(4)
        self.training_errors: list = []
        self.n_iter = 0

    def fit_step(self, X, y, lr=0.01):
        y_pred = X.dot(self.w)
        mse = np.mean(0.5 * (y - y_pred) ** 2)
        self.training_errors.append(mse)
        grad_w = -(y - y_pred).dot(X)
        self.w -= lr * grad_w
        self.n_iter += 1
        return mse


class KMeansStep:
    def __init__(self) -> None:
        self.centroids = arr(3, 2, seed=9)
        self.inertia_ = None

    def step(self, X):
        d = ((X[:, None, :] - self.centroids[None, :, :]) ** 2).sum(axis=2)
        self.labels_ = d.argmin(axis=1)
        self.inertia_ = d.min(axis=1).sum()
        return self.labels_


class Stack:
    def __init__(self) -> None:
        self.items = [np.zeros(3)]
        self.meta = {"a": 1, "b": 2}

    def push_pop(self, x):
        self.items.append(x * 2)
        self.items.insert(0, x + 1)
        last = self.items.pop()
        self.items.extend([last, x])
        self.meta.update(c=3)
        self.meta.pop("a", None)
        self.meta.setdefault("d", x.sum())
        return last


class Scheduler:
    def __init__(self) -> None:
        self.lr = 0.1
        self.decay = 0.5

    def step(self, w, g):
        w = w - self.lr * g
        self.lr = self.lr * self.decay
        return w


STEP = 0
HISTORY: list = []
CACHE: dict = {}


def global_counter(x):
    global STEP
    STEP = STEP + 1
    HISTORY.append(x.mean())
    CACHE["last"] = x
    return x * 2


def returns_stored(obj, x):
    obj.saved = x
    obj.pair = (x, x * 2)
    return obj.saved + obj.pair[1]


def store_then_read_new_dict(obj, x):
    obj.cache = {}
    obj.cache["X"] = x
    obj.cache["sq"] = x * x
    return obj.cache["sq"].sum()


class Box:
    pass


class Slotted:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = None


class WithSetattr:
    def __init__(self) -> None:
        object.__setattr__(self, "log", [])

    def __setattr__(self, name, value):
        self.log.append(name)
        object.__setattr__(self, name, value)


class WithProperty:
    def __init__(self) -> None:
        self._v = np.zeros(3)

    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        self._v = value * 1.0


def store_attr(obj, x):
    obj.value = x * 3
    return x


def store_property(obj, x):
    obj.v = x * 3
    return obj.v


# ---- functions with an uncapturable call in the middle ---------------------------------------------------------
def with_print(x, w):
    h = np.tanh(x @ w)
    print("hidden mean", float(h.mean()))
    return h * 2 + 1


def with_logging(x):
    y = np.exp(-x)
    log.info("step done")
    return y / y.sum()


def with_random(x):
    y = x * 2
    noise = np.random.randn(*x.shape)
    return y + 0.01 * noise


class NoisyLayer:
    def __init__(self) -> None:
        self.W = arr(3, 3, seed=4)

    def forward(self, x):
        self.inp = x
        h = x @ self.W
        noise = np.random.normal(0, 0.1, h.shape)
        self.noise = noise
        return h + noise


# ---- functions with an unsupported call or data-dependent step in the middle ---------------------------------
def ridge_solve(X, y, lam=0.1):
    A = X.T @ X + lam * np.eye(X.shape[1])
    b = X.T @ y
    w = np.linalg.solve(A, b)  # a LAPACK op in the graph (issue 19; issue 18 split around it)
    r = X @ w - y
    return w, float((r * r).mean())


def _whiten(X):
    C = np.cov(X, rowvar=False) + 1e-3 * np.eye(X.shape[1])
    return np.linalg.inv(C)


def whiten_nested(X):
    Xc = X - X.mean(axis=0)
    P = _whiten(Xc)  # the LAPACK call is inside an inlined helper
    return Xc @ P


class PCA:
    def __init__(self, k: int = 2) -> None:
        self.k = k

    def fit_transform(self, X):
        mean = X.mean(axis=0)
        Xc = X - mean
        _, S, Vt = np.linalg.svd(Xc, full_matrices=False)  # a named tuple from a LAPACK op in the graph
        self.mean = mean
        self.components = Vt[:self.k]
        self.explained_variance = S[:self.k] ** 2 / (X.shape[0] - 1)
        return Xc @ self.components.T

    def fit_store_first(self, X):
        self.mean = X.mean(axis=0)  # a store before a call that may raise: one graph (a raise reruns eagerly, and
        Xc = X - self.mean  # the stores are replayed only after the whole graph has run)
        _, _S, Vt = np.linalg.svd(Xc, full_matrices=False)
        self.components = Vt[:self.k]
        return Xc @ self.components.T


def count_classes(y, X):
    classes = np.unique(y)  # a data-dependent shape, only counted: one graph (tracer/selections.py)
    return X.sum(axis=0) / len(classes)


def positive_sum(x):
    y = x * 2
    return y[y > 0].sum()  # a boolean-mask read (a data-dependent shape), only reduced: one graph


def early_exit(x):
    s = np.abs(x).max()
    if s > 10.0:  # a data-dependent early return
        return x / s
    return np.tanh(x)


def early_none(x):
    s = np.abs(x).max()
    if s > 10.0:  # a data-dependent early return of another kind of value: no cond; split at the branch
        return None
    return np.tanh(x) / s


# ---- the cases ------------------------------------------------------------------------------------------------
@dataclass
class Case:
    name: str
    fn: Callable[..., Any]
    make: Callable[[], tuple]
    kind: str = "graph"
    seeded: bool = False  # reseed np.random before each call (eager and compiled draw the same numbers)


def _X(n: int = 5, d: int = 4, seed: int = 0) -> np.ndarray:
    return arr(n, d, seed=seed)


def _onehot(n: int = 5, k: int = 3) -> np.ndarray:
    return np.eye(k)[np.arange(n) % k]


def _primed(layer: Any, X: np.ndarray) -> Any:
    layer.forward(X)
    return layer


CASES = [
    Case("Dense.forward", Dense.forward, lambda: (Dense(4, 3), _X())),
    Case("Dense.backward", Dense.backward, lambda: (_primed(Dense(4, 3), _X()), arr(5, 3, seed=1))),
    Case("Dense.forward_f32", Dense.forward, lambda: (Dense(4, 3), _X().astype(np.float32))),
    Case("ReLU.forward", ReLU.forward, lambda: (ReLU(), _X())),
    Case("ReLU.backward", ReLU.backward, lambda: (_primed(ReLU(), _X()), _X(seed=2))),
    Case("LeakyReLU.forward", LeakyReLU.forward, lambda: (LeakyReLU(), _X())),
    Case("LeakyReLU.backward", LeakyReLU.backward, lambda: (_primed(LeakyReLU(), _X()), _X(seed=2))),
    Case("Sigmoid.forward", Sigmoid.forward, lambda: (Sigmoid(), _X())),
    Case("Sigmoid.backward", Sigmoid.backward, lambda: (_primed(Sigmoid(), _X()), _X(seed=2))),
    Case("Tanh.forward", Tanh.forward, lambda: (Tanh(), _X())),
    Case("Tanh.backward", Tanh.backward, lambda: (_primed(Tanh(), _X()), _X(seed=2))),
    Case("Softmax.forward", Softmax.forward, lambda: (Softmax(), _X())),
    Case("BatchNorm.forward", BatchNorm.forward, lambda: (BatchNorm(4), _X())),
    Case("LayerNorm.forward", LayerNorm.forward, lambda: (LayerNorm(4), _X())),
    Case("Embedding.forward", Embedding.forward, lambda: (Embedding(), np.array([1, 3, 3, 7]))),
    Case("MSE.loss", MSE.loss, lambda: (MSE(), _X(), _X(seed=1))),
    Case("CrossEntropy.forward", CrossEntropy.forward, lambda: (CrossEntropy(), np.full((5, 3), 1 / 3), _onehot())),
    Case("CrossEntropy.backward", CrossEntropy.backward,
         lambda: (_primed_ce(),)),
    Case("SGD.update", SGD.update, lambda: (SGD(momentum=0.9), _X(), _X(seed=1))),
    Case("Momentum.step", Momentum.step, lambda: (Momentum(), {"W": _X(), "b": np.zeros(4)},
                                                  {"W": _X(seed=1), "b": np.ones(4)})),
    Case("Adagrad.update", Adagrad.update, lambda: (Adagrad(), _X(), _X(seed=1))),
    Case("RMSprop.update", RMSprop.update, lambda: (RMSprop(), _X(), _X(seed=1))),
    Case("Adam.update", Adam.update, lambda: (Adam(), _X(), _X(seed=1))),
    Case("AdamDict.step", AdamDict.step, lambda: (AdamDict(), {"W": _X(), "b": np.zeros(4)},
                                                  {"W": _X(seed=1), "b": np.ones(4)})),
    Case("Nesterov.step_inplace", NesterovInPlace.step, lambda: (NesterovInPlace(), np.ones(5), np.arange(5.0))),
    Case("Net.forward", Net.forward, lambda: (Net(), _X())),
    Case("Net.train_on_batch", Net.train_on_batch, lambda: (Net(), _X(), _onehot())),
    Case("Net.train_logged", Net.train_logged, lambda: (Net(), _X(), _onehot())),
    Case("TwoLayerNet.train_step[AdamDict]", TwoLayerNet.train_step,
         lambda: (TwoLayerNet(AdamDict()), _X(), _X(5, 3, seed=7))),
    Case("TwoLayerNet.train_step[Momentum]", TwoLayerNet.train_step,
         lambda: (TwoLayerNet(Momentum()), _X(), _X(5, 3, seed=7))),
    Case("LinearRegression.fit_step", LinearRegression.fit_step, lambda: (LinearRegression(), _X(), arr(5, seed=8))),
    Case("KMeans.step", KMeansStep.step, lambda: (KMeansStep(), _X(6, 2))),
    Case("Stack.push_pop", Stack.push_pop, lambda: (Stack(), np.arange(3.0))),
    Case("Scheduler.step", Scheduler.step, lambda: (Scheduler(), np.ones(3), np.ones(3))),
    Case("global_counter", global_counter, lambda: (np.arange(4.0),)),
    Case("returns_stored", returns_stored, lambda: (Box(), np.arange(4.0))),
    Case("store_then_read_new_dict", store_then_read_new_dict, lambda: (Box(), np.arange(4.0))),
    Case("store_attr[slots]", store_attr, lambda: (Slotted(), np.arange(3.0))),  # a slot store replays (issue 19)
    Case("store_attr[__setattr__]", store_attr, lambda: (WithSetattr(), np.arange(3.0)), kind="refused"),
    Case("store_attr[property]", store_property, lambda: (WithProperty(), np.arange(3.0)), kind="refused"),
    Case("with_print", with_print, lambda: (_X(), arr(4, 2, seed=1)), kind="split"),
    Case("with_logging", with_logging, lambda: (_X(),), kind="split"),
    Case("with_random", with_random, lambda: (_X(),), kind="split", seeded=True),
    Case("Dropout.forward", Dropout.forward, lambda: (Dropout(), _X()), kind="split", seeded=True),
    Case("NoisyLayer.forward", NoisyLayer.forward, lambda: (NoisyLayer(), _X(5, 3)), kind="split", seeded=True),
    Case("ridge_solve", ridge_solve, lambda: (_X(), arr(5, seed=8))),
    Case("whiten_nested", whiten_nested, lambda: (_X(8, 3),)),
    Case("PCA.fit_transform", PCA.fit_transform, lambda: (PCA(), _X(8, 4))),
    Case("PCA.fit_store_first", PCA.fit_store_first, lambda: (PCA(), _X(8, 4))),
    Case("count_classes", count_classes, lambda: (np.array([0, 2, 2, 1, 0]), _X())),
    Case("positive_sum", positive_sum, lambda: (_X(),)),
    Case("early_exit", early_exit, lambda: (_X(),)),
    Case("early_none", early_none, lambda: (_X(),), kind="split"),
]


def _primed_ce() -> CrossEntropy:
    ce = CrossEntropy()
    ce.forward(np.full((5, 3), 0.25), _onehot())
    return ce
