"""The cuBLAS GEMM path (cublas.py) under the simulator, with a NumPy stand-in for the library.

The simulator has no cuBLAS, so these tests install a provider that computes the same product on the host. What
they check is everything around the library call: which nodes are folded into it (alpha, bias, beta = 1), the
kernels that run after it, in-place writes, the first-call self-check that catches a wrong library result, the
fallback when the library raises, and what ``explain`` says. The real nvmath-python call runs only on a GPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pytest
from cuda_util import assert_matches_eager, build, compile_cuda, host, rand

from jitgraph.backends.cuda import cublas, runtime

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


class HostGemm:
    """alpha * a @ b (+ bias | + c) with NumPy; ``wrong`` adds 1 to every element, ``raises`` fails."""

    name = "NumPy stand-in"

    def __init__(self, wrong: bool = False, raises: bool = False) -> None:
        self.wrong, self.raises, self.calls = wrong, raises, 0

    def gemm(self, spec: cublas.GemmSpec, a: Any, b: Any, bias: Any, c: Any) -> Any:
        self.calls += 1
        if self.raises:
            raise RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED")
        dtype = spec.head.tensor_type.dtype
        r = (spec.alpha * (runtime.to_host(a) @ runtime.to_host(b))).astype(dtype)
        if bias is not None:
            r = r + runtime.to_host(bias).reshape(-1)
        if c is not None:
            r = r + runtime.to_host(c)
        return runtime.to_device(np.asarray(r + (1.0 if self.wrong else 0.0), dtype))


@pytest.fixture
def provider() -> Iterator[HostGemm]:
    fake = HostGemm()
    cublas.OVERRIDE.append(fake)
    yield fake
    cublas.OVERRIDE.remove(fake)


def _relu_linear(b, x, w, bias):
    return b.op("maximum", b.op("add", b.op("matmul", x, w), bias), b.const(0.0))


LINEAR = [((9, 12), "float32"), ((12, 7), "float32"), ((7,), "float32")]


def _linear_args() -> list[np.ndarray]:
    return [rand((9, 12)), rand((12, 7), seed=1), rand((7,), seed=2)]


def test_bias_folds_into_the_call_and_relu_runs_after(provider: HostGemm) -> None:
    g = build(LINEAR, _relu_linear)
    c = assert_matches_eager(g, _linear_args(), device=True, rtol=1e-5, atol=1e-5)
    (plan,) = c.plans.values()
    assert plan.gemm is not None and plan.gemm.active and plan.gemm.spec.bias is not None
    assert [launch.source.family for launch in plan.gemm_launches(frozenset())] == ["cublas", "elementwise"]
    assert_matches_eager(g, _linear_args(), c, device=True, rtol=1e-5, atol=1e-5)  # second call: checked, not re-run
    assert provider.calls == 2
    text = c.explain()
    assert "through NumPy stand-in (self-checked)" in text and "library call" in text


def test_in_place_update_is_beta_one_with_a_transposed_operand(provider: HostGemm) -> None:
    def fn(b, h, d, w):
        update = b.op("subtract", w, b.op("multiply", b.const(0.01), b.op("matmul", b.op("transpose", h, axes=(1, 0)), d)))
        return {"outputs": [], "mutations": [(2, update)]}

    g = build([((6, 8), "float32"), ((6, 5), "float32"), ((8, 5), "float32")], fn)
    c = compile_cuda(g)
    for step in range(2):
        assert_matches_eager(g, [rand((6, 8), seed=step), rand((6, 5), seed=9), rand((8, 5), seed=3)], c,
                             device=True, rtol=1e-5, atol=1e-6)
    (plan,) = c.plans.values()
    spec = plan.gemm.spec
    assert plan.gemm.active and spec.c is not None and spec.alpha == pytest.approx(-0.01)
    assert [launch.source.family for launch in plan.gemm_launches(frozenset())] == ["cublas"]


def test_product_feeding_a_softmax(provider: HostGemm) -> None:
    def fn(b, x, w):
        z = b.op("matmul", x, w)
        e = b.op("exp", b.op("subtract", z, b.op("max", z, axis=(1,), keepdims=True)))
        return b.op("divide", e, b.op("sum", e, axis=(1,), keepdims=True))

    g = build([((7, 10), "float64"), ((10, 11), "float64")], fn)
    c = assert_matches_eager(g, [rand((7, 10), "float64"), rand((10, 11), "float64", seed=1)], device=True, rtol=1e-9)
    (plan,) = c.plans.values()
    assert plan.gemm.active and plan.gemm.checked


def test_a_wrong_library_result_is_caught_on_the_first_call() -> None:
    fake = HostGemm(wrong=True)
    cublas.OVERRIDE.append(fake)
    try:
        g = build(LINEAR, _relu_linear)
        c = assert_matches_eager(g, _linear_args(), device=True, rtol=1e-5, atol=1e-5)
    finally:
        cublas.OVERRIDE.remove(fake)
    (plan,) = c.plans.values()
    assert not plan.gemm.active and "disagreed" in plan.gemm.reason
    assert_matches_eager(g, _linear_args(), c, device=True, rtol=1e-5, atol=1e-5)
    assert fake.calls == 1 and "hand-written tiled kernel because" in c.explain()


def test_a_library_error_falls_back_with_the_reason() -> None:
    fake = HostGemm(raises=True)
    cublas.OVERRIDE.append(fake)
    try:
        g = build(LINEAR, _relu_linear)
        c = assert_matches_eager(g, _linear_args(), device=True, rtol=1e-5, atol=1e-5)
    finally:
        cublas.OVERRIDE.remove(fake)
    (plan,) = c.plans.values()
    assert "CUBLAS_STATUS_NOT_SUPPORTED" in plan.gemm.reason and not plan.gemm.active


def test_what_match_folds() -> None:
    def spec_of(fn, shapes):
        g = build(shapes, fn)
        c = compile_cuda(g)
        (plan,) = c.plans.values()
        return cublas.match(plan.body, plan.head)

    # The product is also an output: nothing folds.
    s = spec_of(lambda b, x, w: (b.op("matmul", x, w), b.op("add", b.op("matmul", x, w), b.const(1.0))),
                [((4, 5), "float32"), ((5, 3), "float32")])
    assert s is not None and s.node is s.head
    # A scale after the bias is not alpha: only the bias folds.
    s = spec_of(lambda b, x, w, c: b.op("multiply", b.op("add", b.op("matmul", x, w), c), b.const(2.0)),
                [((4, 5), "float32"), ((5, 3), "float32"), ((3,), "float32")])
    assert s.bias is not None and s.alpha == 1.0 and s.node.op == "add"
    # A full-shape addend is C with beta = 1; operands of another dtype than the result are not cuBLAS's.
    s = spec_of(lambda b, x, w, c: b.op("add", b.op("matmul", x, w), c),
                [((4, 5), "float32"), ((5, 3), "float32"), ((4, 3), "float32")])
    assert s.c is not None and s.bias is None
    assert spec_of(lambda b, x, w: b.op("exp", b.op("matmul", x, w)), [((4, 5), "float32"), ((5, 3), "float64")]) \
        is None


def test_the_simulator_and_the_switch_keep_the_tiled_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    g = build(LINEAR, _relu_linear)
    c = compile_cuda(g)
    assert "the CUDA simulator has no cuBLAS" in c.explain()
    monkeypatch.setenv("JITGRAPH_CUDA_CUBLAS", "0")
    c = compile_cuda(g)
    assert "JITGRAPH_CUDA_CUBLAS=0" in c.explain()


class _FakeCupyArray:
    """What NvmathProvider uses of a CuPy array: shape, strides, dtype, .T, reshape, data.ptr."""

    def __init__(self, array: np.ndarray, ptr: int) -> None:
        self.array, self.shape, self.strides, self.dtype = array, array.shape, array.strides, array.dtype
        self.data = type("Ptr", (), {"ptr": ptr})()

    @property
    def T(self) -> _FakeCupyArray:
        return _FakeCupyArray(self.array.T, self.data.ptr)

    def reshape(self, *shape: int) -> _FakeCupyArray:
        return _FakeCupyArray(self.array.reshape(*shape), self.data.ptr)


class _FakeMatmul:
    """nvmath.linalg.advanced.Matmul as documented: alpha * a @ b + beta * c, then the epilog; BIAS adds a rank-1
    bias of length M (the result's rows). Records the calls NvmathProvider makes."""

    log: ClassVar[list[str]] = []

    def __init__(self, a, b, c=None, *, alpha=None, beta=None, options=None, stream=None) -> None:
        assert c is None or beta is not None, "nvmath needs beta with c"
        self.ops, self.alpha, self.beta, self.bias = {"a": a, "b": b, "c": c}, alpha, beta, None
        self.log.append("init")

    def plan(self, *, epilog=None, epilog_inputs=None, stream=None) -> None:
        if epilog is not None:
            assert epilog == "BIAS" and epilog_inputs["bias"].array.ndim == 1
            self.bias = epilog_inputs["bias"]
        self.log.append("plan")

    def reset_operands(self, a=None, b=None, c=None, *, epilog_inputs=None, stream=None) -> None:
        self.ops.update({k: v for k, v in (("a", a), ("b", b), ("c", c)) if v is not None})
        if epilog_inputs is not None:
            self.bias = epilog_inputs["bias"]
        self.log.append("reset")

    def execute(self, *, stream=None):
        a, b, c = (self.ops[k].array if self.ops[k] is not None else None for k in "abc")
        r = (self.alpha if self.alpha is not None else 1.0) * (a @ b)
        if c is not None:
            r = r + self.beta * c
        if self.bias is not None:
            assert self.bias.array.shape == (r.shape[0],), "the BIAS epilog's bias runs along the result's rows"
            r = r + self.bias.array[:, None]
        self.log.append("execute")
        return cuda_module().to_device(np.asfortranarray(r.astype(a.dtype)))


def cuda_module() -> Any:
    from numba import cuda

    return cuda


def test_the_nvmath_provider_calls_the_documented_api() -> None:
    """NvmathProvider against a stand-in for nvmath and CuPy: the bias transpose trick, one plan per signature,
    operands handed over only when their addresses change."""
    import types

    arrays: dict[int, int] = {}

    def asarray(x: Any) -> _FakeCupyArray:
        data = runtime.to_host(x)
        return _FakeCupyArray(data, arrays.setdefault(id(x), len(arrays) + 1))

    advanced = types.SimpleNamespace(Matmul=_FakeMatmul, MatmulEpilog=types.SimpleNamespace(BIAS="BIAS"))
    nvmath = types.SimpleNamespace(linalg=types.SimpleNamespace(advanced=advanced))
    prov = cublas.NvmathProvider(nvmath, types.SimpleNamespace(asarray=asarray))
    _FakeMatmul.log.clear()
    cublas.OVERRIDE.append(prov)
    try:
        g = build(LINEAR, _relu_linear)
        c = compile_cuda(g)
        x, w, bias = (cuda_module().to_device(a) for a in _linear_args())
        for _ in range(2):
            assert_matches_eager(g, [runtime.to_host(v) for v in (x, w, bias)], c, device=True, rtol=1e-5, atol=1e-5)
        got = c([x, w, bias])[0]
        got2 = c([x, w, bias])[0]
    finally:
        cublas.OVERRIDE.remove(prov)
    want = np.maximum(runtime.to_host(x) @ runtime.to_host(w) + runtime.to_host(bias), 0)
    np.testing.assert_allclose(host(got), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(got2), want, rtol=1e-5, atol=1e-5)
    assert c.plans[next(iter(c.plans))].gemm.active
    assert _FakeMatmul.log[:3] == ["init", "plan", "execute"] and _FakeMatmul.log.count("plan") == 1
    assert "reset" in _FakeMatmul.log  # new device arrays in the eager-comparison calls
