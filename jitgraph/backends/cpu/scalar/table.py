"""The loop driver's construct emitters, by op name and by op kind, in one table.

Kept apart from the emitter core (:mod:`.core`) so that the core imports no construct module: each construct module
imports the core, and this table imports them all.
"""

from __future__ import annotations

from jitgraph.backends.cpu.scalar import groups, indexing, numpy_calls, ops, regions
from jitgraph.backends.cpu.scalar.core import Table
from jitgraph.ir.ops import OpKind

TABLE = Table(
    by_op={
        "const": ops.emit_const, "check": ops.emit_check, "to_python": ops.emit_to_python,
        "tuple_get": ops.emit_tuple_get,
        "getitem": indexing.emit_getitem, "setitem": indexing.emit_setitem,
        "transpose": indexing.emit_view, "reshape": indexing.emit_view, "broadcast_to": indexing.emit_view,
        "loop": regions.emit_loop, "while": regions.emit_while, "cond": regions.emit_cond,
        "fused": groups.emit_fused,
        **dict.fromkeys(numpy_calls.CALLED, numpy_calls.emit_numpy_call),
    },
    by_kind={
        OpKind.ELEMENTWISE: ops.emit_elementwise, OpKind.REDUCTION: ops.emit_reduction,
        OpKind.LINALG: ops.emit_linalg, OpKind.CREATION: ops.emit_creation,
    },
)
