"""The op table itself: :class:`Op`, :data:`OPS`, :func:`define` and :func:`get_op`, with no op defined yet.

The ops are defined by the modules of :mod:`jitgraph.ir.ops`, which register into :data:`OPS` when that package
is imported (``import jitgraph.ir`` does). The table lives in this leaf module, apart from the definitions, because
both sides need it: the op modules build region graphs with :class:`~jitgraph.ir.graph.GraphBuilder`, and the
builder infers each node's type through :func:`get_op`. With the table here, ``graph`` imports ``optable`` and the
op modules import ``graph``, and no import goes round in a circle.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jitgraph.errors import UnsupportedError


class OpKind(enum.Enum):
    ELEMENTWISE = "elementwise"
    REDUCTION = "reduction"
    SHAPE = "shape"
    LINALG = "linalg"
    LAPACK = "lapack"  # solvers and decompositions: NumPy runs them (no kernel or loop-body emitter)
    INDEXING = "indexing"
    CREATION = "creation"
    REGION = "region"
    SPECIAL = "special"  # input, const, tuple_get


InferFn = Callable[[tuple[Any, ...], Mapping[str, Any], tuple[Any, ...]], Any]


@dataclass(frozen=True)
class Op:
    """One IR primitive.

    ``infer(input_types, attrs, regions) -> type`` raises :class:`~jitgraph.errors.TypeInferenceError` for inputs
    NumPy would reject. ``impl(*values, **attrs)`` computes the result with NumPy. ``is_view`` says the result
    *may* alias the first input in NumPy (the tracer uses it to route in-place updates of views to their base);
    ``view_rule(input_types, attrs)`` refines that per application where NumPy decides by the operands
    (``x[1:]`` is a view, ``x[idx_array]`` and ``x[1, 2]`` are copies). Ask :meth:`makes_view` or
    :func:`is_view_node` rather than reading ``is_view`` directly. ``raises`` says the implementation may raise on
    its operands' values, not only their types (LAPACK on a singular matrix): such a node is never dropped as dead
    and orders the graph's effects (``ir.graph.may_raise``). ``by_numpy`` says no backend computes the op in its own
    code: compiled code calls NumPy's routine for it (sorts, histograms, ``np.convolve``...); ask :attr:`runs_numpy`,
    which also counts the LAPACK kind (the tracer keeps such calls out of loop bodies where it can).
    """

    name: str
    kind: OpKind
    infer: InferFn
    impl: Callable[..., Any] | None
    is_view: bool = False
    doc: str = ""
    view_rule: Callable[[tuple[Any, ...], Mapping[str, Any]], bool] | None = None
    raises: bool = False
    by_numpy: bool = False

    @property
    def is_elementwise(self) -> bool:
        return self.kind is OpKind.ELEMENTWISE

    @property
    def runs_numpy(self) -> bool:
        """Whether compiled code runs NumPy's own routine for this op (a call out, not generated code)."""
        return self.by_numpy or self.kind is OpKind.LAPACK

    def makes_view(self, input_types: tuple[Any, ...], attrs: Mapping[str, Any]) -> bool:
        """Whether this application's result aliases its first input in NumPy."""
        if not self.is_view:
            return False
        return True if self.view_rule is None else self.view_rule(input_types, attrs)


OPS: dict[str, Op] = {}


def define(op: Op) -> Op:
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} defined twice")
    OPS[op.name] = op
    return op


def get_op(name: str) -> Op:
    try:
        return OPS[name]
    except KeyError:
        raise UnsupportedError(f"no IR op named {name!r}",
                               hint="add it to the op table in jitgraph/ir/ops/") from None


def is_view_node(node: Any) -> bool:
    """Whether ``node``'s value aliases its first input in NumPy (an in-place update of it lands in the base)."""
    return get_op(node.op).makes_view(tuple(i.type for i in node.inputs), node.attrs)
