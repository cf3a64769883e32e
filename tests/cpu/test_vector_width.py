"""JITGRAPH_VECTOR_WIDTH: the setting parses (a misspelt value errors), the IR rewrite puts the attribute on every
function definition it understands, kernels compiled at 256 and 512 bits agree with eager NumPy, and the two
widths never share a disk-cache entry."""

from __future__ import annotations

import llvmlite.binding as llvm
import numba
import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu import cache, vector_width
from jitgraph.backends.cpu.vector_width import VectorWidthError, attribute_width, widen_ir

HAS_AVX512 = bool(llvm.get_host_cpu_features().get("avx512f", False))


@pytest.fixture
def host_target(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The default target (no user NUMBA_CPU_NAME/NUMBA_CPU_FEATURES), whatever the outer environment says."""
    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    monkeypatch.delenv("NUMBA_CPU_FEATURES", raising=False)
    return monkeypatch


def test_explicit_widths(host_target: pytest.MonkeyPatch) -> None:
    host_target.setenv("JITGRAPH_VECTOR_WIDTH", "256")
    assert attribute_width() == 256
    host_target.setenv("JITGRAPH_VECTOR_WIDTH", " 512 ")
    assert attribute_width() == (512 if HAS_AVX512 else None)


def test_auto_follows_the_cpu_and_the_users_target(host_target: pytest.MonkeyPatch) -> None:
    host_target.setenv("JITGRAPH_VECTOR_WIDTH", "auto")
    wide = HAS_AVX512 and llvm.get_host_cpu_name() in vector_width.WIDE_CPUS
    assert attribute_width() == (512 if wide else None)
    host_target.setenv("NUMBA_CPU_NAME", "skylake-avx512")  # the user chose the target: LLVM's choice stands
    assert attribute_width() is None
    host_target.setenv("JITGRAPH_VECTOR_WIDTH", "512")  # ...unless asked explicitly
    host_target.setenv("NUMBA_CPU_FEATURES", "+avx2,+avx512f,+fma")
    assert attribute_width() == 512


def test_misspelt_value_errors(host_target: pytest.MonkeyPatch) -> None:
    host_target.setenv("JITGRAPH_VECTOR_WIDTH", "521")
    with pytest.raises(VectorWidthError, match="auto, 256, 512") as info:
        attribute_width()
    assert isinstance(info.value, jitgraph.JitgraphError) and isinstance(info.value, ValueError)
    host_target.setenv("JITGRAPH_VECTOR_WIDTH", "atuo")
    with pytest.raises(VectorWidthError, match="did you mean 'auto'"):
        attribute_width()


IR = """\
declare void @ext(ptr)

define i32 @f(ptr %a) local_unnamed_addr #0 {
entry:
  ret i32 0
}

define void @g() {
entry:
  ret void
}

define void @h() personality ptr @ext {
entry:
  ret void
}

attributes #0 = { nounwind }
"""


def test_rewrite_adds_one_group_to_each_definition() -> None:
    text, count = widen_ir(IR, 512)
    assert count == 2  # f and g; h's personality is left alone, declarations too
    assert "define i32 @f(ptr %a) local_unnamed_addr #0 #1 {" in text and "define void @g() #1 {" in text
    assert 'attributes #1 = { "prefer-vector-width"="512" }' in text
    module = llvm.parse_assembly(text)
    module.verify()
    assert 'prefer-vector-width' in str(module.get_function("f")) or '"prefer-vector-width"="512"' in str(module)
    assert widen_ir("declare void @ext(ptr)\n", 512) == ("declare void @ext(ptr)\n", 0)


def _scale(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * np.float32(2.5) + np.float32(1.0)


@pytest.mark.skipif(not HAS_AVX512 or not vector_width.SUPPORTED, reason="needs AVX-512F and Numba's hooks")
def test_wide_kernels_use_512_bit_registers_and_plain_njit_does_not_change(host_target: pytest.MonkeyPatch) -> None:
    host_target.setenv("JITGRAPH_VECTOR_WIDTH", "512")
    wide = vector_width.njit(error_model="numpy", nogil=True)(_scale)
    plain = numba.njit(error_model="numpy", nogil=True)(_scale)
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    outs = [np.empty_like(x), np.empty_like(x)]
    wide(x, outs[0])
    plain(x, outs[1])
    np.testing.assert_array_equal(outs[0], outs[1])
    assert "zmm" in wide.inspect_asm(wide.signatures[0])
    if llvm.get_host_cpu_name() in vector_width.WIDE_CPUS:  # LLVM prefers 256 bits there: user code keeps it
        assert "zmm" not in plain.inspect_asm(plain.signatures[0])


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True) - 0.25)  # a kernel text of its own: compiled under this setting
    return e / e.sum(axis=1, keepdims=True)


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(0.79788456 * (x + 0.044715 * x**3) + 0.001))


@pytest.mark.parametrize(("width", "fn"), [("512", _softmax), ("256", _gelu)])
def test_kernels_match_eager_at_each_width(host_target: pytest.MonkeyPatch, width: str, fn) -> None:
    host_target.setenv("JITGRAPH_VECTOR_WIDTH", width)
    x = np.random.default_rng(int(width)).standard_normal((37, 129)).astype(np.float32)
    got = jitgraph.compile(fn, fullgraph=True, cache=False)(x)
    want = fn(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_cache_key_includes_the_width(host_target: pytest.MonkeyPatch) -> None:
    keys = set()
    for width in ("256", "512", "auto"):
        host_target.setenv("JITGRAPH_VECTOR_WIDTH", width)
        keys.add((attribute_width(), cache.kernel_key("source")))
    assert len({w for w, _ in keys}) == len({k for _, k in keys})  # one key per distinct width


def test_a_rewrite_that_fails_keeps_numbas_code(host_target: pytest.MonkeyPatch) -> None:
    host_target.setenv("JITGRAPH_VECTOR_WIDTH", "256")
    host_target.setattr(vector_width, "widen_ir", lambda text, width: ("this is not LLVM IR", 1))

    def twice(x):
        return x * 2.0

    kernel = vector_width.njit(error_model="numpy")(twice)
    assert kernel(np.float64(1.5)) == 3.0
