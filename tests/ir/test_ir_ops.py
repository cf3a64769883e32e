"""Every op in the table against NumPy called directly: dtypes, weak scalars, broadcasting, non-contiguous inputs.

Each op has one entry in ``CASES`` (keyed by op name, grouped by kind); ``test_every_op_has_a_case`` fails as soon
as an op is added to ``OPS`` without one. An entry yields :class:`Case` objects; the shared harness
(:func:`irtest_util.check_op`) builds a one-node graph with GraphBuilder, checks the inferred type against NumPy's
result, runs ``jitgraph.backends.eager.run`` and compares values. Where NumPy rejects the operands the harness
requires a ``TypeInferenceError`` carrying NumPy's own exception type.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from irtest_util import DTYPES, LAYOUTS, WEAK_SCALARS, add_at, assert_same, check_op, numpy_call, sample

from jitgraph.backends import eager
from jitgraph.errors import TypeInferenceError
from jitgraph.ir import OPS, GraphBuilder, Operand, OpKind, TensorType, TupleType, type_of, verify
from jitgraph.ir.ops.elementwise import BINARY_UFUNCS, UNARY_UFUNCS


@dataclass
class Case:
    args: tuple[Any, ...]
    reference: Callable[..., Any]
    attrs: dict[str, Any] = field(default_factory=dict)


CaseGen = Callable[[np.random.Generator], Iterator[Case]]
CASES: dict[str, CaseGen] = {}
CUSTOM: dict[str, Callable[[], None]] = {}  # ops whose test is not a one-node NumPy comparison


def cases_for(*names: str) -> Callable[[Callable[..., Iterator[Case]]], Callable[..., Iterator[Case]]]:
    def register(gen: Callable[..., Iterator[Case]]) -> Callable[..., Iterator[Case]]:
        for name in names:
            CASES[name] = functools.partial(gen, name)
        return gen

    return register


def operand_pool() -> list[Any]:
    return list(DTYPES) + list(WEAK_SCALARS)


# ----------------------------------------------------------------------------------------------- elementwise


UNARY_SHAPES = ((3, 4), (2, 3, 4), ())


@cases_for(*UNARY_UFUNCS)
def unary_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    fn = getattr(np, name)
    for k, (dtype, layout) in enumerate(itertools.product(DTYPES, LAYOUTS)):
        shape = UNARY_SHAPES[k % len(UNARY_SHAPES)]
        yield Case((sample(shape, dtype, rng, layout),), fn)
    yield Case((sample((0, 3), np.float64, rng),), fn)  # zero-size arrays are valid elementwise operands


BINARY_SHAPES = (((3, 4), (4,)), ((2, 1, 3), (4, 3)), ((5,), ()), ((4, 1), (1, 3)))
NONNEGATIVE_SECOND = {"power"}  # integers to negative powers raise in NumPy; tested separately below


def binary_operand(spec: Any, shape: tuple[int, ...], layout: str, rng: np.random.Generator, name: str,
                   second: bool) -> Any:
    if not isinstance(spec, np.dtype):
        return spec
    x = sample(shape, spec, rng, layout)
    if second and name in NONNEGATIVE_SECOND and spec.kind in "iu":
        x = (np.abs(x) % 5).astype(spec)
    return x


@cases_for(*BINARY_UFUNCS)
def binary_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    fn = getattr(np, name)
    pool = operand_pool()
    for i, a in enumerate(pool):
        for j, b in enumerate(pool):
            if not isinstance(a, np.dtype) and not isinstance(b, np.dtype):
                continue  # two Python scalars: Python's operator, not a NumPy op (see test_all_weak_operands)
            sa, sb = BINARY_SHAPES[(i + j) % len(BINARY_SHAPES)]
            x = binary_operand(a, sa, LAYOUTS[i % 3], rng, name, second=False)
            y = binary_operand(b, sb, LAYOUTS[j % 3], rng, name, second=True)
            yield Case((x, y), fn)


@cases_for("where")
def where_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    pool = operand_pool()
    for i, (a, b) in enumerate(itertools.product(pool, pool)):
        cond = sample((3, 1), np.bool_, rng, LAYOUTS[i % 3])
        x = a if not isinstance(a, np.dtype) else sample((4,), a, rng, "S")
        y = b if not isinstance(b, np.dtype) else sample((1, 4), b, rng)
        yield Case((cond, x, y), np.where)
    yield Case((sample((2, 3), np.float32, rng), 1.0, 0), np.where)  # non-bool condition: truthiness


@cases_for("clip")
def clip_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, dtype in enumerate(DTYPES):
        x = sample((3, 4), dtype, rng, LAYOUTS[i % 3])
        yield Case((x, 0, 2), np.clip)
        yield Case((x, -0.5, 2.5), np.clip)
        lo = sample((4,), DTYPES[(i + 1) % 5], rng)
        yield Case((x, lo, sample((3, 1), dtype, rng)), np.clip)


@cases_for("astype")
def astype_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, (src, dst) in enumerate(itertools.product(DTYPES, DTYPES)):
        x = sample((3, 4), src, rng, LAYOUTS[i % 3], special=False)
        yield Case((x,), lambda v, d=dst: v.astype(d), {"dtype": dst})
    yield Case((np.float64(2.5),), lambda v: np.asarray(v).astype(np.float32), {"dtype": np.dtype(np.float32)})


@cases_for("copy")
def copy_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, dtype in enumerate(DTYPES):
        yield Case((sample((3, 4), dtype, rng, LAYOUTS[i % 3]),), np.copy)


# ------------------------------------------------------------------------------------------------ reductions


AXES = ((0,), (1, 2), (0, 1, 2), (), (2,))


@cases_for("sum", "mean", "max", "min", "prod", "var", "std", "any", "all")
def reduction_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    fn = getattr(np, name)
    for i, dtype in enumerate(DTYPES):
        x = sample((2, 3, 4), dtype, rng, LAYOUTS[i % 3], special=False)
        for k, axes in enumerate(AXES):
            keepdims = bool(k % 2)
            attrs: dict[str, Any] = {"axis": axes, "keepdims": keepdims}
            yield Case((x,), lambda v, a=dict(attrs): fn(v, **a), attrs)
        if name in ("var", "std"):
            attrs = {"axis": (1,), "keepdims": False, "ddof": 1}
            yield Case((x,), lambda v, a=dict(attrs): fn(v, **a), attrs)
        if name in ("sum", "mean", "prod"):
            for out_dtype in (np.dtype(np.float32), np.dtype(np.int64)):
                attrs = {"axis": (0, 2), "keepdims": False, "dtype": out_dtype}
                yield Case((x,), lambda v, a=dict(attrs): fn(v, **a), attrs)
    empty = np.zeros((0, 3), np.float64)
    yield Case((empty,), lambda v: fn(v, axis=(1,)), {"axis": (1,), "keepdims": False})


@cases_for("argmax", "argmin")
def arg_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    fn = getattr(np, name)
    for i, dtype in enumerate(DTYPES):
        x = sample((2, 3, 4), dtype, rng, LAYOUTS[i % 3])
        for axis, keepdims in ((None, False), (None, True), (0, False), (2, True), (-1, False)):
            attrs = {"axis": axis, "keepdims": keepdims}
            yield Case((x,), lambda v, a=dict(attrs): fn(v, **a), attrs)


@cases_for("sort", "argsort")
def sort_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    fn = getattr(np, name)
    for i, dtype in enumerate(DTYPES):
        if np.dtype(dtype).kind == "c":
            continue
        x = sample((2, 3, 4), dtype, rng, LAYOUTS[i % 3])
        for axis, kind in ((None, "quicksort"), (0, "stable"), (-1, "quicksort"), (1, "mergesort")):
            attrs = {"axis": axis, "kind": kind}
            yield Case((x,), lambda v, a=dict(attrs): fn(v, **a), attrs)


@cases_for("cumsum", "cumprod")
def scan_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    fn = getattr(np, name)
    for i, dtype in enumerate(DTYPES):
        x = sample((2, 3, 4), dtype, rng, LAYOUTS[i % 3])
        for axis, out in ((None, None), (0, None), (-1, None), (1, np.float64)):
            attrs = {"axis": axis, "dtype": out}
            yield Case((x,), lambda v, a=dict(attrs): fn(v, **a), attrs)


@cases_for("searchsorted")
def searchsorted_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    a = np.sort(rng.integers(0, 10, 12)).astype(np.float64)
    for side in ("left", "right"):
        for v in (np.array([0.0, 3.0, 11.0]), np.float64(4.0), rng.integers(0, 12, (2, 3))):
            yield Case((a, v), lambda x, y, s=side: np.searchsorted(x, y, side=s), {"side": side})


# ------------------------------------------------------------------------------------------------ shape ops


@cases_for("reshape")
def reshape_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, dtype in enumerate(DTYPES):
        x = sample((2, 3, 4), dtype, rng, LAYOUTS[i % 3])
        for shape in ((6, 4), (4, -1), (24,), (2, 12, 1), (-1,), (1, 2, 3, 4)):
            yield Case((x,), lambda v, s=shape: np.reshape(v, s), {"shape": shape})
    yield Case((sample((), np.float32, rng),), lambda v: np.reshape(v, (1, 1)), {"shape": (1, 1)})


@cases_for("transpose")
def transpose_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, dtype in enumerate(DTYPES):
        x = sample((2, 3, 4), dtype, rng, LAYOUTS[i % 3])
        for axes in itertools.permutations(range(3)):
            yield Case((x,), lambda v, a=axes: np.transpose(v, a), {"axes": axes})
        yield Case((x,), lambda v: np.transpose(v, (-1, 0, 1)), {"axes": (-1, 0, 1)})


@cases_for("broadcast_to")
def broadcast_to_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, dtype in enumerate(DTYPES):
        x = sample((3, 1), dtype, rng, LAYOUTS[i % 3])
        for shape in ((2, 3, 5), (3, 1), (3, 4), (0, 3, 2)):
            yield Case((x,), lambda v, s=shape: np.broadcast_to(v, s), {"shape": shape})


@cases_for("concatenate")
def concatenate_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, (a, b) in enumerate(itertools.product(DTYPES, DTYPES)):
        x = sample((2, 3), a, rng, LAYOUTS[i % 3])
        y = sample((2, 5), b, rng, LAYOUTS[(i + 1) % 3])
        yield Case((x, y), lambda *v: np.concatenate(v, axis=1), {"axis": 1})
        yield Case((x, x, x), lambda *v: np.concatenate(v, axis=0), {"axis": 0})
        yield Case((x, y), lambda *v: np.concatenate(v, axis=-1), {"axis": -1})
        yield Case((x, y.T), lambda *v: np.concatenate(v, axis=None), {"axis": None})


@cases_for("stack")
def stack_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, (a, b) in enumerate(itertools.product(DTYPES, DTYPES)):
        x = sample((2, 3), a, rng, LAYOUTS[i % 3])
        y = sample((2, 3), b, rng, LAYOUTS[(i + 1) % 3])
        for axis in (0, 1, 2, -1):
            yield Case((x, y), lambda *v, ax=axis: np.stack(v, axis=ax), {"axis": axis})


# -------------------------------------------------------------------------------------------- linear algebra


MATMUL_SHAPES = (((3, 4), (4, 5)), ((4,), (4, 5)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4,)))


@cases_for("matmul", "dot")
def matmul_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    fn = getattr(np, name)
    shapes = MATMUL_SHAPES if name == "matmul" else MATMUL_SHAPES[:3] + (((2, 3, 4), (5, 4, 2)), ((3, 4), ()))
    for i, (a, b) in enumerate(itertools.product(DTYPES, DTYPES)):
        sa, sb = shapes[i % len(shapes)]
        yield Case((sample(sa, a, rng, LAYOUTS[i % 3], special=False),
                    sample(sb, b, rng, LAYOUTS[(i + 1) % 3], special=False)), fn)
    if name == "dot":
        yield Case((sample((3,), np.float32, rng), 0.5), fn)


@cases_for("outer")
def outer_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, (a, b) in enumerate(itertools.product(DTYPES, DTYPES)):
        yield Case((sample((3,), a, rng, "S"), sample((2, 2), b, rng, LAYOUTS[i % 3])), np.outer)


EINSUMS = (("ij,jk->ik", ((3, 4), (4, 5))), ("ii->i", ((3, 3),)), ("bij,bjk->bik", ((2, 3, 4), (2, 4, 5))),
           ("i,i", ((4,), (4,))), ("ij->ji", ((3, 4),)), ("ij", ((3, 4),)), ("ijk,ik->j", ((2, 3, 4), (2, 4))),
           ("ba,ab", ((2, 3), (3, 2))), ("i,i->i", ((3,), (1,))), ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 5))))


@cases_for("einsum")
def einsum_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, (subscripts, shapes) in enumerate(EINSUMS):
        for dtype in DTYPES:
            args = tuple(sample(s, dtype, rng, LAYOUTS[(i + k) % 3], special=False) for k, s in enumerate(shapes))
            yield Case(args, lambda *v, s=subscripts: np.einsum(s, *v), {"subscripts": subscripts})


# ------------------------------------------------------------------------------------------------- indexing


def substitute(spec: tuple[Any, ...], operands: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(operands[e.k] if isinstance(e, Operand) else e for e in spec)


def idx(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


GETITEM_SPECS: tuple[tuple[tuple[Any, ...], tuple[Any, ...]], ...] = (
    ((1,), ()),
    ((slice(None, None, 2),), ()),
    ((Ellipsis, 1), ()),
    ((None, slice(1, 3), Ellipsis, slice(None, None, -1)), ()),
    ((-1, slice(None), 2), ()),
    ((Operand(0), slice(None)), (idx(0, 1, 1, 0),)),
    ((slice(None), Operand(0)), (np.array([[0, 2], [1, 1]], np.int32),)),
    ((Operand(0), Operand(1)), (idx(0, 1), idx(2, 0))),
    ((Operand(0), slice(None), Operand(1)), (idx(0, 1), np.array([[3], [0]]))),
    ((Operand(0), 1), (idx(1, 0, 1),)),
    ((Operand(0), slice(1, 2), 1), (idx(1, 0),)),
    ((Operand(0),), (np.int64(1),)),  # a runtime integer scalar operand: basic indexing
    ((1, Operand(0)), (2,)),  # a Python int operand (weak type)
    ((Operand(0), None, Operand(1)), (idx(0, 1), idx(1, 1))),
    ((Ellipsis, Operand(0)), (idx(-1, 0),)),
)


@cases_for("getitem")
def getitem_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, dtype in enumerate(DTYPES):
        x = sample((2, 3, 4), dtype, rng, LAYOUTS[i % 3])
        for spec, operands in GETITEM_SPECS:
            yield Case((x, *operands), lambda v, *ops, s=spec: v[substitute(s, ops)], {"spec": spec})


def _setitem_ref(x: np.ndarray, value: Any, *ops: Any, spec: tuple[Any, ...]) -> np.ndarray:
    out = x.copy()
    out[substitute(spec, ops)] = value
    return out


def _scatter_ref(x: np.ndarray, value: Any, *ops: Any, spec: tuple[Any, ...]) -> np.ndarray:
    return add_at(x, substitute(spec, ops), value)


SETITEM_SPECS: tuple[tuple[tuple[Any, ...], tuple[Any, ...], tuple[int, ...]], ...] = (
    ((slice(None, None, 2),), (), (4,)),
    ((1, Ellipsis), (), (3, 4)),
    ((Operand(0),), (idx(0, 1, 0),), (3, 4)),  # repeated index: the last write wins for setitem
    ((Operand(0), Operand(1)), (idx(0, 0, 1), idx(2, 2, 1)), (3, 1)),
    ((slice(None), Operand(0), 1), (idx(1, 1),), (1, 2)),
    ((Operand(0), slice(None), Operand(1)), (idx(0, 1), np.array([[3], [0]])), (2, 2, 3)),
)


@cases_for("setitem", "scatter_add")
def setitem_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    ref = _setitem_ref if name == "setitem" else _scatter_ref
    for i, (dtype, vtype) in enumerate(itertools.product(DTYPES, DTYPES + WEAK_SCALARS)):
        x = sample((2, 3, 4), dtype, rng, LAYOUTS[i % 3], special=False)
        spec, operands, vshape = SETITEM_SPECS[i % len(SETITEM_SPECS)]
        value = vtype if not isinstance(vtype, np.dtype) else sample(vshape, vtype, rng, special=False)
        yield Case((x, value, *operands), lambda v, val, *ops, s=spec: ref(v, val, *ops, spec=s), {"spec": spec})


# ------------------------------------------------------------------------------------------------- creation


@cases_for("zeros", "ones")
def fill_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    fn = getattr(np, name)
    for dtype in DTYPES:
        for shape in ((2, 3), (), (0, 4)):
            yield Case((), lambda s=shape, d=dtype: fn(s, d), {"shape": shape, "dtype": dtype})


@cases_for("full")
def full_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for dtype in DTYPES:
        for value in (0, 1.5, True):
            attrs = {"shape": (2, 3), "dtype": dtype, "value": value}
            yield Case((), lambda d=dtype, v=value: np.full((2, 3), v, d), attrs)
    yield Case((), lambda: np.full((2,), 3, None), {"shape": (2,), "dtype": None, "value": 3})
    yield Case((), lambda: np.full((2,), 0.5, None), {"shape": (2,), "dtype": None, "value": 0.5})


@cases_for("arange")
def arange_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for start, stop, step, dtype in ((0, 5, 1, np.int64), (0, 1, 0.1, np.float64), (5, -3, -2, np.int32),
                                     (0, 3, 1, np.float32), (1, 1, 1, np.int64), (0.5, 4, 1.5, np.float64),
                                     (0, 5, 2, None), (0, 2.5, 0.5, None), (3, 0, 1, None)):
        attrs = {"start": start, "stop": stop, "step": step, "dtype": None if dtype is None else np.dtype(dtype)}
        yield Case((), lambda a=dict(attrs): np.arange(a["start"], a["stop"], a["step"], dtype=a["dtype"]), attrs)


@cases_for("eye")
def eye_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for n, m, k in ((3, 3, 0), (2, 4, 1), (4, 2, -1), (3, None, 0)):
        for dtype in DTYPES:
            yield Case((), lambda n=n, m=m, k=k, d=dtype: np.eye(n, m, k, dtype=d),
                       {"n": n, "m": m, "k": k, "dtype": dtype})


def empty_test() -> None:
    """np.empty's contents are unspecified, so only the type and the result's shape/dtype are compared."""
    for dtype in DTYPES:
        for shape in ((2, 3), (), (0, 4)):
            b = GraphBuilder()
            node = b.op("empty", shape=shape, dtype=dtype)
            (got,) = eager.run(verify(b.build([node])), [])
            expected = np.empty(shape, dtype)
            assert (node.tensor_type.shape, node.tensor_type.dtype) == (expected.shape, expected.dtype)
            assert (got.shape, got.dtype) == (expected.shape, expected.dtype)


CUSTOM["empty"] = empty_test


# ------------------------------------------------------------------------------------------------- special


def input_test() -> None:
    rng = np.random.default_rng(0)
    for dtype in DTYPES:
        for layout in LAYOUTS:
            x = sample((3, 4), dtype, rng, layout)
            b = GraphBuilder()
            node = b.input(type_of(x), "x")
            (got,) = eager.run(verify(b.build([node])), [x])
            assert got is x  # an output that is an unmutated input is the caller's object, as in Python
            assert node.tensor_type.layout == {"C": "C", "T": "F", "S": "S"}[layout]


def const_test() -> None:
    rng = np.random.default_rng(1)
    for value in [*(sample((2, 3), d, rng) for d in DTYPES), np.float32(1.5), np.int32(-4), 0.5, 7, True]:
        b = GraphBuilder()
        node = b.const(value)
        (got,) = eager.run(verify(b.build([node])), [])
        assert_same(got, value, f"const {value!r}")
        assert node.tensor_type.dtype == np.asarray(value).dtype
        assert node.tensor_type.weak == (type(value) in (int, float))


def tuple_get_test() -> None:
    rng = np.random.default_rng(2)
    x, y = sample((2,), np.float32, rng), sample((3, 1), np.int64, rng)
    b = GraphBuilder()
    pair = b.input(TupleType((type_of(x), type_of(y))), "pair")
    first = b.op("tuple_get", pair, index=0)
    second = b.op("tuple_get", pair, index=1)
    assert first.type == type_of(x) and second.type == type_of(y)
    got = eager.run(verify(b.build([second, first])), [(x, y)])
    assert got[0] is y and got[1] is x


def check_test() -> None:
    """``check(value, pred, message)``: the value when pred holds, NumPy-style ValueError(message) when not."""
    rng = np.random.default_rng(3)
    x = sample((2, 3), np.float32, rng, "T")
    b = GraphBuilder()
    xin = b.input(type_of(x), "x")
    n = b.input(type_of(4), "n")
    ok = b.op("check", xin, b.op("greater", n, b.const(2)), message="n must exceed 2")
    assert ok.type == xin.type
    graph = verify(b.build([ok]))
    (got,) = eager.run(graph, [x, 4])
    assert got is x
    with pytest.raises(ValueError, match="n must exceed 2"):
        eager.run(graph, [x, 1])


def to_python_test() -> None:
    """``to_python(x, kind)``: int(x)/float(x) of a scalar as a weak Python number (regions' ``int(a[i])``)."""
    b = GraphBuilder()
    xin = b.input(type_of(np.uint8(200)), "x")
    as_int = b.op("to_python", xin, kind="int")
    as_float = b.op("to_python", xin, kind="float")
    assert str(as_int.type) == "pyint[]" and str(as_float.type) == "pyfloat[]"
    got = eager.run(verify(b.build([as_int, as_float])), [np.uint8(200)])
    assert got == [200, 200.0] and type(got[0]) is int and type(got[1]) is float


CUSTOM.update({"input": input_test, "const": const_test, "tuple_get": tuple_get_test, "check": check_test,
               "to_python": to_python_test})


# ------------------------------------------------------------------------------------ LAPACK, histogram


def _spd(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


LAPACK_SHAPES = ((3, 3), (2, 4, 4), (3, 2), (4,), (0, 0))


@cases_for("solve", "inv", "det", "cholesky", "eigvalsh")
def lapack_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    fn = getattr(np.linalg, name)
    for i, dtype in enumerate(DTYPES):
        shape = LAPACK_SHAPES[i % len(LAPACK_SHAPES)]
        a = _spd(shape, dtype, rng) if len(shape) >= 2 and shape[-1] == shape[-2] else sample(shape, dtype, rng)
        if name == "solve":
            for b in (sample(shape[-1:], dtype, rng), sample(shape[:-1] + (2,), np.float32, rng)):
                yield Case((a, b), fn)
        else:
            yield Case((a,), fn)
    if name == "cholesky":
        yield Case((_spd((3, 3), np.float64, rng),), lambda x: np.linalg.cholesky(x, upper=True), {"upper": True})
    yield Case((np.zeros((2, 2)),) + ((np.ones(2),) if name == "solve" else ()), fn)  # singular: LinAlgError at run


def _tuple_op_test(name: str, args: tuple[Any, ...], attrs: dict[str, Any], reference: Callable[..., Any]) -> None:
    expected, np_exc = numpy_call(lambda: reference(*args))
    b = GraphBuilder()
    inputs = [b.input(type_of(a), f"a{k}") for k, a in enumerate(args)]
    if np_exc is not None:
        with pytest.raises(TypeInferenceError):
            b.op(name, *inputs, **attrs)
        return
    node = b.op(name, *inputs, **attrs)
    parts = [b.op("tuple_get", node, index=k) for k in range(len(expected))]
    got = eager.run(verify(b.build(parts)), list(args))
    for g, e, p in zip(got, expected, parts):
        assert p.type == type_of(np.ascontiguousarray(e)), (name, attrs, p.type, e.dtype, e.shape)
        np.testing.assert_allclose(np.abs(g), np.abs(e), rtol=1e-4, atol=1e-5)  # eigenvector signs are LAPACK's


def lapack_tuple_test() -> None:
    rng = np.random.default_rng(5)
    for dtype in (np.float64, np.float32, np.int64, np.float16):
        a = _spd((3, 3), dtype, rng)
        _tuple_op_test("eigh", (a,), {"UPLO": "L"}, lambda x: tuple(np.linalg.eigh(x)))
        for full in (True, False):
            x = sample((4, 3), dtype, rng, special=False)
            _tuple_op_test("svd", (x,), {"full_matrices": full, "compute_uv": True, "hermitian": False},
                           lambda v, f=full: tuple(np.linalg.svd(v, full_matrices=f)))
    _tuple_op_test("eigh", (np.ones(3),), {}, np.linalg.eigh)
    _tuple_op_test("eigh", (np.ones((2, 3)),), {}, np.linalg.eigh)


@cases_for("pinv", "matrix_rank", "matrix_power")
def lapack_more_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    """lapack_more.py: stacked, tall and wide matrices in every dtype NumPy's linalg takes; attrs as the tracer sets."""
    for i, dtype in enumerate(DTYPES):
        shape = LAPACK_SHAPES[i % len(LAPACK_SHAPES)]
        if name == "matrix_power":
            a = _spd(shape, dtype, rng) if len(shape) >= 2 and shape[-1] == shape[-2] else sample(shape, dtype, rng)
            for n in (-2, 0, 3):
                yield Case((a,), lambda x, k=n: np.linalg.matrix_power(x, k), {"n": n})
        elif name == "pinv":
            yield Case((sample(shape, dtype, rng, special=False),), lambda x: np.linalg.pinv(x, rcond=0.1),
                       {"rcond": 0.1, "hermitian": False})
            yield Case((sample(shape, dtype, rng, special=False), 0.3), lambda x, r: np.linalg.pinv(x, rtol=r),
                       {"hermitian": False, "rtol": None, "traced": "rtol", "weak": True})  # a traced tolerance
        elif len(shape) >= 2:  # matrix_rank of a vector is a Python int: the tracer keeps it out of the graph
            yield Case((sample(shape, dtype, rng, special=False),), np.linalg.matrix_rank,
                       {"tol": None, "hermitian": False, "rtol": None})
    if name == "matrix_power":
        yield Case((np.zeros((2, 2)),), lambda x: np.linalg.matrix_power(x, -1), {"n": -1})  # singular: at run


def _lstsq_test(a: np.ndarray, b: np.ndarray) -> None:
    """lstsq's op is NumPy's result without the residuals: (x, rank, s), the rank a 0-d int32."""
    x, _, rank, s = np.linalg.lstsq(a, b)
    gb = GraphBuilder()
    node = gb.op("lstsq", gb.input(type_of(a), "a"), gb.input(type_of(b), "b"), rcond=None)
    parts = [gb.op("tuple_get", node, index=k) for k in range(3)]
    got = eager.run(verify(gb.build(parts)), [a, b])
    assert [p.type for p in parts] == [type_of(x), TensorType((), rank.dtype), type_of(s)]
    for g, e in zip(got, (x, rank, s)):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def lapack_more_tuple_test() -> None:
    rng = np.random.default_rng(7)
    for dtype in (np.float64, np.float32, np.int64, np.float16):
        for shape in ((4, 3), (2, 3, 5)):
            x = sample(shape, dtype, rng, special=False)
            for mode in ("reduced", "complete"):
                _tuple_op_test("qr", (x,), {"mode": mode}, lambda v, m=mode: tuple(np.linalg.qr(v, mode=m)))
            _tuple_op_test("slogdet", (_spd((len(shape), 3, 3), dtype, rng),), {}, lambda v: tuple(np.linalg.slogdet(v)))
        a, b = sample((5, 3), dtype, rng, special=False), sample((5, 2), dtype, rng, special=False)
        if dtype is not np.float16:
            _lstsq_test(a, b)
    _tuple_op_test("lstsq", (np.ones((5, 3)), np.ones(4)), {}, np.linalg.lstsq)
    _tuple_op_test("qr", (np.ones(3),), {}, np.linalg.qr)
    _tuple_op_test("slogdet", (np.ones((2, 3)),), {}, np.linalg.slogdet)


def histogram_test() -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal(30)
    cases = [((x,), {"bins": 5}, lambda v: np.histogram(v, 5)),
             ((x.astype(np.float32),), {"bins": 4, "range": (-1.0, 1.0)}, lambda v: np.histogram(v, 4, (-1, 1))),
             ((x, np.array([-1.0, 0.0, 2.0])), {"bins": None, "density": True},
              lambda v, e: np.histogram(v, e, density=True)),
             ((np.arange(9), np.arange(9.0)), {"bins": 3, "weighted": True}, lambda v, w: np.histogram(v, 3, weights=w)),
             ((x,), {"bins": 0}, lambda v: np.histogram(v, 0)),
             ((x,), {"bins": 3, "range": (1.0, 0.0)}, lambda v: np.histogram(v, 3, (1, 0)))]
    for args, attrs, ref in cases:
        _tuple_op_test("histogram", args, attrs, ref)
    b = GraphBuilder()
    node = b.op("histogram", b.input(type_of(x), "x"), bins=3)
    graph = verify(b.build([b.op("tuple_get", node, index=0)]))
    with pytest.raises(ValueError, match="not finite"):  # a NaN: the range from the data is not finite
        eager.run(graph, [np.array([0.0, np.nan] * 15)])


@cases_for("quantile")
def quantile_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    for i, dtype in enumerate(DTYPES):
        x = sample((3, 4), dtype, rng, LAYOUTS[i % 3])
        yield Case((x,), lambda v: np.median(v, axis=(0,)), {"fn": "median", "axis": (0,)})
        yield Case((x, np.array([0.1, 0.9])), lambda v, q: np.quantile(v, q, axis=None, keepdims=True),
                   {"fn": "quantile", "axis": None, "keepdims": True})
    x = rng.standard_normal((4, 5))
    yield Case((x, 30.0), lambda v, q: np.percentile(v, q, axis=(1,), method="nearest"),
               {"fn": "percentile", "axis": (1,), "method": "nearest"})
    yield Case((x, np.array(1.5)), lambda v, q: np.quantile(v, q), {"fn": "quantile"})  # q > 1: ValueError at run


@cases_for("convolve", "correlate", "interp", "digitize", "cross", "partition", "argpartition")
def numpy_call_cases(name: str, rng: np.random.Generator) -> Iterator[Case]:
    fn = getattr(np, name)
    for i, dtype in enumerate(DTYPES):
        x = sample((5,), dtype, rng, special=False)
        if name in ("convolve", "correlate"):
            for mode in ("full", "same", "valid"):
                yield Case((x, sample((3,), np.float32, rng)), lambda a, v, m=mode: fn(a, v, mode=m), {"mode": mode})
        elif name == "interp":
            yield Case((x, np.arange(4.0), sample((4,), dtype, rng)), np.interp)
        elif name == "digitize":
            yield Case((x, np.array([-1.0, 0.0, 2.0])), lambda a, b: np.digitize(a, b, right=True), {"right": True})
        elif name == "cross":
            yield Case((sample((2, 3), dtype, rng), sample((3,), np.float64, rng)), np.cross)
        else:
            axis = 1 - i % 2
            yield Case((sample((3, 4), dtype, rng, LAYOUTS[i % 3]),), lambda a, ax=axis: fn(a, [1, 2], axis=ax),
                       {"kth": (1, 2), "axis": axis})
    if name == "digitize":
        yield Case((np.arange(3.0), np.array([0.0, 2.0, 1.0])), np.digitize)  # bins not monotonic: raises at run


CUSTOM.update({"eigh": lapack_tuple_test, "svd": lapack_tuple_test, "histogram": histogram_test})
CUSTOM.update({"qr": lapack_more_tuple_test, "slogdet": lapack_more_tuple_test, "lstsq": lapack_more_tuple_test})


# ------------------------------------------------------------------------------------------------- the tests


# Region ops (fused, loop, while, cond) own body graphs; they are tested with the passes and the tracer that build
# them, not by one-node NumPy comparisons.
COVERED_KINDS = [kind for kind in OpKind if kind is not OpKind.REGION]


def test_every_op_has_a_case() -> None:
    required = {op.name for op in OPS.values() if op.kind in COVERED_KINDS}
    missing = sorted(required - set(CASES) - set(CUSTOM))
    assert not missing, f"ops without a test case in tests/ir/test_ir_ops.py: {missing}"
    assert not (set(CASES) | set(CUSTOM)) - set(OPS), "test cases for ops that do not exist"


@pytest.mark.parametrize("kind", COVERED_KINDS)
def test_kind_membership(kind: OpKind) -> None:
    """Passes ask an op's kind; the table's kinds are the documented groups."""
    for op in OPS.values():
        assert op.is_elementwise == (op.kind is OpKind.ELEMENTWISE)
    names = {op.name for op in OPS.values() if op.kind is kind}
    expected = {
        OpKind.ELEMENTWISE: set(UNARY_UFUNCS) | set(BINARY_UFUNCS) | {"where", "clip", "astype", "copy"},
        OpKind.REDUCTION: {"sum", "mean", "max", "min", "prod", "var", "std", "any", "all", "argmax", "argmin"},
        OpKind.SHAPE: {"reshape", "transpose", "broadcast_to", "concatenate", "stack"},
        OpKind.LINALG: {"matmul", "dot", "outer", "einsum"},
        OpKind.LAPACK: {"solve", "inv", "det", "cholesky", "eigh", "eigvalsh", "svd", "qr", "slogdet", "pinv",
                        "matrix_rank", "matrix_power", "lstsq"},
        OpKind.INDEXING: {"getitem", "setitem", "scatter_add", "sort", "argsort", "cumsum", "cumprod",
                          "searchsorted", "histogram", "quantile", "convolve", "correlate", "interp", "digitize",
                          "cross", "partition", "argpartition"},
        OpKind.CREATION: {"zeros", "ones", "full", "empty", "arange", "eye"},
        OpKind.SPECIAL: {"input", "const", "tuple_get", "check", "to_python"},
    }[kind]
    assert names == expected


@pytest.mark.parametrize("name", [op.name for kind in COVERED_KINDS for op in OPS.values() if op.kind is kind])
def test_op_matches_numpy(name: str) -> None:
    if name in CUSTOM:
        CUSTOM[name]()
        return
    rng = np.random.default_rng(sum(map(ord, name)))
    outcomes = [check_op(name, case.args, case.attrs, case.reference) for case in CASES[name](rng)]
    assert "ok" in outcomes, f"{name}: no case was computed (all rejected: {outcomes})"
