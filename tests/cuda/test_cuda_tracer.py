"""``@jitgraph.compile(backend="cuda")`` called with device arrays: keys and guards, outputs, in-place training
steps without host copies, aliasing, and the errors that replace an eager fallback NumPy cannot do on the GPU.

Runs in the simulator (tests/cuda/conftest.py). Transfers are counted by wrapping the two places data crosses
between host and device: ``numba.cuda.to_device`` and the device array's ``copy_to_host``/``copy_to_device``.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jitgraph
from jitgraph.errors import BackendError, GraphBreakError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.workloads import make_inputs, w1_fma_tanh, w5_mlp_step, w6_adam

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def cuda() -> Any:
    from jitgraph.backends.cuda import runtime

    return runtime.cuda()


def dev(*arrays: np.ndarray) -> list[Any]:
    return [cuda().to_device(a) for a in arrays]


def pointer(a: Any) -> int:
    """The device address of ``a``'s data (the simulator's arrays: their NumPy buffer's address)."""
    iface = getattr(a, "__cuda_array_interface__", None)
    if iface is not None:
        return iface["data"][0]
    return a._ary.__array_interface__["data"][0]


@contextmanager
def count_transfers(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[str]]:
    """Count host->device (``to_device``, ``copy_to_device``) and device->host (``copy_to_host``) copies."""
    counts: collections.Counter[str] = collections.Counter()
    module = cuda()
    array_type = type(module.to_device(np.zeros(1)))

    def counting(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return fn(*args, **kwargs)

        return wrapper

    with monkeypatch.context() as m:
        m.setattr(module, "to_device", counting("h2d", module.to_device))
        m.setattr(array_type, "copy_to_device", counting("h2d", array_type.copy_to_device))
        m.setattr(array_type, "copy_to_host", counting("d2h", array_type.copy_to_host))
        yield counts


def host(value: Any) -> Any:
    return value.copy_to_host() if hasattr(value, "copy_to_host") else value


# ---- keys, guards, outputs ------------------------------------------------------------------------------------
def test_device_arguments_give_device_results_and_compile_apart_from_host_ones() -> None:
    a, b, c = make_inputs("W1", scale=3e-5)
    fn = jitgraph.compile(w1_fma_tanh, backend="cuda")
    got = fn(*dev(a, b, c))
    assert hasattr(got, "copy_to_host") and got.shape == a.shape and got.dtype == a.dtype
    np.testing.assert_allclose(got.copy_to_host(), w1_fma_tanh(a, b, c), rtol=1e-5, atol=1e-6)
    guards = fn.entries[0].guard_texts
    assert "a.device == 'cuda'" in guards and f"a.shape == {a.shape}" in guards
    host_result = fn(a, b, c)  # host arguments: a second entry, NumPy in and out
    assert type(host_result) is np.ndarray
    np.testing.assert_allclose(host_result, w1_fma_tanh(a, b, c), rtol=1e-5, atol=1e-6)
    assert fn.cache_info().entries == 2 and "type(a)" in fn.recompile_reasons()[0]
    fn(*dev(a, b, c))  # new device arrays of the same shape: the first entry again
    info = fn.cache_info()
    assert (info.hits, info.misses, info.fallbacks) == (1, 2, 0)


def test_reductions_views_and_returned_arguments_stay_on_the_device() -> None:
    def f(x, y):
        s = x.sum()
        rows = np.exp(x - x.max(axis=1, keepdims=True))
        x += y
        return s, rows / rows.sum(axis=1, keepdims=True), x, x.T, x[1:, :3]

    x, y = np.random.default_rng(0).standard_normal((2, 4, 40)).astype(np.float32)
    want_x = x.copy()
    want = f(want_x, y)
    dx, dy = dev(x, y)
    got = jitgraph.compile(f, backend="cuda")(dx, dy)
    assert got[2] is dx  # the argument itself, updated in place
    assert all(hasattr(g, "copy_to_host") for g in got)
    for g, w in zip(got, want):
        assert g.shape == np.shape(w) and g.dtype == np.asarray(w).dtype
        np.testing.assert_allclose(host(g), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx.copy_to_host(), want_x, rtol=1e-6)


class Dense:
    """A layer whose weights live on the device, read through ``self``: extra graph inputs, guarded."""

    def __init__(self, w: Any, b: Any) -> None:
        self.w, self.b = w, b

    @jitgraph.compile(backend="cuda")
    def forward(self, x):
        return np.maximum(x * self.w + self.b, 0.0)


def test_device_arrays_read_from_attributes() -> None:
    rng = np.random.default_rng(1)
    w, b, x = (rng.standard_normal((3, 32)).astype(np.float32) for _ in range(3))
    layer = Dense(*dev(w, b))
    got = layer.forward(cuda().to_device(x))
    # On a GPU, NVVM contracts x * w + b into one fused multiply-add (numba-cuda's default): last-bit differences.
    np.testing.assert_allclose(got.copy_to_host(), np.maximum(x * w + b, 0.0), rtol=1e-5, atol=1e-6)
    entry = Dense.forward.entries[-1]
    assert any("self.w: device array" in g for g in entry.guard_texts)
    layer.w = cuda().to_device(2 * w)  # another device array of the same shape: same entry, new data
    np.testing.assert_allclose(layer.forward(cuda().to_device(x)).copy_to_host(), np.maximum(2 * x * w + b, 0.0),
                               rtol=1e-5, atol=1e-6)
    assert Dense.forward.cache_info().entries == 1


# ---- training loops: parameters stay resident -------------------------------------------------------------------
def test_adam_loop_updates_device_parameters_in_place_without_transfers(monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = make_inputs("W6", scale=5e-5)
    want = [a.copy() for a in inputs]
    params = dev(*inputs)
    before = [pointer(p) for p in params]
    step = jitgraph.compile(w6_adam, backend="cuda", fullgraph=True)
    step(*params)  # compile
    w6_adam(*want)
    with count_transfers(monkeypatch) as counts:
        for _ in range(4):
            assert step(*params) is None
            w6_adam(*want)
    assert counts == {}, f"host/device copies during the training loop: {dict(counts)}"
    assert [pointer(p) for p in params] == before
    for p, w in zip(params, want):
        np.testing.assert_allclose(p.copy_to_host(), w, rtol=1e-5, atol=1e-7)
    assert step.cache_info().hits == 4
    (compiled,) = [e.compiled for e in step.entries]
    assert "written in place into argument 0" in compiled.explain()
    with count_transfers(monkeypatch) as counts:  # the counter sees the host path's copies
        step(*[a.copy() for a in inputs])
    assert counts["h2d"] >= 4 and counts["d2h"] >= 3


def test_mlp_sgd_loop_keeps_weights_resident(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y, *weights = make_inputs("W5", scale=2e-4)
    want = [w.copy() for w in weights]
    dx, dy, *dw = dev(x, y, *weights)
    before = [pointer(w) for w in dw]
    step = jitgraph.compile(w5_mlp_step, backend="cuda", fullgraph=True)
    losses = [step(dx, dy, *dw)]
    want_losses = [w5_mlp_step(x, y, *want)]
    with count_transfers(monkeypatch) as counts:
        for _ in range(2):
            losses.append(step(dx, dy, *dw))
            want_losses.append(w5_mlp_step(x, y, *want))
    assert counts == {}, f"host/device copies during the training loop: {dict(counts)}"
    assert [pointer(w) for w in dw] == before
    for got, w in zip(dw, want):
        np.testing.assert_allclose(got.copy_to_host(), w, rtol=1e-3, atol=1e-5)
    assert all(loss.shape == () for loss in losses)
    np.testing.assert_allclose([host(v) for v in losses], want_losses, rtol=1e-4)


# ---- aliasing ------------------------------------------------------------------------------------------------------
def test_the_same_device_array_twice_and_as_its_own_gradient() -> None:
    def sgd(p, g):
        p -= 0.5 * g
        return p * g

    p = np.linspace(-1, 1, 50, dtype=np.float32)
    want_p = p.copy()
    want = sgd(want_p, want_p)
    (dp,) = dev(p)
    fn = jitgraph.compile(sgd, backend="cuda")
    got = fn(dp, dp)
    np.testing.assert_allclose(got.copy_to_host(), want, rtol=1e-6)
    np.testing.assert_allclose(dp.copy_to_host(), want_p, rtol=1e-6)
    assert "p is g" in fn.entries[0].guard_texts
    dq, dg = dev(p, p)  # distinct arrays: another entry, no aliasing
    fn(dq, dg)
    assert fn.cache_info().entries == 2 and "no two array arguments share memory" in fn.entries[1].guard_texts


def test_views_of_one_device_array_disjoint_compile_overlapping_raise() -> None:
    def axpy(x, y):
        y += 2.0 * x

    data = np.arange(16, dtype=np.float32)
    want = data.copy()
    axpy(want[:8], want[8:])
    (d,) = dev(data)
    fn = jitgraph.compile(axpy, backend="cuda")
    fn(d[:8], d[8:])
    np.testing.assert_allclose(d.copy_to_host(), want)
    assert "no two array arguments share memory" in fn.entries[0].guard_texts
    with pytest.raises(GraphBreakError, match="overlap") as info:
        fn(d[:8], d[4:12])
    assert "do not overlap" in info.value.hint
    np.testing.assert_allclose(d.copy_to_host(), want)  # nothing was written


# ---- errors instead of eager fallbacks ---------------------------------------------------------------------------
def test_device_arrays_with_a_host_backend_raise_a_clear_error() -> None:
    (dx,) = dev(np.ones(8, np.float32))
    for backend in (None, "eager"):
        fn = jitgraph.compile(lambda x: x + 1, backend=backend)
        with pytest.raises(BackendError, match="backend='cuda'") as info:
            fn(dx)
        assert "x" in info.value.message and "device" in info.value.message


def branchy(x):
    return x + np.unique(x).shape[0]  # a size that depends on the data: a graph break (int(x.sum()) now compiles)


def test_graph_break_with_device_arrays_raises_at_the_users_line() -> None:
    (dx,) = dev(np.ones(8, np.float32))
    with pytest.raises(GraphBreakError, match="device arrays") as info:
        jitgraph.compile(branchy, backend="cuda")(dx)
    assert info.value.filename == __file__ and info.value.lineno == branchy.__code__.co_firstlineno + 1


def test_numpy_errors_surface_as_numpy_would_raise_them() -> None:
    def add(a, b):
        return a + b

    da, db = dev(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="broadcast"):
        jitgraph.compile(add, backend="cuda")(da, db)


def test_recompile_limit_with_device_arrays_raises() -> None:
    fn = jitgraph.compile(lambda x: x * 2, backend="cuda", cache_limit=1)
    fn(*dev(np.ones(4, np.float32)))
    with pytest.raises(GraphBreakError, match="recompile limit"):
        fn(*dev(np.ones(5, np.float32)))


def test_backend_errors_are_raised_not_run_eagerly(monkeypatch: pytest.MonkeyPatch) -> None:
    from jitgraph.backends.cuda import runtime

    def no_gpu() -> None:
        raise BackendError("backend='cuda': no CUDA GPU is available", hint="use backend='cpu'")

    monkeypatch.setattr(runtime, "require_cuda", no_gpu)
    fn = jitgraph.compile(lambda x: x * 2, backend="cuda")
    with pytest.raises(BackendError, match="no CUDA GPU"):
        fn(np.ones(4))
    assert fn.cache_info().fallbacks == 0


# ---- explain -----------------------------------------------------------------------------------------------------
def test_explain_shows_kernels_and_host_fallbacks() -> None:
    a, b, c = make_inputs("W1", scale=3e-5)
    result = jitgraph.explain(w1_fma_tanh, backend="cuda")(*dev(a, b, c))
    text = str(result)
    assert "CUDA backend on" in text and "kernel fused_" in text and "a.device == 'cuda'" in text
    np.testing.assert_allclose(result.output.copy_to_host(), w1_fma_tanh(a, b, c), rtol=1e-5, atol=1e-6)
