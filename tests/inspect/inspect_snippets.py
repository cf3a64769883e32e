"""Functions the inspection tests explain. Kept in their own file so the snapshots' line numbers stay put."""

import numpy as np


def scale(v):
    return v * 2.0


def breaks(x, w):
    h = np.tanh(x @ w)
    print("sum of h:", h.sum())  # a side effect: a graph break
    return h + 1.0


def step(x, w, lr):
    h = np.tanh(x @ w)
    s = h.sum(axis=1)
    return scale(s) * lr + 1.0


def example_step():
    return np.ones((4, 3), np.float32), np.full((3, 5), 0.5, np.float32), 0.1


def example_breaks():
    return (np.ones((2, 2)), np.eye(2)), {}
