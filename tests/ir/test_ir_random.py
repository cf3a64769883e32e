"""Random IR programs: chains of elementwise, broadcast, reduction, indexing and shape ops over random shapes,
dtypes and layouts. While a program is built with GraphBuilder, the same chain is evaluated with NumPy called
directly; the inferred types, the eager backend's outputs and the caller's mutated array must equal NumPy's.

Where NumPy rejects a step, GraphBuilder must reject it with NumPy's exception type, and the step is dropped.
Failures hypothesis found are kept as named regression tests at the bottom of this file.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from irtest_util import DTYPES, LAYOUTS, add_at, assert_same, assert_type_matches, check_op, numpy_call, sample

from jitgraph.backends import eager
from jitgraph.errors import TypeInferenceError
from jitgraph.ir import GraphBuilder, Node, Operand, eliminate_dead, is_view_node, type_of, verify
from jitgraph.ir.ops.elementwise import BINARY_UFUNCS, UNARY_UFUNCS

REDUCE = ("sum", "mean", "max", "min", "prod", "var", "std", "any", "all")
SAFE_BINARY = tuple(n for n in BINARY_UFUNCS if n != "power")  # int ** negative int raises at run time
DIMS = (1, 2, 3, 4, 0)


class Program:
    """A GraphBuilder and a NumPy evaluation kept in lock step."""

    def __init__(self, data: st.DataObject, rng: np.random.Generator) -> None:
        self.data = data
        self.rng = rng
        self.b = GraphBuilder()
        self.args: list[Any] = []
        self.values: list[tuple[Node, Any]] = []  # (node, NumPy's value for it)
        self.rejected = 0

    def draw(self, strategy: st.SearchStrategy[Any], label: str) -> Any:
        return self.data.draw(strategy, label=label)

    def new_input(self, shape: tuple[int, ...] | None = None) -> tuple[Node, Any]:
        if shape is None:
            shape = tuple(self.draw(st.lists(st.sampled_from(DIMS), max_size=3), "shape"))
        dtype = self.draw(st.sampled_from(DTYPES), "dtype")
        layout = self.draw(st.sampled_from(LAYOUTS), "layout")
        value = sample(shape, dtype, self.rng, layout)
        node = self.b.input(type_of(value), f"x{len(self.args)}")
        self.args.append(value)
        self.values.append((node, value))
        return node, value

    def pick(self) -> tuple[Node, Any]:
        return self.values[self.draw(st.integers(0, len(self.values) - 1), "operand")]

    def apply(self, name: str, operands: list[tuple[Node, Any]], attrs: dict[str, Any], reference: Any) -> None:
        """Record ``name`` and evaluate ``reference`` on NumPy values; both must agree on accepting it."""
        expected, exc = numpy_call(lambda: reference(*(v for _, v in operands)))
        if exc is not None:
            try:
                node = self.b.op(name, *(n for n, _ in operands), **attrs)
            except TypeInferenceError as err:
                assert type(err.original) is type(exc), f"{name}: IR {err.original!r} vs NumPy {exc!r}"
                self.rejected += 1
                return
            # Only values can reveal this error (e.g. an integer overflow for a weak int): the node stays dead,
            # and eager must raise NumPy's error for it.
            graph = self.b.build([node])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    eager.evaluate(eliminate_dead(graph), self.args)
                except type(exc):
                    return
            raise AssertionError(f"{name}: NumPy raised {exc!r}, eager did not")
        node = self.b.op(name, *(n for n, _ in operands), **attrs)
        assert_type_matches(node, expected, f"{name}{[str(n.type) for n, _ in operands]} {attrs}")
        self.values.append((node, expected))

    # ------------------------------------------------------------------------------------------------ steps

    def unary(self) -> None:
        name = self.draw(st.sampled_from(UNARY_UFUNCS), "unary")
        self.apply(name, [self.pick()], {}, getattr(np, name))

    def binary(self) -> None:
        name = self.draw(st.sampled_from(SAFE_BINARY), "binary")
        first = self.pick()
        how = self.draw(st.sampled_from(["existing", "weak", "broadcast", "broadcast"]), "partner")
        if how == "existing":
            second = self.pick()
        elif how == "weak":
            # A Python scalar literal (const) or run-time argument (``lr``): weak either way. Weak values are not
            # added to the operand pool, so no op ever sees two of them (np.exp(lr) is strong in NumPy, while the
            # IR reads all-weak ops as Python arithmetic; see test_all_weak_operands_follow_python).
            scalar = self.draw(st.sampled_from([2, -3, 0.5, -1.25, 0]), "scalar")
            if self.draw(st.booleans(), "runtime scalar"):
                second = (self.b.input(type_of(scalar), f"x{len(self.args)}"), scalar)
                self.args.append(scalar)
            else:
                second = (self.b.const(scalar), scalar)
        else:  # a fresh input whose shape broadcasts against the first operand's
            shape = list(np.shape(first[1]))
            keep = self.draw(st.integers(0, len(shape)), "keep")
            shape = [1 if self.draw(st.booleans(), "one") else d for d in shape[len(shape) - keep:]]
            if self.draw(st.booleans(), "prepend"):
                shape.insert(0, self.draw(st.sampled_from(DIMS[:3]), "lead"))
            self.new_input(tuple(shape))
            second = self.values[-1]
        pair = [first, second] if self.draw(st.booleans(), "order") else [second, first]
        self.apply(name, pair, {}, getattr(np, name))

    def reduce(self) -> None:
        x = self.pick()
        ndim = np.ndim(x[1])
        if self.draw(st.booleans(), "arg"):
            name = self.draw(st.sampled_from(["argmax", "argmin"]), "argreduce")
            axis = self.draw(st.one_of(st.none(), st.integers(-ndim, max(ndim - 1, 0))), "axis")
            keepdims = self.draw(st.booleans(), "keepdims")
            self.apply(name, [x], {"axis": axis, "keepdims": keepdims},
                       lambda v: getattr(np, name)(v, axis=axis, keepdims=keepdims))
            return
        name = self.draw(st.sampled_from(REDUCE), "reduction")
        axes = tuple(sorted(self.draw(st.sets(st.integers(0, max(ndim - 1, 0)), max_size=ndim), "axes")))
        attrs: dict[str, Any] = {"axis": axes, "keepdims": self.draw(st.booleans(), "keepdims")}
        if name in ("var", "std") and self.draw(st.booleans(), "ddof"):
            attrs["ddof"] = 1
        self.apply(name, [x], attrs, lambda v: getattr(np, name)(v, **attrs))

    def shape_op(self) -> None:
        x = self.pick()
        shape = np.shape(x[1])
        kind = self.draw(st.sampled_from(["transpose", "reshape", "broadcast_to", "getitem", "astype", "where"]),
                         "shape op")
        if kind == "transpose":
            axes = tuple(self.draw(st.permutations(range(len(shape))), "perm"))
            self.apply("transpose", [x], {"axes": axes}, lambda v: np.transpose(v, axes))
        elif kind == "reshape":
            options = [shape[::-1], (-1,), (1, *shape), tuple(d for d in shape if d != 1), (2, -1)]
            new = tuple(self.draw(st.sampled_from(options), "new shape"))
            self.apply("reshape", [x], {"shape": new}, lambda v: np.reshape(v, new))
        elif kind == "broadcast_to":
            lead = tuple(self.draw(st.lists(st.sampled_from(DIMS[:3]), max_size=2), "lead"))
            target = lead + tuple(self.draw(st.sampled_from(DIMS[:3]), "grow") if d == 1 else d for d in shape)
            self.apply("broadcast_to", [x], {"shape": target}, lambda v: np.broadcast_to(v, target))
        elif kind == "getitem":
            spec: list[Any] = []
            for d in shape:
                choice = self.draw(st.sampled_from(["slice", "int", "all", "none"]), "entry")
                if choice == "int" and d > 0:
                    spec.append(self.draw(st.integers(-d, d - 1), "index"))
                elif choice == "slice":
                    start = self.draw(st.one_of(st.none(), st.integers(-d - 1, d + 1)), "start")
                    step = self.draw(st.sampled_from([None, 1, 2, -1, -2, 3]), "step")
                    spec.append(slice(start, None, step))
                elif choice == "none":
                    spec.extend([None, slice(None)])
                else:
                    spec.append(slice(None))
            if self.draw(st.booleans(), "ellipsis") and spec:
                spec[self.draw(st.integers(0, len(spec) - 1), "where ...")] = Ellipsis
            key = tuple(spec)
            self.apply("getitem", [x], {"spec": key}, lambda v: np.asarray(v)[key])
        elif kind == "astype":
            dtype = self.draw(st.sampled_from(DTYPES), "to")
            self.apply("astype", [x], {"dtype": dtype}, lambda v: np.asarray(v).astype(dtype))
        else:
            cond = self.pick()
            other = self.pick()
            self.apply("where", [cond, x, other], {}, np.where)

    def other(self) -> None:
        """Linear algebra, joins and integer-array gathers/scatters, less often than the core steps."""
        kind = self.draw(st.sampled_from(["matmul", "concatenate", "stack", "gather", "scatter_add"]), "other")
        x = self.pick()
        if kind in ("matmul", "concatenate", "stack"):
            y = self.pick()
            if kind == "matmul":
                self.apply("matmul", [x, y], {}, np.matmul)
            else:
                axis = self.draw(st.integers(-2, 2), "axis")
                fn = getattr(np, kind)
                self.apply(kind, [x, y], {"axis": axis}, lambda a, b: fn((a, b), axis=axis))
            return
        shape = np.shape(x[1])
        if not shape or 0 in shape:
            return
        ishape = tuple(self.draw(st.lists(st.integers(1, 3), max_size=2), "index shape"))
        dim = self.draw(st.integers(0, len(shape) - 1), "indexed dim")
        index = self.rng.integers(-shape[dim], shape[dim], ishape)
        node = self.b.input(type_of(index), f"x{len(self.args)}")
        self.args.append(index)
        spec = (slice(None),) * dim + (Operand(0),)
        if kind == "gather":
            self.apply("getitem", [x, (node, index)], {"spec": spec}, lambda v, i: np.asarray(v)[spec[:-1] + (i,)])
        else:
            value = self.pick()

            self.apply("scatter_add", [x, value, (node, index)], {"spec": spec},
                       lambda v, val, i: add_at(v, spec[:-1] + (i,), val))

    def mutate_first_input(self) -> tuple[int, Node] | None:
        """``x0[...] = v`` for the last value v, when NumPy accepts the assignment."""
        (x0_node, x0), (v_node, v) = self.values[0], self.values[-1]
        expected = np.array(x0, copy=True)
        _, exc = numpy_call(lambda: expected.__setitem__(Ellipsis, v))
        if exc is not None:
            return None
        node = self.b.op("setitem", x0_node, v_node, spec=(Ellipsis,))
        self.values.append((node, expected))
        return 0, node


def check_layout_claim(node: Node, value: Any) -> None:
    """A C or F layout on an input or a view is a promise about memory that passes may rely on; it must hold.

    (Fresh results are typed C because compiled backends allocate them C-ordered; NumPy's own ufuncs may return
    F-ordered arrays for F inputs, so the eager values of non-views are not held to it.)
    """
    t = node.tensor_type
    if not isinstance(value, np.ndarray) or not (node.op == "input" or is_view_node(node)):
        return
    if t.layout == "C":
        assert value.flags.c_contiguous, f"{node.op} claims C layout: {t}, strides {value.strides}"
    elif t.layout == "F":
        assert value.flags.f_contiguous, f"{node.op} claims F layout: {t}, strides {value.strides}"


def run_program(data: st.DataObject) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    p = Program(data, rng)
    for _ in range(data.draw(st.integers(1, 2), label="inputs")):
        p.new_input()
    for _ in range(data.draw(st.integers(1, 8), label="steps")):
        step = data.draw(st.sampled_from(["unary", "binary", "binary", "reduce", "shape_op", "other"]), label="step")
        getattr(p, step)()
    mutation = p.mutate_first_input() if data.draw(st.booleans(), label="mutate") else None
    before = np.array(p.args[0], copy=True)
    outputs = [n for n, _ in p.values]
    graph = verify(eliminate_dead(p.b.build(outputs, [mutation] if mutation else [])))
    args = [np.array(a, copy=True) if i == 0 else a for i, a in enumerate(p.args)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = eager.run(graph, args)
    for k, ((node, expected), value) in enumerate(zip(p.values, got)):
        if mutation is not None and k == 0:
            expected = before  # an output that is the mutated input keeps its pre-mutation value
        assert_same(value, expected, f"output {k} ({node.op}) of\n{graph}")
        check_layout_claim(node, value)
    if mutation is not None:
        assert_same(args[0], p.values[-1][1], f"mutated input of\n{graph}")


@given(st.data())
def test_random_programs_match_numpy(data: st.DataObject) -> None:
    run_program(data)


# -------------------------------------------------------------------------------- regressions hypothesis found


def test_regression_argmax_of_0d_array_with_axis() -> None:
    """hypothesis: ``np.argmax(f32_0d, axis=0)`` is valid NumPy (a scalar); the rule indexed shape[0] and crashed."""
    x = np.array(5.0, np.float32)
    for axis in (0, -1, None):
        for keepdims in (False, True):
            assert check_op("argmax", (x,), {"axis": axis, "keepdims": keepdims},
                            lambda v, a=axis, k=keepdims: np.argmax(v, axis=a, keepdims=k)) == "ok"
    assert check_op("argmin", (x,), {"axis": 1, "keepdims": False}, lambda v: np.argmin(v, axis=1)) == "rejected"


def test_regression_0d_axis_rules() -> None:
    """Found next to the argmax case. NumPy on a 0-d array: an *int* axis 0/-1 is accepted by argmax/argmin
    (normalize_axes used to reject -1), while the IR's tuple ``axis`` is rejected by every reduction, exactly like
    ``np.sum(x0d, axis=(0,))``."""
    x = np.array(2.5)
    for name in ("sum", "max", "mean", "var", "any"):
        for axis in ((0,), (-1,)):
            assert check_op(name, (x,), {"axis": axis, "keepdims": False},
                            lambda v, n=name, a=axis: getattr(np, n)(v, axis=a)) == "rejected"
        assert check_op(name, (x,), {"axis": (), "keepdims": False},
                        lambda v, n=name: getattr(np, n)(v, axis=())) == "ok"


def test_regression_dtype_error_wins_over_shape_error() -> None:
    """hypothesis: ``bitwise_and(f32[2], f32[3])`` is a TypeError in NumPy (the loop is resolved before
    broadcasting); the rule used to report the broadcast ValueError, so the fallback raised a different error."""
    a, b = np.ones(2, np.float32), np.ones(3, np.float32)
    assert check_op("bitwise_and", (a, b), {}, np.bitwise_and) == "rejected"
    assert check_op("where", (np.ones(2, bool), a, b), {}, np.where) == "rejected"


def test_regression_fresh_results_are_c_ordered_as_typed() -> None:
    """hypothesis: ``negative(x_F).T`` with the identity permutation was typed ``f32[2,2]`` (C) but eager returned
    NumPy's F-ordered array (ufuncs keep the operand's order), so the view's C promise was false."""
    x = np.arange(4.0, dtype=np.float32).reshape(2, 2).T
    b = GraphBuilder()
    xin = b.input(type_of(x), "x")
    neg = b.op("negative", xin)
    same = b.op("transpose", neg, axes=(0, 1))
    assert neg.type.layout == same.type.layout == "C"
    got_neg, got_same = eager.run(verify(b.build([neg, same])), [x])
    assert got_neg.flags.c_contiguous and got_same.flags.c_contiguous
    assert_same(got_same, -x)


def test_regression_reversed_slice_is_not_c_contiguous() -> None:
    """hypothesis: ``x[:, :, ::-1]`` keeps x's shape, and getitem typed it with x's C layout (strides (8, 8, -4))."""
    x = np.arange(4.0, dtype=np.float32).reshape(1, 2, 2)
    for spec in ((slice(None), slice(None), slice(None, None, -1)), (slice(None, None, -1),), (slice(0, 1), 1)):
        b = GraphBuilder()
        node = b.op("getitem", b.input(type_of(x), "x"), spec=spec)
        (got,) = eager.run(b.build([node]), [x])
        check_layout_claim(node, got)
        assert node.type.layout == "S"
    b = GraphBuilder()
    node = b.op("getitem", b.input(type_of(x.T), "x"), spec=(Ellipsis, slice(None)))
    assert node.type.layout == "F"
    check_layout_claim(node, eager.run(b.build([node]), [x.T])[0])


def test_regression_scatter_add_2d_index_1d_values() -> None:
    """hypothesis: ``scatter_add(x, x, idx_2x2)`` disagreed with np.add.at because NumPy 2.4's own fast ufunc.at
    path reads past the end of 1-D values when the index array is 2-D (garbage, different on every call). The
    reference implementation broadcasts the values to the indexed shape first; the expectation here is the
    documented semantics (every element added), spelled out as a loop.
    """
    idx = np.array([[1, 1], [-1, 0]])
    for dtype in (np.float32, np.float64, np.int64):
        x = np.array([3, 10], dtype)
        b = GraphBuilder()
        xin, iin = b.input(type_of(x), "x"), b.input(type_of(idx), "idx")
        node = b.op("scatter_add", xin, xin, iin, spec=(Operand(0),))
        (got,) = eager.run(verify(b.build([node])), [x, idx])
        expected = x.copy()
        for k in np.ndindex(idx.shape):
            expected[idx[k]] += x[k[-1]]
        assert_same(got, expected)
        weak = b.op("scatter_add", xin, b.const(2), iin, spec=(Operand(0),))  # weak scalars stay weak
        (got_weak,) = eager.run(b.build([weak]), [x, idx])
        assert_same(got_weak, x + np.array([2, 6], dtype))
