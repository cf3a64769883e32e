"""A large float32 launch that divides by constants is built twice -- the exact float64 products and the divider --
and timed (jitgraph/backends/cpu/measured_choice.py). The two must agree bit for bit (which one a call ran never
shows), the choice must follow the timings, and a divider that fails to compile must leave the products running."""

from __future__ import annotations

import gc
import time

import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu import measured_choice
from jitgraph.backends.cpu.measured_choice import MeasuredLaunch


def adam(p, g, m, v):
    m[...] = 0.9 * m + 0.1 * g
    v[...] = 0.999 * v + 0.001 * (g * g)
    p -= 1e-3 * (m / (1 - 0.9 ** 10)) / (np.sqrt(v / (1 - 0.999 ** 10)) + 1e-8)


def _inputs(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.standard_normal(n).astype(np.float32) for _ in range(2)] + \
        [np.abs(rng.standard_normal(n)).astype(np.float32) * s for s in (0.1, 0.01)]


def _measured() -> list[MeasuredLaunch]:
    return [o for o in gc.get_objects() if isinstance(o, MeasuredLaunch)]


def test_both_variants_agree_bit_for_bit_and_with_numpy() -> None:
    before = set(map(id, _measured()))
    compiled = jitgraph.compile(adam, cache=False, tier_down=False)
    n = measured_choice.MIN_ELEMENTS + 3
    args = _inputs(n)
    compiled(*[a.copy() for a in args])
    (launch,) = [m for m in _measured() if id(m) not in before]
    results = []
    for variant in launch.variants:
        launch.chosen, launch.enabled = variant, False
        run = [a.copy() for a in args]
        compiled(*run)
        results.append(run)
    eager = [a.copy() for a in args]
    adam(*eager)
    for products, divider, want in zip(*results, eager):
        np.testing.assert_array_equal(products, divider)
        np.testing.assert_allclose(products, want, rtol=1e-6, atol=1e-7)
    products_kernel, divider_kernel = (v.kernel for v in launch.variants)
    assert products_kernel is not divider_kernel and divider_kernel.signatures == products_kernel.signatures


def test_small_launches_are_not_measured() -> None:
    before = set(map(id, _measured()))
    compiled = jitgraph.compile(adam, cache=False, tier_down=False)
    args = _inputs(1000)
    compiled(*args)
    assert not [m for m in _measured() if id(m) not in before]


class _Variant:
    def __init__(self, seconds: float) -> None:
        self.seconds, self.runs = seconds, 0
        self.kernel, self.source = self, "source"
        self.signatures: list = []

    def run(self, operands, serial=False):
        self.runs += 1
        time.sleep(self.seconds)
        return operands

    def compile(self, signature):
        raise RuntimeError("no compile")


@pytest.mark.parametrize(("slow", "fast_name"), [(0, "divider"), (1, "products")])
def test_the_faster_variant_runs_between_measurements(slow: int, fast_name: str) -> None:
    variants = [_Variant(0.0), _Variant(0.0)]
    variants[slow].seconds = 0.003
    launch = MeasuredLaunch(*variants)
    for _ in range(measured_choice.SAMPLES + 1):
        launch.run([])
    assert launch.chosen_variant() == fast_name
    runs = [v.runs for v in variants]
    for _ in range(20):
        launch.run([])
    assert variants[1 - slow].runs == runs[1 - slow] + 20 and variants[slow].runs == runs[slow]
    # the next period measures again, and follows a change
    variants[slow].seconds, variants[1 - slow].seconds = 0.0, 0.003
    while launch.calls % measured_choice.PERIOD != measured_choice.SAMPLES + 1:
        launch.run([])
    assert launch.chosen_variant() != fast_name


def test_a_divider_that_fails_to_compile_leaves_the_products() -> None:
    products, divider = _Variant(0.0), _Variant(0.0)
    products.signatures = ["sig"]
    launch = MeasuredLaunch(products, divider)
    for _ in range(measured_choice.PERIOD + 20):
        launch.run([])
    assert divider.runs == 0 and launch.chosen_variant() == "products"


def test_a_first_call_that_raises_leaves_the_next_call_first() -> None:
    """The launch's first call compiles (a corrupt cache file is dropped and the call retried, launch.py): a raise
    there must not move the launch on to measuring a divider that was never compiled."""
    products, divider = _Variant(0.0), _Variant(0.0)
    failing = [True]

    def run(operands, serial=False):
        if failing.pop() if failing else False:
            raise OSError("truncated cache file")
        products.runs += 1
        return operands

    products.run = run
    launch = MeasuredLaunch(products, divider)
    with pytest.raises(OSError):
        launch.run([], True)
    assert launch.calls == 0
    launch.run([], True)
    assert launch.calls == 1 and products.runs == 1 and divider.runs == 0
