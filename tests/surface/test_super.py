"""``super()`` (zero- and two-argument) in methods called inside a trace: the parent's method, inlined."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tracer.helpers import run_both


class Layer:
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        return x @ self.w

    @classmethod
    def scale(cls, x):
        return x * 2.0

    @staticmethod
    def shift(x):
        return x + 1.0

    @property
    def norm(self):
        return np.sqrt((self.w * self.w).sum())


class Relu(Layer):
    def forward(self, x):
        return np.maximum(super().forward(x), 0.0)

    def both(self, x):
        return super(Relu, self).forward(x) + super().scale(x)[:, :1] + super().shift(x)[:, :1] + super().norm  # noqa: UP008 - the two-argument form on purpose


class Deeper(Relu):
    def forward(self, x):
        return super().forward(x) * 3.0


class Plain:
    def __init__(self):
        super().__init__()
        self.k = 2.0


W = np.arange(6.0).reshape(3, 2) - 2
X = np.linspace(-1, 1, 12).reshape(4, 3)


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_zero_argument_super_in_methods(backend):
    layer, deep = Relu(W), Deeper(W)
    run_both(lambda x: layer.forward(x), X, backend=backend, options={})
    run_both(lambda x: deep.forward(x), X, backend=backend, options={})
    run_both(lambda x: layer.both(x), X, backend=backend, options={})


def test_super_init_of_object_is_a_no_op():
    p = Plain()
    run_both(lambda x: Plain.__init__(p) or x * p.k, X, graphs=None)


def test_super_errors_break_with_reason():
    import jitgraph

    class Odd(Layer):
        def forward(self, x):
            return super().missing(x)

    odd = Odd(W)
    cf = jitgraph.compile(lambda x: odd.forward(x), backend="eager")
    with pytest.raises(AttributeError, match="'super' object has no attribute 'missing'"):
        cf(X)
    assert "super" in str(cf.break_reasons()[0])
