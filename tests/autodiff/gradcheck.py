"""Central finite differences in float64: the reference every derivative rule is checked against."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import jitgraph


def numeric_grad(f: Callable[..., float], args: Sequence[Any], argnum: int, eps: float) -> np.ndarray:
    """d f / d args[argnum] by central differences (every element perturbed in turn)."""
    base = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    x = np.array(base[argnum], dtype=np.float64, copy=True)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        for sign in (1, -1):
            shifted = x.copy()
            shifted[index] += sign * eps
            call = list(base)
            call[argnum] = shifted if x.ndim else float(shifted) if isinstance(args[argnum], float) else shifted
            grad[index] += sign * float(f(*call)) / (2 * eps)
    return grad


def weighted(f: Callable[..., Any], args: Sequence[Any], seed: int = 7) -> Callable[..., Any]:
    """``sum(f(*args) * W)`` with fixed random weights (drawn for ``f(*args)``'s shape), so every output element
    counts differently."""
    weights = np.random.default_rng(seed).uniform(0.5, 1.5, size=np.shape(f(*args)))

    def loss(*args: Any) -> Any:
        return (f(*args) * weights).sum()

    return loss


def check_grad(f: Callable[..., Any], *args: Any, argnums: Sequence[int] | None = None, eps: float = 1e-6,
               rtol: float = 1e-5, atol: float = 1e-7, backend: str = "eager") -> None:
    """jitgraph's gradient of ``sum(f(*args) * W)`` against central differences, for every float argument."""
    loss = weighted(f, args)
    if argnums is None:
        argnums = [i for i, a in enumerate(args) if isinstance(a, float) or np.asarray(a).dtype.kind == "f"]
    argnums = tuple(argnums)
    grads = jitgraph.grad(loss, argnums=argnums, backend=backend)(*args)
    for k, i in enumerate(argnums):
        expected = numeric_grad(loss, args, i, eps)
        np.testing.assert_allclose(np.asarray(grads[k], dtype=np.float64), expected, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of argument {i}")
