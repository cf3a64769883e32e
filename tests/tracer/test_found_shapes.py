"""Regressions found by fuzzing the shape and creation lowerings: reshape/ravel/flatten must view exactly where
NumPy views (and copy where it copies, so a later write to the base is not seen), honour ``order``, and creation
functions must give NumPy's dtype and raise NumPy's errors for non-integer sizes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jitgraph
from tests.tracer.helpers import assert_same, run_both

X = np.arange(12.0).reshape(3, 4)


# ---- bug 1: a reshape NumPy must copy was traced as a view ---------------------------------------------------
# Each view is taken, then the *base* is mutated: a copy must keep the old values, a view must show the new ones.
RESHAPES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "transpose_reshape": lambda x: x.T.reshape(-1),
    "transpose_ravel": lambda x: x.T.ravel(),
    "strided_reversed_reshape": lambda x: x[:, ::2][::-1].reshape(-1),
    "strided_reversed_ravel": lambda x: x[:, ::2][::-1].ravel(),
    "transpose_reshape_2d": lambda x: x.T.reshape(2, 6),
    "row_step_ravel": lambda x: x[::2].ravel(),  # a copy: ravel copies any non-C-contiguous array
    "row_step_merge": lambda x: x[::2].reshape(-1, 2),  # merges the stepped rows with half a row: a copy
    # views, which must stay views:
    "contiguous_reshape": lambda x: x.reshape(-1),
    "row_step_split": lambda x: x[::2].reshape(2, 2, 2),
    "strided_add_unit_axis": lambda x: x[::-1, 1:].reshape(3, 3, 1),
    "transpose_ravel_f": lambda x: x.T.ravel("F"),
    "strided_squeeze": lambda x: np.squeeze(x[:, None, ::2]),
}


def reshape_then_mutate_base(view: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], Any]:
    def fn(x: np.ndarray) -> Any:
        y = view(x)
        x += 1
        return y

    return fn


@pytest.mark.parametrize("name", list(RESHAPES))
def test_reshape_copies_where_numpy_copies(name: str) -> None:
    """The view-or-copy decision shows only after the base changes: the returned array must equal eager's then."""
    run_both(reshape_then_mutate_base(RESHAPES[name]), X)


@pytest.mark.parametrize("name", ["transpose_reshape", "transpose_ravel", "contiguous_reshape", "strided_squeeze"])
def test_reshape_of_strided_argument_copies_where_numpy_copies(name: str) -> None:
    """A non-contiguous *argument* (its strides are in the dispatch key): the decision uses its real strides.
    ``run_both`` deep-copies arguments into contiguous arrays, so the strided views are made here by hand."""
    fn = reshape_then_mutate_base(RESHAPES[name])
    eager_base, comp_base = X.copy(), X.copy()
    compiled = jitgraph.compile(fn, cache=False, passes=("fuse", "plan_memory"))
    expected = fn(eager_base[::-1, 1:])
    actual = compiled(comp_base[::-1, 1:])
    assert_same(expected, actual)
    assert_same(eager_base, comp_base, path="base after the call")
    assert not compiled.break_reasons(), [str(b) for b in compiled.break_reasons()]


def test_write_through_reshape_view_reaches_base() -> None:
    """The other half of view semantics: a reshape that stays a view still writes through to the argument. (The
    write itself may still break: ``TraceContext.write`` refuses writes through any reshape of a non-C layout.)"""

    def fn(x: np.ndarray) -> np.ndarray:
        y = x[::2].reshape(2, 2, 2)
        y[:, 1] = -1.0
        return y

    run_both(fn, X, graphs=None)


def test_write_through_reshape_of_a_computed_f_ordered_array_keeps_numpy_semantics() -> None:
    """``x.T + 1`` is F-ordered in NumPy (ufuncs keep their operands' memory order), so its ``reshape(-1)`` is a
    copy and a write to it leaves ``c`` alone; the IR calls every computed array C-ordered, so the trace wrote
    through to ``c`` (regression). Writes through a reshape of a computed array whose NumPy order is not known to
    be C now run eagerly; ``x + 1`` of a C-ordered argument still compiles."""

    def transposed(x: np.ndarray) -> np.ndarray:
        c = x.T + 1
        c.reshape(-1)[0] = 99.0
        return c

    def plain(x: np.ndarray) -> np.ndarray:
        c = x + 1
        c.reshape(-1)[1] = 7.0
        return c

    x = np.arange(12.0).reshape(3, 4)
    run_both(transposed, x, graphs=None)
    run_both(plain, x)


# ---- bug 2: ravel/flatten ignored ``order`` -------------------------------------------------------------------
ORDER_INPUTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "c": lambda x: x,
    "transposed": lambda x: x.T,
    "reversed_strided": lambda x: x[::-1, ::2],
    "transposed_reversed": lambda x: x.T[::-1],
}


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("name", list(ORDER_INPUTS))
@pytest.mark.parametrize("method", ["ravel", "flatten", "np.ravel"])
def test_ravel_and_flatten_honour_order(method: str, name: str, order: str) -> None:
    """Element order of each order on several layouts ('K' follows memory, 'A' is F only for Fortran arrays), and
    the base mutated afterwards so a view where NumPy copies (or the reverse) shows up too."""
    view = ORDER_INPUTS[name]

    def fn(x: np.ndarray) -> Any:
        v = view(x)
        flat = np.ravel(v, order) if method == "np.ravel" else getattr(v, method)(order)
        x += 1
        return flat

    run_both(fn, X)


def test_ravel_order_f_example() -> None:
    """The fuzzer's example: ``a.ravel('F')`` of a C array was ``[0 1 2 3 4 5]``."""
    x = np.arange(6.0).reshape(2, 3)
    run_both(lambda a: a.ravel("F"), x)
    run_both(lambda a: a.flatten("F"), x)


# ---- bug 3: arange dtype ignored stop and step ---------------------------------------------------------------
ARANGES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "float_stop": lambda x: np.arange(3.0),
    "float_stop_int_start": lambda x: np.arange(1, 2.5),
    "computed_float_stop": lambda x: np.arange(x.shape[0] / 2),
    "float_step": lambda x: np.arange(0, 3, 0.5),
    "float32_stop": lambda x: np.arange(np.float32(4)),
    "int8_stop": lambda x: np.arange(np.int8(4)),
    "explicit_dtype": lambda x: np.arange(4.0, dtype=np.int32),
}


@pytest.mark.parametrize("name", list(ARANGES))
def test_arange_dtype_promotes_every_bound(name: str) -> None:
    """NumPy promotes start, stop and step (with at least intp); ``run_both`` compares dtypes exactly."""
    run_both(ARANGES[name], X)


# ---- bug 4: creation functions accepted float sizes ---------------------------------------------------------
BAD_SIZES: dict[str, Callable[[], Any]] = {
    "eye_float_n": lambda: np.eye(3.0),
    "eye_float_m": lambda: np.eye(3, 2.0),
    "eye_float_k": lambda: np.eye(3, k=1.0),
    "identity_float": lambda: np.identity(3.0),
    "zeros_float": lambda: np.zeros(3.0),
    "ones_float_dim": lambda: np.ones((2, 2.0)),
    "full_float": lambda: np.full(2.0, 1),
    "zeros_unknown_keyword": lambda: np.zeros(3, foo=1),
    "zeros_order_k": lambda: np.zeros(3, order="K"),
}


@pytest.mark.parametrize("name", list(BAD_SIZES))
def test_creation_raises_like_numpy(name: str) -> None:
    """NumPy raises TypeError/ValueError here; the compiled call must raise the same, not build an array."""
    fn = BAD_SIZES[name]
    with pytest.raises((TypeError, ValueError)) as eager:
        fn()
    with pytest.raises(type(eager.value)) as compiled:
        jitgraph.compile(fn, cache=False)()
    assert str(compiled.value) == str(eager.value)


@pytest.mark.parametrize("fn", [lambda: np.eye(np.int64(3), 4, k=True), lambda: np.identity(3, dtype=np.int32),
                                lambda: np.zeros((2, np.int8(3))), lambda: np.ones(3, device="cpu")])
def test_creation_integer_sizes_still_compile(fn: Callable[[], Any]) -> None:
    """The stricter checks accept what NumPy accepts (NumPy integers, a bool ``k``), in one graph."""
    run_both(fn)


def test_order_f_creation_is_laid_out_as_f() -> None:
    """``order='F'`` (and ``*_like`` of a transposed array) lay memory out as NumPy does, so a reshape copies and
    'K' order follows memory, as eagerly."""

    def fn(x: np.ndarray) -> Any:
        z = np.zeros((2, 3), order="F")
        e = np.eye(3, 4, 1, order="F")
        like = np.zeros_like(x.T)
        r, er, lr = z.reshape(-1), e.reshape(-1), like.reshape(-1)
        z += 1
        e += 1
        like += x.T
        return r, er, lr, z.ravel("K"), e.ravel("K"), like.ravel("K")

    run_both(fn, X)
