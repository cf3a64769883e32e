"""The CUDA device functions are the shared scalar helpers (``jitgraph.backends.scalar_semantics``), compiled for
the device: same code, and in a kernel the same results as NumPy on edge values."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from jitgraph.backends import scalar_semantics as sem

KERNEL = """
def helpers_kernel(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        x, y = a[i], b[i]
{body}
"""


def run_helpers(calls: list[str], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``out[k, i] = calls[k]`` evaluated on ``x = a[i], y = b[i]`` in a kernel that sees the device functions."""
    from jitgraph.backends.cuda import device_fns
    from jitgraph.backends.cuda.runtime import cuda

    namespace = device_fns.namespace()
    body = "\n".join(f"        out[{k}, i] = {call}" for k, call in enumerate(calls))
    exec(KERNEL.format(body=body), namespace)  # noqa: S102 - test source
    kernel = cuda().jit(namespace["helpers_kernel"])
    out = np.zeros((len(calls), a.size), a.dtype)
    with np.errstate(all="ignore"):  # the simulator runs the helpers on NumPy scalars
        kernel[1, a.size](a, b, out)
    return out


def pairs(values: list[float], dtype: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = zip(*itertools.product(values, values))
    return np.array(x, dtype), np.array(y, dtype)


def test_device_functions_are_compiled_from_the_shared_code() -> None:
    from jitgraph.backends.cuda import device_fns

    compiled = device_fns.device_functions()
    assert set(compiled) == set(sem.HELPERS)
    for name, fn in sem.HELPERS.items():
        device_fn: Any = compiled[name]
        source = getattr(device_fn, "py_func", None) or device_fn.fn  # a dispatcher, or the simulator's kernel
        assert source.__code__ is fn.__code__


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_helpers_match_numpy(dtype: str) -> None:
    big = float(np.finfo(dtype).max)
    a, b = pairs([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -7.0, 2.5, big, 1e-10], dtype)
    got = run_helpers(["jg_floordiv_float(x, y)", "jg_mod_float(x, y)", "jg_fmax(x, y)", "jg_minimum(x, y)",
                       "jg_sign(x)", "jg_logaddexp(x, y)"], a, b)
    with np.errstate(all="ignore"):
        want = np.array([np.floor_divide(a, b), np.remainder(a, b), np.fmax(a, b), np.minimum(a, b), np.sign(a),
                         np.logaddexp(a, b)])
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    exact = [0, 1, 4]  # floor division, remainder and sign are exact, down to the sign of zeros (not of NaNs)
    numbers = ~np.isnan(want[exact])
    assert np.array_equal(np.signbit(got[exact])[numbers], np.signbit(want[exact])[numbers])


@pytest.mark.parametrize("dtype", ["int32", "uint8"])
def test_integer_helpers_match_numpy(dtype: str) -> None:
    info = np.iinfo(dtype)
    a, b = pairs(sorted({info.min, info.max, 0, 1, 7, info.min + 1} | ({-1, -7} if info.min < 0 else set())), dtype)
    got = run_helpers(["jg_floordiv_int(x, y)", "jg_mod_int(x, y)", "jg_fmod_int(x, y)", "jg_maximum(x, y)"], a, b)
    with np.errstate(all="ignore"):
        want = np.array([np.floor_divide(a, b), np.remainder(a, b), np.fmod(a, b), np.maximum(a, b)])
    np.testing.assert_array_equal(got, want)
