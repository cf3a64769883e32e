"""The op table: every IR op is defined exactly once, with its type rule and its NumPy reference implementation.

The reference implementation is the executable specification. The eager backend runs it, and every test of a
compiled backend compares against it. An op's ``kind`` lets passes ask structural questions ("is this
elementwise?") without knowing op names.

The table and the :class:`Op` record live in :mod:`jitgraph.ir.optable`; the modules by kind imported below
register into :data:`OPS` when this package is imported.
"""

from __future__ import annotations

from jitgraph.ir.optable import OPS, InferFn, Op, OpKind, define, get_op, is_view_node

__all__ = ["OPS", "InferFn", "Op", "OpKind", "define", "get_op", "is_view_node"]

# Registration happens on import; the order only affects listing order.
from jitgraph.ir.ops import special, elementwise, reduction, shape, linalg, indexing, creation, region, control  # noqa: F401, I001
from jitgraph.ir.ops import scan, sorting, lapack, lapack_more, histogram, quantile, numpy_calls  # noqa: F401
