"""Data movement on the CUDA backend: device arguments in place, host round trips, mutations, views, fallbacks."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_util import assert_matches_eager, build, compile_cuda, host, rand

from jitgraph.ir.ops.indexing import Operand  # noqa: F401 - spec entries below are plain slices

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _adam(b, p, g, m, v):
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
    m2 = b.op("add", b.op("multiply", b.const(b1), m), b.op("multiply", b.const(1 - b1), g))
    v2 = b.op("add", b.op("multiply", b.const(b2), v), b.op("multiply", b.const(1 - b2), b.op("multiply", g, g)))
    upd = b.op("divide", b.op("multiply", b.const(lr), m2), b.op("add", b.op("sqrt", v2), b.const(eps)))
    return {"mutations": [(0, b.op("subtract", p, upd)), (2, m2), (3, v2)]}


ADAM = build([((300,), "float32")] * 4, _adam)


def _adam_args() -> list[np.ndarray]:
    return [rand((300,), seed=1), rand((300,), seed=2), rand((300,), seed=3), rand((300,), seed=4, low=0, high=1)]


def test_adam_device_arrays_updated_in_place_without_copies() -> None:
    from numba import cuda

    compiled = compile_cuda(ADAM)
    assert sorted(compiled.direct.values()) == [0, 2, 3]  # every update is written by the kernel itself
    args = _adam_args()
    want = [a.copy() for a in args]
    dev = [cuda.to_device(a) for a in args]
    for _ in range(3):  # a training loop: parameters stay resident
        from jitgraph.backends import eager

        eager.run(ADAM, want)
        assert compiled(dev) == []
    for k in range(4):
        np.testing.assert_allclose(dev[k].copy_to_host(), want[k], rtol=1e-5, atol=1e-7)
    assert "written in place into argument 0" in compiled.explain()


def test_adam_host_arrays_copied_back() -> None:
    assert_matches_eager(ADAM, _adam_args(), rtol=1e-5, atol=1e-7)


def test_device_outputs_are_device_arrays_and_mixed_arguments_work() -> None:
    from numba import cuda

    g = build([((5, 60), "float32"), ((60,), "float32")], lambda b, x, w: (
        b.op("multiply", x, w), b.op("sum", x, axis=(0, 1), keepdims=False)))
    compiled = compile_cuda(g)
    x, w = rand((5, 60)), rand((60,), seed=1)
    prod, total = compiled([cuda.to_device(x), w])
    assert cuda.is_cuda_array(prod) if hasattr(cuda, "is_cuda_array") else hasattr(prod, "copy_to_host")
    assert hasattr(total, "copy_to_host") and total.shape == ()
    np.testing.assert_allclose(host(prod), x * w, rtol=1e-6)
    np.testing.assert_allclose(host(total), x.sum(), rtol=1e-5)
    host_prod, host_total = compiled([x, w])
    assert isinstance(host_prod, np.ndarray) and isinstance(host_total, np.float32)


def test_transposed_and_sliced_device_views_are_read_through_strides() -> None:
    def fn(b, x, y):
        xt = b.op("transpose", x, axes=(1, 0))
        ys = b.op("getitem", y, spec=(slice(1, None), slice(None, None, 2)))
        return b.op("add", b.op("multiply", xt, b.const(2.0)), ys)

    g = build([((30, 20), "float32"), ((21, 60), "float32")], fn)
    compiled = assert_matches_eager(g, [rand((30, 20)), rand((21, 60), seed=1)], device=True)
    assert compiled.host_nodes == []


def test_mutation_reading_other_elements_is_copied_not_raced() -> None:
    """x <- x[::-1] + 1 reads other elements of x: the kernel must not write x while it is being read."""
    def fn(b, x):
        rev = b.op("getitem", x, spec=(slice(None, None, -1),))
        return {"outputs": [], "mutations": [(0, b.op("add", rev, b.const(1.0)))]}

    g = build([((200,), "float32")], fn)
    compiled = compile_cuda(g)
    assert compiled.direct == {}
    assert_matches_eager(g, [rand((200,))], compiled, device=True)
    assert_matches_eager(g, [rand((200,))], compiled, device=False)


def test_swapping_mutations() -> None:
    def fn(b, x, y):
        return {"outputs": [], "mutations": [(0, b.op("multiply", y, b.const(2.0))),
                                             (1, b.op("add", x, b.const(1.0)))]}

    g = build([((64,), "float32"), ((64,), "float32")], fn)
    assert_matches_eager(g, [rand((64,)), rand((64,), seed=1)], device=True)
    assert_matches_eager(g, [rand((64,)), rand((64,), seed=1)], device=False)


def test_mutation_from_a_reduction_kernel_uses_a_device_copy() -> None:
    """x <- x / x.sum(1): every element of a row is read before any is written, so the value goes through a copy."""
    def fn(b, x):
        y = b.op("divide", x, b.op("sum", x, axis=(1,), keepdims=True))
        return {"outputs": [b.op("sum", x, axis=(0, 1), keepdims=False)], "mutations": [(0, y)]}

    g = build([((4, 50), "float32")], fn)
    compiled = compile_cuda(g)
    assert compiled.direct == {}
    assert_matches_eager(g, [rand((4, 50), low=1, high=2)], compiled, device=True)
    assert_matches_eager(g, [rand((4, 50), low=1, high=2)], compiled, device=False)


def test_group_without_cuda_emitter_runs_on_host_and_says_why() -> None:
    def fn(b, x):
        return b.op("add", b.op("astype", b.op("multiply", x, b.const(3.0)), dtype=np.dtype("int32")), b.const(1))

    g = build([((100,), "float32")], fn)
    compiled = assert_matches_eager(g, [rand((100,))], device=True)
    (plan,) = compiled.plans.values()
    assert plan.host_reason is not None and "astype" in plan.host_reason
    assert "host (NumPy) because astype" in compiled.explain()


def test_unfused_op_runs_on_host_between_kernels() -> None:
    def fn(b, x):
        idx = b.op("argmax", b.op("exp", x), axis=1, keepdims=False)
        return b.op("multiply", idx, b.const(2)), b.op("sin", x)

    g = build([((6, 40), "float32")], fn)
    compiled = assert_matches_eager(g, [rand((6, 40))], device=True)
    assert any("argmax" in name for name, _ in compiled.host_nodes)


def test_zero_d_device_value_feeds_a_later_kernel() -> None:
    def fn(b, x, y):
        s = b.op("sum", b.op("multiply", x, x), axis=(0,), keepdims=False)
        return b.op("divide", y, b.op("add", s, b.const(1.0)))

    g = build([((300,), "float32"), ((7, 9), "float32")], fn)
    compiled = assert_matches_eager(g, [rand((300,)), rand((7, 9), seed=1)], device=True, rtol=1e-5)
    assert any(frozenset({1}) in p.variants for p in compiled.plans.values())


def test_scalar_arguments_and_weak_outputs() -> None:
    from jitgraph.ir import GraphBuilder, TensorType

    b = GraphBuilder()
    x = b.input(TensorType((80,), np.dtype("float32")), "x")
    lr = b.input(TensorType((), np.dtype("float64"), weak=True), "lr")
    g = b.build([b.op("subtract", x, b.op("multiply", lr, b.op("tanh", x)))])
    compiled = compile_cuda(g)
    for value in (0.1, 2.5):
        assert_matches_eager(g, [rand((80,)), value], compiled, device=True)


def test_zero_size_arrays_run_on_host() -> None:
    g = build([((0, 5), "float32")], lambda b, x: (b.op("exp", x), b.op("sum", x, axis=(1,), keepdims=False)))
    assert_matches_eager(g, [np.zeros((0, 5), np.float32)])


def test_setitem_on_device_partial_and_full() -> None:
    def fn(b, x, v):
        part = b.op("setitem", x, b.op("exp", v), spec=(slice(1, 3), Ellipsis))
        one = b.op("setitem", x, b.const(5.0), spec=(0, 2))
        return part, one, b.op("add", part, one)

    g = build([((4, 6), "float32"), ((2, 6), "float32")], fn)
    compiled = assert_matches_eager(g, [rand((4, 6)), rand((2, 6), seed=1)], device=True)
    assert compiled.host_nodes == []


def test_full_setitem_mutation_is_written_in_place() -> None:
    """m[...] = beta * m + g (how W6 writes Adam) becomes a direct write into m."""
    def fn(b, m, g):
        new = b.op("add", b.op("multiply", b.const(0.9), m), g)
        m2 = b.op("setitem", m, new, spec=(Ellipsis,))
        return {"outputs": [b.op("sum", b.op("multiply", m2, m2), axis=(0,), keepdims=False)], "mutations": [(0, m2)]}

    g = build([((500,), "float32"), ((500,), "float32")], fn)
    compiled = compile_cuda(g)
    assert list(compiled.direct.values()) == [0]
    assert_matches_eager(g, [rand((500,)), rand((500,), seed=1)], compiled, device=True, rtol=1e-5)
    assert_matches_eager(g, [rand((500,)), rand((500,), seed=1)], compiled, device=False, rtol=1e-5)


def test_outputs_that_alias_a_mutated_argument_keep_their_old_values() -> None:
    """Returning x (or x.T) and mutating x: the outputs show x before the write, as in eager NumPy."""
    def fn(b, x, y):
        return {"outputs": [x, b.op("transpose", x, axes=(1, 0)), b.op("add", x, y)],
                "mutations": [(0, b.op("multiply", y, b.const(2.0)))]}

    g = build([((3, 5), "float32"), ((3, 5), "float32")], fn)
    assert_matches_eager(g, [rand((3, 5)), rand((3, 5), seed=1)], device=True)
    assert_matches_eager(g, [rand((3, 5)), rand((3, 5), seed=1)], device=False)


def test_device_array_facts_for_the_tracer() -> None:
    from numba import cuda

    from jitgraph.backends.cuda import runtime
    from jitgraph.device_arrays import device_array_facts, device_type_of, is_device_array

    x = np.ones((4, 6), np.float32)
    d = cuda.to_device(x)
    assert is_device_array(d) and not is_device_array(x)
    assert device_array_facts(d) == ((4, 6), np.dtype(np.float32), x.strides)
    # runtime.transpose is a view (Numba's own .T copies into a new C-ordered array on a real GPU).
    assert str(device_type_of(d)) == "f32[4,6]" and str(device_type_of(runtime.transpose(d, None))) == "f32[6,4]{F}"
    assert device_array_facts(x) is None


def test_row_kernel_writes_its_mutation_in_place() -> None:
    """x <- x - x.mean(1): the row's mean sweep finishes before its write sweep, so x is written in place."""
    def fn(b, x):
        return {"outputs": [], "mutations": [(0, b.op("subtract", x, b.op("mean", x, axis=(1,), keepdims=True)))]}

    g = build([((9, 130), "float32")], fn)
    compiled = compile_cuda(g)
    assert list(compiled.direct.values()) == [0]
    assert_matches_eager(g, [rand((9, 130))], compiled, device=True, rtol=1e-5, atol=1e-6)
    assert_matches_eager(g, [rand((9, 130))], compiled, device=False, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("spec", "ndim", "want"), [
    ((slice(1, 3), Ellipsis), 3, (slice(1, 3), slice(None), slice(None))),
    ((Ellipsis, 0), 2, (slice(None), 0)),
    ((0, Ellipsis, None, 1), 3, (0, slice(None), None, 1)),
    ((Ellipsis,), 0, ()),
    ((0, 2), 2, (0, 2)),
])
def test_ellipsis_is_written_out_for_device_indexing(spec, ndim, want) -> None:
    from jitgraph.backends.cuda import runtime

    assert runtime.expand_ellipsis(spec, ndim) == want
    shape = (2, 3, 4)[:ndim]
    x = np.arange(float(np.prod(shape))).reshape(shape)
    np.testing.assert_array_equal(x[want], x[spec])
