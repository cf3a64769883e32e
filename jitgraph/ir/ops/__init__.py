"""The op table: every IR op is defined exactly once, with its type rule and its NumPy reference implementation.

The reference implementation is the executable specification. The eager backend runs it, and every test of a
compiled backend compares against it. An op's ``kind`` lets passes ask structural questions ("is this
elementwise?") without knowing op names.

Modules by kind register into :data:`OPS` when this package is imported.
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
    aliases the first input in NumPy (the tracer uses it to route in-place updates of views to their base).
    """

    name: str
    kind: OpKind
    infer: InferFn
    impl: Callable[..., Any] | None
    is_view: bool = False
    doc: str = ""

    @property
    def is_elementwise(self) -> bool:
        return self.kind is OpKind.ELEMENTWISE


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


def ops_of_kind(kind: OpKind) -> list[Op]:
    return [op for op in OPS.values() if op.kind is kind]


# Registration happens on import; the order only affects listing order.
from jitgraph.ir.ops import special, elementwise, reduction, shape, linalg, indexing, creation  # noqa: E402,F401
