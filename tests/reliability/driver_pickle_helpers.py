"""Module-level compiled functions for tests/reliability/test_driver_pickle.py: a spawned worker imports this module
by name, so what it pickles must be reachable here under the same names."""

from __future__ import annotations

import numpy as np

import jitgraph


@jitgraph.compile
def step(x: np.ndarray) -> np.ndarray:
    return np.sqrt(x * 2.0 + 1.0)


@jitgraph.compile(backend="eager", cache_limit=3)
def scaled(x: np.ndarray, s: float) -> np.ndarray:
    return x * s - 1.0


def plain(x: np.ndarray) -> np.ndarray:
    return x * 3.0


plain_compiled_elsewhere = {"f": jitgraph.compile(plain, backend="eager")}  # not reachable as a module attribute


class Model:
    def __init__(self, w: float) -> None:
        self.w = w

    @jitgraph.compile
    def forward(self, x: np.ndarray) -> np.ndarray:
        return x * self.w + 1.0


def apply_step(x: np.ndarray) -> np.ndarray:
    """What a worker runs: the compiled function, found by reference, called in the worker's process."""
    return step(x)
