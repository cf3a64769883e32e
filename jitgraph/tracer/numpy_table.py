"""The one table from NumPy callables (functions, ufuncs, scalar types, array methods) to IR ops.

A callable missing from the table is a graph break naming it. The entries live in seven modules by family, each with its
own :class:`~jitgraph.tracer.numpy_base.LoweringTable`: ``numpy_math`` (ufuncs, reductions, products, ufunc methods),
``numpy_shapes`` (squeeze/expand_dims/swapaxes/ravel/``.T`` onto reshape/transpose, concatenation), ``numpy_creation``
(zeros/ones/full, the ``*_like`` creators, arange, eye, array/asarray/copy, astype, scalar types), ``numpy_linalg``
(norms, vdot, inner, diagonals, triangles, cov; named breaks for decompositions), ``numpy_stats`` (cumsum/cumprod, diff,
searchsorted, nan-sums, average, isclose, take, split, meshgrid) and ``numpy_arrays`` (pad, flip, repeat, tile,
linspace, column_stack, atleast_*d, round, array_equal, ufunc.outer, sort/argsort; named breaks for data-dependent
sizes) and ``numpy_composite`` (roll, tensordot, kron, ptp, append, nan_to_num, trapezoid, corrcoef, diagflat and
constant creators such as tri and triu_indices). Merging them here, not registering into shared dicts at import, makes this module the whole table.
"""

from __future__ import annotations

from jitgraph.tracer import (
    numpy_arrays,
    numpy_composite,
    numpy_creation,
    numpy_linalg,
    numpy_math,
    numpy_shapes,
    numpy_stats,
)
from jitgraph.tracer.numpy_base import merge, merge_notes

_TABLES = [numpy_math.TABLE, numpy_shapes.TABLE, numpy_creation.TABLE, numpy_linalg.TABLE, numpy_arrays.TABLE,
           numpy_stats.TABLE, numpy_composite.TABLE]
NUMPY, ARRAY_METHODS, UFUNC_METHODS = merge(_TABLES)
"""NumPy callables -> lowerings; ndarray method names -> lowerings; ufunc method names (``at``, ``reduce``)."""

NOTES = merge_notes(_TABLES)
"""What each entry does not support (see ``LoweringTable.notes``), for docs/supported.md."""

__all__ = ["ARRAY_METHODS", "NOTES", "NUMPY", "UFUNC_METHODS"]
