"""Ops the driver runs by calling NumPy itself, in a ``numba.objmode`` block: LAPACK (``solve``, ``inv``, ``det``,
``cholesky``, ``eigh``, ``eigvalsh``, ``svd``), ``sort``/``argsort``, ``histogram`` and the quantile family.

Why NumPy and not Numba's own ``np.linalg``/``np.argsort``: those give different answers. Numba's ``inv`` and
``cholesky`` call other LAPACK routines or builds (results differ from NumPy's in the last bits), it has no stacked
matrices, its error messages differ, and ``argsort``'s default quicksort may order ties differently. Calling the
op's reference implementation (``OPS[op].impl``, what the eager interpreter runs) gives NumPy's values, dtypes,
warnings and exceptions by construction. Without this emitter a graph with one such op inside a loop ran entirely
in the reference interpreter; now only the call itself goes through Python (a few microseconds of object-mode
entry per call) and the rest of the loop is compiled. A loop whose body makes such a call holds the GIL, so it is
never a ``prange`` (:func:`needs_gil`).
"""

from __future__ import annotations

import numba
import numpy as np

from jitgraph.backends.cpu.scalar.core import Emitter, dtype_ctor
from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Graph, Node, TupleType
from jitgraph.ir.ops import OPS
from jitgraph.ir.types import TensorType

CALLED = ("solve", "inv", "det", "cholesky", "eigh", "eigvalsh", "svd", "qr", "slogdet", "pinv", "matrix_rank", "matrix_power",
          "lstsq", "sort", "argsort", "histogram", "quantile")

# The reference implementations, by the names generated code calls them (the driver adds them to its namespace).
REFERENCE = {f"ref_{op}": OPS[op].impl for op in CALLED}

_PLAIN = (bool, int, float, str, type(None))

# Entering object mode costs more than Python's own call (measured 3-10 us per call against NumPy's ~1-2 us per
# small op): a loop body of calls alone ran 0.7x eager (solve 8x8, 100 trips), while Newton's method (ten
# compiled array ops per solve) ran 1.4x. Below this many compiled array ops per call the graph runs eagerly.
WORK_PER_CALL = 8
_FREE = ("input", "const", "getitem", "tuple_get", "transpose", "reshape", "broadcast_to", "check")


def needs_gil(body: Graph) -> bool:
    """Whether ``body`` (or a region nested in it) calls NumPy through object mode."""
    return any(n.op in CALLED or any(needs_gil(r) for r in n.regions) for n in body.nodes)


def _literal(value: object) -> str:
    """An attribute as source text; only plain values, whose ``repr`` reads back as the same value."""
    if isinstance(value, tuple | list) and all(isinstance(v, _PLAIN) for v in value) or isinstance(value, _PLAIN):
        return repr(value)
    raise UnsupportedError(f"an attribute value {value!r} cannot be written into the loop driver",
                           hint="the graph runs on the eager backend instead")


def _type_text(t: TensorType) -> str:
    """The Numba type of a result as ``objmode`` reads it: ``float64``, ``int64[:, ::1]`` (C-contiguous)."""
    base = "boolean" if t.dtype == np.dtype(bool) else str(numba.from_dtype(t.dtype))
    if t.shape == ():
        return base
    return f"{base}[{', '.join([':'] * (t.ndim - 1) + ['::1'])}]"


def _value(t: TensorType, text: str) -> str:
    """A result converted to what its declared type says: C-contiguous arrays, exact-dtype scalars."""
    return f"np.ascontiguousarray({text})" if t.shape != () else f"{dtype_ctor(t.dtype)}({text})"


def _work(body: Graph) -> tuple[int, int]:
    """(compiled array ops, NumPy calls) directly in ``body``; a fused group counts its members, a nested region
    counts as enough work for one call."""
    work = calls = 0
    for n in body.nodes:
        if n.op in CALLED:
            calls += 1
        elif n.op == "fused":
            work += sum(len(r.nodes) - len(r.inputs) for r in n.regions)
        elif n.regions:
            work += WORK_PER_CALL
        elif n.op not in _FREE and isinstance(n.type, TensorType) and n.type.shape != ():
            work += 1
    return work, calls


def _used(em: Emitter, node: Node) -> set[int]:
    """The tuple elements some ``tuple_get`` reads: objmode refuses to declare a variable nobody reads after it."""
    return {n.attrs["index"] for n in em.scope.graph.nodes if n.op == "tuple_get" and n.inputs[0] is node}


def emit_numpy_call(em: Emitter, node: Node, indent: int) -> None:
    """``with numba.objmode(v5="float64[:, ::1]"): v5 = np.ascontiguousarray(ref_inv(v3))``; a tuple result gets
    one variable per element read later (``v7_1``), which ``tuple_get`` finds in ``em.results``."""
    if em.loop_depth:
        work, calls = _work(em.scope.graph)
        if work < WORK_PER_CALL * calls:
            raise UnsupportedError(f"a loop body with {calls} NumPy call(s) ({node.op}) and {work} other array "
                                   "op(s) would run slower compiled than eagerly (object mode per call)",
                                   hint="the function runs eagerly")
    is_tuple = isinstance(node.type, TupleType)
    types = list(node.type.elements) if is_tuple else [node.type]
    if not all(isinstance(t, TensorType) for t in types):
        raise UnsupportedError(f"{node.op} with a nested result is not supported in loop bodies")
    name = em.vname(node)
    args = [em.var[i] for i in node.inputs] + [f"{k}={_literal(v)}" for k, v in node.attrs.items()]
    call = f"ref_{node.op}({', '.join(args)})"
    if not is_tuple:
        em.write(indent, f"with numba.objmode({name}={_type_text(types[0])!r}):  # NumPy's own {node.op} "
                         "(numpy_calls.py)")
        em.write(indent + 1, f"{name} = {_value(types[0], call)}")
        em.var[node] = name
        if types[0].shape != ():
            em.scope.fresh(node, owned=True)
        return
    used = _used(em, node)
    names = [f"{name}_{k}" for k in range(len(types))]
    declared = ", ".join(f"{n}={_type_text(t)!r}" for k, (n, t) in enumerate(zip(names, types)) if k in used)
    em.write(indent, f"with numba.objmode({declared}):  # NumPy's own {node.op} (numpy_calls.py)")
    em.write(indent + 1, f"r{name[1:]} = {call}")
    for k, (n, t) in enumerate(zip(names, types)):
        if k in used:
            em.write(indent + 1, f"{n} = {_value(t, f'r{name[1:]}[{k}]')}")
    em.results[node] = names
    em.result_roots[node] = [(frozenset(), "owned")] * len(names)
