"""One test per Python construct the tracer handles, each compared with eager NumPy (backend "eager")."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from tests.tracer.helpers import run_both

rng = np.random.default_rng(1)
A = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal((4, 5)).astype(np.float32)
V = rng.standard_normal(4).astype(np.float32)
SCALE = 3.0
OFFSET = np.linspace(0, 1, 4).astype(np.float32)


# ---- locals, globals, closures, attributes ----------------------------------------------------------------------
def uses_globals(x):
    y = x * SCALE
    return y + OFFSET


def make_closure(k, bias):
    def inner(x):
        return x * k + bias

    return inner


closure_fn = make_closure(2, np.ones(4, np.float32))


def uses_closure(x):
    return closure_fn(x)


def nested_closure_in_trace(x, n):
    total = x

    def add(y):
        nonlocal total
        total = total + y
        return total

    for i in range(n):
        add(x * i)
    return total


class Holder:
    factor = 4

    def __init__(self):
        self.W = rng.standard_normal((4, 2)).astype(np.float32)
        self.n = 2

    def apply(self, x):
        return (x @ self.W) * self.factor + self.n

    @property
    def Wt(self):
        return self.W.T

    @staticmethod
    def twice(x):
        return 2 * x


def uses_attributes(h, x):
    return h.apply(x), h.Wt.shape, Holder.twice(x), np.pi * x


# ---- calls ----------------------------------------------------------------------------------------------------
def helper(a, b=2.0, *rest, scale=1, **extra):
    out = a * b * scale
    for r in rest:
        out = out + r
    for k in sorted(extra):
        out = out - extra[k]
    return out


def calls_with_arguments(x, y):
    r1 = helper(x)
    r2 = helper(x, 3.0, y, y, scale=2, z=x, w=1.0)
    args = (x, 0.5)
    kwargs = {"scale": 3}
    r3 = helper(*args, **kwargs)
    return r1, r2, r3


def recursive_helpers(x):
    return _level1(x) + 1


def _level1(x):
    return _level2(x) * 2


def _level2(x):
    return np.tanh(x)


class Scale:
    def __init__(self, s):
        self.s = s

    def __call__(self, x):
        return x * self.s


scale_obj = Scale(np.float32(0.5))


def calls_callable_object(x):
    return scale_obj(x) + Scale(1)(x) if False else scale_obj(x)


def lambdas_and_comprehensions(x, ws):
    f = lambda v: v * 2 + 1
    squares = [f(w) for w in ws]
    named = {f"w{i}": w.sum() for i, w in enumerate(ws)}
    total = sum(w.mean() for w in ws)
    evens = [i for i in range(6) if i % 2 == 0]
    return squares, named, total + x.sum(), evens


# ---- containers ------------------------------------------------------------------------------------------------
def containers(x):
    t = (x, x * 2, 3)
    lst = [x + 1]
    lst.append(x - 1)
    lst.extend([t[1]])
    d = {"a": t[0], "b": lst[-1]}
    d["c"] = d["a"] * 2
    a, b, c = t
    first, *rest = lst
    return a + b + c, first, len(rest), d, lst[1:], t[::-1][0]


# ---- loops and branches ---------------------------------------------------------------------------------------
def loops(x, ws, d):
    out = x
    for i in range(3):
        out = out + i
    for w in ws:
        out = out * w
    for w in (x, x):
        out = out - w
    for k, v in d.items():
        out = out + v
    for k in d.keys():  # noqa: SIM118 - dict.keys() is the construct under test
        out = out + d[k]
    for v in d.values():
        out = out - v
    for i, (a, b) in enumerate(zip(ws, ws)):
        out = out + a * b * i
    for row in x:
        out = out + row.sum()
    return out


def branches(x, flag, mode, n):
    if flag:
        x = x + 1
    else:
        x = x - 1
    if mode == "relu":
        x = np.maximum(x, 0)
    elif mode is None:
        x = x * 0
    i = 0
    while i < n:
        x = x * 2
        i += 1
    if x.shape[0] > 2 and x.ndim == 2 and len(x) == 3:
        x = x.T
    return x


# ---- returns ---------------------------------------------------------------------------------------------------
def returns_everything(x, lr):
    s = np.sum(x)
    return {"arr": x * 2, "pair": (s, [x.max(), 3]), "py": lr * 2, "none": None, "shape": x.shape}


def returns_scalars(x):
    return np.sum(x), x[0, 0], x.mean(axis=None), np.float32(2) * 3, x.sum(keepdims=True), np.dot(x[0], x[0])


def returns_input_and_views(x):
    x += 1
    return x, x[1:], x.T


# ---- NumPy surface ---------------------------------------------------------------------------------------------
def numpy_surface(a, b, v):
    r = []
    r.append(a.T @ a)
    r.append(np.matmul(a, b))
    r.append(a.sum(axis=1, keepdims=True) + a.max(axis=0) - a.min() + a.mean(axis=(0, 1)))
    r.append(a.astype(np.float64).dtype == np.float64)
    r.append(a.copy())
    r.append(np.maximum(a, 0.5) + np.minimum(a, v))
    r.append(np.where(a > 0, a, -a))
    r.append(np.exp(a) + np.log(np.abs(a) + 1) + np.sqrt(np.abs(a)) + np.tanh(a) ** 2)
    r.append(np.zeros_like(a) + np.ones_like(v, dtype=np.int32) + np.full_like(a, 2.0))
    r.append(np.arange(4) + np.arange(1, 9, 2, dtype=np.float32))
    r.append(np.einsum("ij,jk->ik", a, b))
    r.append(a.reshape(4, 3) + a.reshape((2, -1)).reshape(-1)[:3].reshape(1, 3))
    r.append(np.expand_dims(v, 0).squeeze(0) + np.squeeze(v[None, :, None]))
    r.append(np.swapaxes(a[None], 0, 2).ravel() + a.ravel())
    r.append(np.concatenate([a, a], axis=0) + np.stack([a, a]).reshape(6, 4))
    r.append(np.clip(a, -0.5, 0.5) + a.clip(0, None))
    r.append(a.argmax(axis=1) + np.argmin(a))
    r.append(a.var(axis=0) + np.std(a, axis=1, ddof=1).sum())
    r.append(np.sum(a, axis=0, dtype=np.float64))
    r.append(np.transpose(a) * 1 + a.transpose(1, 0))
    r.append(np.zeros((2, 3), np.int64) + np.ones(3) + np.eye(3)[0] + np.full((1, 3), 7))
    r.append(np.array([1.0, 2.0]) + np.asarray(v)[:2] + np.array([a[0, 0], a[1, 1]]))
    r.append((a > 0) & (a < 1) | ~(a == 0))
    r.append(-a // 0.3 + a % 0.4 + np.float_power(np.abs(a), 1.5))
    r.append(np.dot(a, v) + np.outer(v, v)[:3, 0])
    r.append(np.vstack([v, v]) + np.hstack([v[:2], v[2:]]))
    r.append(np.broadcast_to(v, (3, 4)) + a)
    r.append(np.moveaxis(np.ones((2, 3, 4)), 0, -1).shape)
    r.append(a.astype(np.int32) // 2)
    r.append((a.size, a.ndim, a.dtype, a.nbytes, np.shape(a), np.ndim(v)))
    return r


def shape_constants(x):
    n = x.shape[0]
    m = len(x)
    out = x.reshape(n * x.shape[1])
    return out * (n + m + x.ndim + x.size), n // 2


def runtime_scalars(x, lr, s):
    return x * lr + s, lr * 2, s * 2, float(lr)


CASES = [
    (uses_globals, (A,)),
    (uses_closure, (V,)),
    (nested_closure_in_trace, (V, 3)),
    (uses_attributes, (Holder(), A)),
    (calls_with_arguments, (A, V)),
    (recursive_helpers, (A,)),
    (calls_callable_object, (A,)),
    (lambdas_and_comprehensions, (A, [V, V * 2, V + 1])),
    (containers, (V,)),
    (loops, (A, [V, V], {"p": V, "q": V * 2})),
    (branches, (A, True, "relu", 2)),
    (branches, (A, False, None, 0)),
    (returns_everything, (A, 0.25)),
    (returns_scalars, (A,)),
    (returns_input_and_views, (A,)),
    (numpy_surface, (A, B, V)),
    (shape_constants, (A,)),
    (runtime_scalars, (A, 0.5, np.float32(2.0))),
]


@pytest.mark.parametrize("fn,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_construct(fn, args):
    run_both(fn, *args)


def test_float_and_numpy_scalar_args_are_graph_inputs():
    compiled = run_both(runtime_scalars, A, 0.5, np.float32(2.0))
    graph = compiled.entries[0].traced_graph
    types = [str(n.type) for n in graph.inputs]
    assert types == ["f32[3,4]", "pyfloat[]", "f32[]"]
    compiled(A, 0.75, np.float32(3.0))
    assert compiled.cache_info().recompiles == 0


def test_returned_input_is_the_callers_array():
    x = A.copy()
    compiled = run_both(returns_input_and_views, x)
    y = A.copy()
    same, view, transposed = compiled(y)
    assert same is y and view.base is y and np.shares_memory(transposed, y)


def test_views_of_arguments_are_updated_in_place():
    def f(x):
        row = x[1]
        row += 10
        x.T[0] *= 2
        x[:, 1:3] = 0
        return row.sum()

    run_both(f, A)


def returns_callers_containers(params, log):
    for k in params:
        params[k] *= 2
    return params, log, {k: v for k, v in sorted(params.items())}


def test_returned_caller_containers_are_the_same_objects():
    params, log = {"b": A.copy(), "a": V.copy()}, [1, 2]
    compiled = run_both(returns_callers_containers, params, log)
    p, lg = {"b": A.copy(), "a": V.copy()}, [3]
    out = compiled(p, lg)
    assert out[0] is p and out[1] is lg and list(out[2]) == ["a", "b"]


def _scaled_add(x, y, alpha=1.0):
    return x + alpha * y


SCALED = functools.partial(_scaled_add, alpha=0.5)


def math_and_partial(q, k):
    d = q.shape[-1]
    scores = q @ k.T / math.sqrt(d)
    return SCALED(scores, scores * math.pi)


def test_math_functions_and_partials():
    run_both(math_and_partial, A, A * 2)


def numpy_functions_of_python_scalars(x, lr):
    hd = x.shape[1]
    return (x / np.sqrt(hd), x * np.maximum(lr, 0.5), x * lr * 2.0, np.exp(lr), np.where(True, lr, 1.0),
            np.clip(lr, 0, 1) * x)


def test_numpy_functions_of_python_scalars_are_strong():
    """np.sqrt(8) is a float64 NumPy scalar, so f32 / np.sqrt(8) is float64 (NEP 50), while f32 * lr stays f32."""
    run_both(numpy_functions_of_python_scalars, A, 0.25)
