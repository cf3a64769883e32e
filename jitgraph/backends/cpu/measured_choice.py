"""A launch that picks between two exact variants of its kernel by timing them: float32 division by products or
by the divider.

An elementwise kernel that divides float32 by a constant or a scalar of the call can compute the exact quotient as
a float64 product (:mod:`divisions`). That beats the divider while the launch's arrays come from the cache (W6,
Adam over 1e7 float32, 3.6 ms against 4.6 on a quiet machine) and loses while they stream from memory (5.7-6.3 ms
against 6.8-7.2 on the same machine while another tenant held its shared last-level cache). The kernel chooses by
the launch's size against the cache's size (:func:`flat_body.cached_elements`), which cannot know how much of a
shared cache is really there: a virtual machine reports the whole socket's. So a large launch that would take
the products is built twice -- the products kernel, and the same kernel with the divider only
(``KernelSpec.divide``) -- and :class:`MeasuredLaunch` times them: the first ``SAMPLES`` calls of every
``PERIOD`` alternate between the two, and the faster median runs the rest of the period. Both give NumPy's
quotient bit for bit, so which one a call ran never shows in a result.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

MIN_ELEMENTS = 1 << 20  # below, the arrays fit in a core's share of the cache: the products win, no measuring
SAMPLES = 8  # measured calls per period, alternating between the variants
PERIOD = 512  # calls between two measurements (the cache's tenants change over time)


class MeasuredLaunch:
    """Two :class:`~jitgraph.backends.cpu.launch.Launch` objects of one layout (the products first, the divider
    second), run as one: ``kernel`` and ``source`` are the first's, as explain shows them."""

    def __init__(self, products: Any, divider: Any) -> None:
        self.variants = (products, divider)
        self.kernel, self.source = products.kernel, products.source
        self.chosen = products
        self.calls = 0
        self.samples: tuple[list[float], list[float]] = ([], [])
        self.enabled = True  # False once the divider failed to compile: the products run, unmeasured

    def run(self, operands: Any, serial: bool = False) -> Any:
        calls = self.calls
        if calls == 0:  # under the launch's first-call lock; a first call that raises leaves the next one first
            out = self._first(operands, serial)
            self.calls = 1
            return out
        self.calls = calls + 1  # racy under threads: only the phase of the measurement shifts
        phase = calls % PERIOD
        if phase == 0 or phase > SAMPLES or not self.enabled:
            return self.chosen.run(operands)
        k = phase % 2
        start = time.perf_counter()
        out = self.variants[k].run(operands)
        self.samples[k].append(time.perf_counter() - start)
        if phase == SAMPLES:
            self._decide()
        return out

    def _first(self, operands: Any, serial: bool) -> Any:
        """The first call runs the products (their compile is the launch's first-call compile, under its lock),
        then compiles the divider for the same argument types without running it: the call may write its
        arguments in place. A divider that fails to compile is not measured: the products run."""
        out = self.variants[0].run(operands, serial)
        try:
            for signature in self.variants[0].kernel.signatures:
                self.variants[1].kernel.compile(signature)
        except Exception:  # noqa: BLE001 - a variant we can do without
            self.enabled = False
        return out

    def _decide(self) -> None:
        products, divider = self.samples
        if products and divider:
            faster = 0 if statistics.median(products) <= statistics.median(divider) else 1
            self.chosen = self.variants[faster]
        self.samples = ([], [])

    def chosen_variant(self) -> str:
        """``"products"`` or ``"divider"``: what the calls between two measurements run now."""
        return "products" if self.chosen is self.variants[0] else "divider"
