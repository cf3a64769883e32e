"""Indexing: views versus copies, NumPy's advanced-index shape rules, setitem and scatter_add semantics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from irtest_util import add_at, assert_same, check_op

from jitgraph.backends import eager
from jitgraph.errors import UnsupportedError
from jitgraph.ir import GraphBuilder, Operand, get_op, is_view_node, type_of, verify


def getitem_node(x: np.ndarray, spec: tuple[Any, ...], operands: tuple[Any, ...] = ()) -> tuple[Any, Any]:
    b = GraphBuilder()
    xin = b.input(type_of(x), "x")
    ops = [b.input(type_of(o), f"i{k}") for k, o in enumerate(operands)]
    node = b.op("getitem", xin, *ops, spec=spec)
    (got,) = eager.run(verify(b.build([node])), [x, *operands])
    return node, got


def numpy_index(spec: tuple[Any, ...], operands: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(operands[e.k] if isinstance(e, Operand) else e for e in spec)


def numpy_is_view(x: np.ndarray, result: Any) -> bool:
    """NumPy collapses view chains onto the memory owner, so a view's base is x or x's own base."""
    owner = x if x.base is None else x.base
    return isinstance(result, np.ndarray) and result.base is owner


VIEW_CASES: list[tuple[tuple[Any, ...], tuple[Any, ...]]] = [
    ((1,), ()),
    ((slice(None, None, 2),), ()),
    ((Ellipsis,), ()),
    ((None, 0), ()),
    ((1, 2), ()),  # all dims indexed by integers: NumPy returns a scalar (a copy)
    ((1, 2, 3), ()),
    ((1, 2, 3, Ellipsis), ()),  # ... makes it a 0-d view
    ((Operand(0), 1), (np.int64(1),)),  # runtime integer scalars are basic indices
    ((Operand(0), Operand(1), Operand(2)), (0, 1, 2)),
    ((Operand(0),), (np.array([0, 1]),)),
    ((slice(None), Operand(0)), (np.array([[0], [2]]),)),
    ((Operand(0), slice(1, None)), (np.int32(1),)),
]


@pytest.mark.parametrize("case", range(len(VIEW_CASES)))
def test_getitem_view_flag_matches_numpy(case: int) -> None:
    """Basic indexing is a view (an in-place update lands in the base); advanced indexing and scalars are not."""
    spec, operands = VIEW_CASES[case]
    x = np.arange(24.0).reshape(2, 3, 4)
    node, got = getitem_node(x, spec, operands)
    expected = x[numpy_index(spec, operands)]
    assert_same(got, expected)
    assert is_view_node(node) == numpy_is_view(x, expected), f"{spec}: NumPy view={numpy_is_view(x, expected)}"
    assert get_op("getitem").is_view  # the op may make views; the node-level rule decides


def test_view_flags_of_other_ops() -> None:
    b = GraphBuilder()
    x = b.input(type_of(np.ones((2, 3))), "x")
    assert is_view_node(b.op("transpose", x, axes=(1, 0)))
    assert is_view_node(b.op("broadcast_to", x, shape=(4, 2, 3)))
    assert is_view_node(b.op("reshape", x, shape=(3, 2)))
    assert not is_view_node(b.op("copy", x))
    assert not is_view_node(b.op("add", x, x))
    assert not is_view_node(b.op("setitem", x, x, spec=(Ellipsis,)))


def random_spec(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """A random index for ``shape``: ints, slices with steps, None, one Ellipsis, integer arrays and scalars."""
    ndim = len(shape)
    consumed = int(rng.integers(0, ndim + 1))
    use_ellipsis = consumed < ndim and rng.random() < 0.4
    entries: list[Any] = []
    operands: list[Any] = []
    index_shape_pool = [(), (2,), (1, 3), (3,), (2, 1)]
    for dim in range(consumed):
        size = shape[dim]
        roll = rng.random()
        if roll < 0.25:
            entries.append(int(rng.integers(-size, size)))
        elif roll < 0.45:
            start, stop = (int(v) for v in rng.integers(-size - 1, size + 2, 2))
            entries.append(slice(start, stop, int(rng.choice([1, 2, -1, -3, None]) or 1)))
        elif roll < 0.55:
            entries.append(slice(None))
        else:
            ishape = index_shape_pool[int(rng.integers(len(index_shape_pool)))]
            arr = rng.integers(-size, size, ishape)
            if ishape == ():
                # A runtime integer scalar (Python int or NumPy integer). A 0-d *array* index makes NumPy copy,
                # which the IR cannot tell from a NumPy integer scalar by type; that case is not generated.
                arr = int(arr) if rng.random() < 0.5 else np.int64(arr)
            entries.append(Operand(len(operands)))
            operands.append(arr)
    for _ in range(int(rng.integers(0, 3))):
        entries.insert(int(rng.integers(0, len(entries) + 1)), None)
    if use_ellipsis:
        entries.insert(int(rng.integers(0, len(entries) + 1)), Ellipsis)
    return tuple(entries), tuple(operands)


def test_random_index_shapes_match_numpy() -> None:
    """Adjacent vs non-adjacent advanced indices, ints mixed with arrays, None and Ellipsis: NumPy's shape rules.

    NumPy itself is the oracle: each random index is applied to a real array; index arrays that cannot broadcast
    must be rejected with NumPy's IndexError.
    """
    rng = np.random.default_rng(20240611)
    outcomes = {"ok": 0, "rejected": 0, "runtime-error": 0}
    for _ in range(400):
        shape = tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(1, 5))))
        x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
        spec, operands = random_spec(rng, shape)
        outcome = check_op("getitem", (x, *operands), {"spec": spec},
                           lambda v, *ops, s=spec: v[numpy_index(s, ops)], context=f"x{list(shape)}[{spec}]")
        outcomes[outcome] += 1
        if outcome == "ok":
            node, _ = getitem_node(x, spec, operands)
            expected = x[numpy_index(spec, operands)]
            assert is_view_node(node) == numpy_is_view(x, expected), f"x{list(shape)}[{spec}]"
    assert outcomes["ok"] > 300 and outcomes["rejected"] > 0, outcomes


@pytest.mark.parametrize("shape, spec, operands", [
    ((2, 3, 4), (slice(None), Operand(0), Operand(1)), (np.array([0, 1]), np.array([1, 2]))),  # adjacent
    ((2, 3, 4), (Operand(0), slice(None), Operand(1)), (np.array([0, 1]), np.array([1, 2]))),  # separated
    ((2, 3, 4), (Operand(0), None, Operand(1)), (np.array([0, 1]), np.array([1, 2]))),  # separated by None
    ((2, 3, 4), (1, slice(None), Operand(0)), (np.array([[0, 1]]),)),  # an int is an advanced index too
    ((2, 3, 4), (slice(None), 1, Operand(0)), (np.array([[0, 1]]),)),  # ... adjacent to the array here
    ((2, 3, 4, 5), (Operand(0), Ellipsis, Operand(1)), (np.array([0]), np.array([1]))),
    ((2, 5), (Operand(0), Ellipsis, Operand(1)), (np.array([0]), np.array([1]))),  # ... of zero dims
])
def test_advanced_index_placement(shape: tuple[int, ...], spec: tuple[Any, ...], operands: tuple[Any, ...]) -> None:
    x = np.arange(int(np.prod(shape))).reshape(shape)
    assert check_op("getitem", (x, *operands), {"spec": spec},
                    lambda v, *ops: v[numpy_index(spec, ops)]) == "ok"


def test_bool_index_entry_is_unsupported_not_misread() -> None:
    """``x[True]`` adds an axis in NumPy; the IR must not read it as ``x[1]``."""
    b = GraphBuilder()
    x = b.input(type_of(np.ones((3, 2))), "x")
    with pytest.raises(UnsupportedError):
        b.op("getitem", x, spec=(True,))


def test_bool_mask_is_unsupported_not_rejected() -> None:
    """NumPy accepts a boolean mask, so the IR must not claim NumPy rejects it (that would show the user a wrong
    error); it is unsupported (data-dependent shape) and runs eagerly."""
    b = GraphBuilder()
    x = b.input(type_of(np.ones((3, 2))), "x")
    mask = b.input(type_of(np.ones(3, bool)), "mask")
    with pytest.raises(UnsupportedError):
        b.op("getitem", x, mask, spec=(Operand(0),))


def setitem_graph(name: str, x: np.ndarray, value: Any, spec: tuple[Any, ...], operands: tuple[Any, ...]) -> Any:
    b = GraphBuilder()
    xin = b.input(type_of(x), "x")
    vin = b.input(type_of(value), "v")
    ops = [b.input(type_of(o), f"i{k}") for k, o in enumerate(operands)]
    node = b.op(name, xin, vin, *ops, spec=spec)
    return verify(b.build([node])), node


def test_setitem_repeated_indices_last_write_wins() -> None:
    x = np.zeros(5, np.int64)
    idx = np.array([1, 3, 1, 1, 3])
    values = np.array([10, 20, 30, 40, 50])
    graph, _ = setitem_graph("setitem", x, values, (Operand(0),), (idx,))
    (got,) = eager.run(graph, [x, values, idx])
    expected = x.copy()
    expected[idx] = values
    assert_same(got, expected)
    assert got[1] == 40 and got[3] == 50
    assert not x.any(), "setitem is functional: the input array is untouched"


def test_subtract_through_index_is_buffered() -> None:
    """``x[idx] -= 1`` is recorded NumPy's way: gather, subtract, setitem; a repeated index is decremented once."""
    x = np.arange(5.0)
    idx = np.array([0, 0, 2])
    b = GraphBuilder()
    xin, iin = b.input(type_of(x), "x"), b.input(type_of(idx), "idx")
    gathered = b.op("getitem", xin, iin, spec=(Operand(0),))
    new = b.op("setitem", xin, b.op("subtract", gathered, b.const(1)), iin, spec=(Operand(0),))
    graph = verify(b.build([], [(0, new)]))
    expected = x.copy()
    expected[idx] -= 1
    eager.run(graph, [x, idx])
    assert_same(x, expected)


def test_scatter_add_accumulates_like_add_at() -> None:
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64, np.int32, np.int64):
        x = rng.integers(0, 5, (4, 3)).astype(dtype)
        idx = np.array([0, 2, 0, 0, 3])
        values = rng.integers(-3, 4, (5, 3)).astype(dtype)
        graph, _ = setitem_graph("scatter_add", x, values, (Operand(0),), (idx,))
        (got,) = eager.run(graph, [x, values, idx])
        expected = x.copy()
        np.add.at(expected, idx, values)
        assert_same(got, expected)
        buffered = x.copy()
        buffered[idx] += values
        assert not np.array_equal(got, buffered)  # the repeated row 0 really accumulated three times


def test_scatter_add_two_index_arrays_with_scalar_value() -> None:
    x = np.zeros((3, 4))
    rows, cols = np.array([0, 0, 2]), np.array([1, 1, 3])
    assert check_op("scatter_add", (x, 0.5, rows, cols), {"spec": (Operand(0), Operand(1))},
                    lambda v, val, r, c: add_at(v, (r, c), val)) == "ok"


