"""The showcase programs through the whole pipeline: tracer -> passes -> backend, on "eager" and on the default
backend. The default backend must be "cpu" whenever the CPU backend package exists (no silent skip)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from jitgraph.jit import resolve_backend
from tests.tracer import programs as P
from tests.tracer.helpers import run_both

CPU_PRESENT = importlib.util.find_spec("jitgraph.backends.cpu") is not None


def test_default_backend_is_cpu_when_present():
    assert resolve_backend(None) == ("cpu" if CPU_PRESENT else "eager")
    assert resolve_backend("eager") == "eager"


def _cases():
    rng = np.random.default_rng(5)
    params = P.init_mlp(rng)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    y = rng.integers(0, 4, 6)
    p, g = (rng.standard_normal(10).astype(np.float32) for _ in range(2))
    return [
        ("mlp", P.mlp_train_step, (params, x, y, 0.1)),
        ("adam", P.adam_update, (p, g, np.full(10, 0.1, np.float32), np.full(10, 0.2, np.float32), 3)),
        ("layernorm", P.layernorm, (x, np.ones(8, np.float32), np.zeros(8, np.float32))),
        ("model", P.model_forward, (P.Model(rng), x)),
        ("tanh_loop", P.tanh_loop, (x[:, :4].copy(), rng.standard_normal((4, 4)).astype(np.float32))),
    ]


@pytest.mark.parametrize("backend", ["eager", None], ids=["eager", "default"])
@pytest.mark.parametrize("case", range(5), ids=["mlp", "adam", "layernorm", "model", "tanh_loop"])
def test_showcase_programs_full_pipeline(case, backend):
    _name, fn, args = _cases()[case]
    compiled = run_both(fn, *args, backend=backend, options={})
    entry = compiled.entries[0]
    assert entry.mode == "graph"
    assert set(entry.times) >= {"trace", "passes", "backend"}
