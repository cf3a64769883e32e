"""NumPy table entries for ``np.linalg`` and vector products that lower onto reductions and elementwise ops:
``np.linalg.norm`` (vector and matrix norms, ``ord``, ``axis``, ``keepdims``), ``np.vdot``, ``np.inner``.

Norms follow ``numpy.linalg.norm`` step by step (its own formulas per ``ord``), so dtypes and NaN behaviour are
NumPy's: integers are converted to float64 first, ``ord=None`` over the whole array is ``sqrt(sum(x * x))``.
Matrix ``ord=2``, ``-2`` and ``'nuc'`` take the singular values (the ``svd`` op, as NumPy does); complex inputs
break. Solvers and decompositions whose result types follow from the operands' types (``solve``, ``inv``,
``det``, ``cholesky``, ``eigh``, ``eigvalsh``, ``svd``, ``qr``, ``slogdet``, ``pinv``, ``matrix_rank``,
``matrix_power``) are graph ops run by LAPACK inside the compiled graph (``jitgraph/ir/ops/lapack.py`` and
``lapack_more.py``). ``lstsq`` is one too where its residuals (sized by the rank of the data) are dropped: they
stand as a lazy value (selections.py), and any use of them retraces with the call breaking. ``eig``/``eigvals``
(real or complex by the data) break with the reason.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.ir.ops.indexing import Operand
from jitgraph.tracer import resume
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.numpy_base import LoweringTable, always_breaks, axes_arg
from jitgraph.tracer.selections import Lazy
from jitgraph.tracer.values import TArray

TABLE = LoweringTable("numpy_linalg")
numpy, method = TABLE.numpy, TABLE.method

_INF = float("inf")


def _fail(tx: TraceContext, err: BaseException) -> None:
    tx.graph_break(str(err), err)


def _reduce(tx: TraceContext, name: str, x: Node, axis: tuple[int, ...], keepdims: bool = False) -> Node:
    return tx.op(name, x, axis=axis, keepdims=keepdims)


def _float_input(tx: TraceContext, x: Node) -> Node:
    dtype = x.tensor_type.dtype
    if dtype.kind == "c":
        tx.graph_break("np.linalg.norm of a complex array is not supported by the tracer")
    if dtype.kind not in "f":
        return tx.op("astype", x, dtype=np.dtype(np.float64))
    return x


def _vector_norm(tx: TraceContext, x: Node, ord: Any, axis: tuple[int, ...], keepdims: bool) -> Node:
    if ord == _INF:
        return _reduce(tx, "max", tx.op("absolute", x), axis, keepdims)
    if ord == -_INF:
        return _reduce(tx, "min", tx.op("absolute", x), axis, keepdims)
    if ord == 0:
        nonzero = tx.op("not_equal", x, tx.node(0))
        return tx.op("astype", _reduce(tx, "sum", nonzero, axis, keepdims), dtype=x.tensor_type.dtype)
    if ord == 1:
        return _reduce(tx, "sum", tx.op("absolute", x), axis, keepdims)
    if ord is None or ord == 2:
        return tx.op("sqrt", _reduce(tx, "sum", tx.op("multiply", x, x), axis, keepdims))
    if isinstance(ord, str):
        _fail(tx, ValueError(f"Invalid norm order '{ord}' for vectors"))
    if not isinstance(ord, int | float | np.number):
        tx.graph_break("np.linalg.norm with an ord computed from array data")
    dtype = x.tensor_type.dtype
    p = tx.node(np.asarray(ord, dtype))
    total = _reduce(tx, "sum", tx.op("power", tx.op("absolute", x), p), axis, keepdims)
    return tx.op("power", total, tx.node(np.reciprocal(np.asarray(ord, dtype))))


def _matrix_norm(tx: TraceContext, x: Node, ord: Any, axes: tuple[int, int], keepdims: bool) -> Node:
    row, col = axes
    if row == col:
        _fail(tx, ValueError("Duplicate axes given."))
    if ord in (None, "fro", "f"):
        out = tx.op("sqrt", _reduce(tx, "sum", tx.op("multiply", x, x), axes))
    elif ord in (1, -1, _INF, -_INF):
        absx = tx.op("absolute", x)
        pick = "max" if ord in (1, _INF) else "min"
        if ord in (1, -1):
            summed, other = row, col - 1 if col > row else col
        else:
            summed, other = col, row - 1 if row > col else row
        out = _reduce(tx, pick, _reduce(tx, "sum", absx, (summed,)), (other,))
    elif ord in (2, -2, "nuc"):  # NumPy's _multi_svd_norm: the singular values of the two axes moved last
        rest = [k for k in range(x.tensor_type.ndim) if k not in (row, col)]
        moved = tx.op("transpose", x, axes=(*rest, row, col))
        sv = tx.op("svd", moved, full_matrices=True, compute_uv=False, hermitian=False)
        pick = {2: "max", -2: "min", "nuc": "sum"}[ord]
        out = _reduce(tx, pick, sv, (sv.tensor_type.ndim - 1,))
    else:
        _fail(tx, ValueError("Invalid norm order for matrices."))
    if keepdims:
        shape = list(x.tensor_type.shape)
        shape[row] = shape[col] = 1
        out = tx.op("reshape", out, shape=tuple(shape))
    return out


@numpy(np.linalg.norm)
def _norm(tx: TraceContext, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    node = _float_input(tx, tx.node(x))
    t = node.tensor_type
    if isinstance(ord, TArray) or isinstance(axis, TArray):
        tx.graph_break("np.linalg.norm with ord or axis computed from array data")
    if axis is None:
        if ord is None or (ord in ("f", "fro") and t.ndim == 2) or (ord == 2 and t.ndim == 1):
            flat = tx.op("reshape", node, shape=(-1,))
            out = tx.op("sqrt", _reduce(tx, "sum", tx.op("multiply", flat, flat), (0,)))
            if keepdims:
                out = tx.op("reshape", out, shape=(1,) * t.ndim)
            return tx.result(out)
        axis = tuple(range(t.ndim))
    elif not isinstance(axis, tuple):
        if not isinstance(axis, int | np.integer):
            _fail(tx, TypeError("'axis' must be None, an integer or a tuple of integers"))
        axis = (int(axis),)
    axes = tuple(axes_arg(tx, a, t.ndim, "norm")[0] for a in axis)  # in the caller's order: (1, 0) transposes
    if len(set(axes)) != len(axes):
        _fail(tx, ValueError("Duplicate axes given."))
    if len(axes) == 1:
        return tx.result(_vector_norm(tx, node, ord, axes, bool(keepdims)))
    if len(axes) == 2:
        return tx.result(_matrix_norm(tx, node, ord, (axes[0], axes[1]), bool(keepdims)))
    _fail(tx, ValueError("Improper number of dimensions to norm."))


@numpy(np.vdot)
def _vdot(tx: TraceContext, a: Any, b: Any) -> Any:
    """``np.vdot``: the dot product of the flattened arrays (complex conjugation is not traced)."""
    x, y = tx.node(a), tx.node(b)
    if "c" in (x.tensor_type.dtype.kind, y.tensor_type.dtype.kind):
        tx.graph_break("np.vdot of complex arrays is not supported by the tracer")
    if x.tensor_type.size != y.tensor_type.size:
        _fail(tx, ValueError("cannot reshape array: vdot needs arrays of the same size"))
    flat = [tx.op("reshape", n, shape=(-1,)) for n in (x, y)]
    return tx.result(tx.op("dot", *flat))


@numpy(np.inner)
def _inner(tx: TraceContext, a: Any, b: Any) -> Any:
    """``np.inner``: a sum product over the last axes (``einsum`` with the last letters shared)."""
    x, y = tx.node(a), tx.node(b)
    if x.tensor_type.ndim == 0 or y.tensor_type.ndim == 0:
        return tx.result(tx.op("multiply", x, y))
    letters = "abcdefghijklmnopqrstuvw"
    na, nb = x.tensor_type.ndim, y.tensor_type.ndim
    sa, sb = letters[:na - 1] + "z", letters[na - 1:na + nb - 2] + "z"
    return tx.result(tx.op("einsum", x, y, subscripts=f"{sa},{sb}->{sa[:-1]}{sb[:-1]}"))


# ---- LAPACK: solvers and decompositions as graph ops (jitgraph/ir/ops/lapack.py) -----------------------------------
def _lapack_operand(tx: TraceContext, value: Any, what: str) -> Node:
    node = tx.node(value)
    if node.tensor_type.weak:
        node = tx.strong(node)
    return node


def _named(result_type: type, tx: TraceContext, node: Node, count: int) -> Any:
    """A tuple-valued LAPACK op's parts as NumPy's named tuple (``EighResult``, ``SVDResult``) of arrays."""
    parts = [tx.fresh(tx.op("tuple_get", node, index=k), "array") for k in range(count)]
    return result_type(*parts)


_EIGH_RESULT = type(np.linalg.eigh(np.eye(1)))
_SVD_RESULT = type(np.linalg.svd(np.eye(1)))


@numpy(np.linalg.solve)
def _solve(tx: TraceContext, a: Any, b: Any) -> Any:
    return tx.fresh(tx.op("solve", _lapack_operand(tx, a, "solve"), _lapack_operand(tx, b, "solve")), "array")


@numpy(np.linalg.inv)
def _inv(tx: TraceContext, a: Any) -> Any:
    return tx.fresh(tx.op("inv", _lapack_operand(tx, a, "inv")), "array")


@numpy(np.linalg.det)
def _det(tx: TraceContext, a: Any) -> Any:
    return tx.result(tx.op("det", _lapack_operand(tx, a, "det")))


@numpy(np.linalg.cholesky)
def _cholesky(tx: TraceContext, a: Any, /, *, upper: bool = False) -> Any:
    if isinstance(upper, TArray):
        tx.graph_break("np.linalg.cholesky with upper= computed from array data")
    return tx.fresh(tx.op("cholesky", _lapack_operand(tx, a, "cholesky"), upper=bool(upper)), "array")


@numpy(np.linalg.eigh)
def _eigh(tx: TraceContext, a: Any, UPLO: str = "L") -> Any:
    return _named(_EIGH_RESULT, tx, tx.op("eigh", _lapack_operand(tx, a, "eigh"), UPLO=UPLO), 2)


@numpy(np.linalg.eigvalsh)
def _eigvalsh(tx: TraceContext, a: Any, UPLO: str = "L") -> Any:
    return tx.fresh(tx.op("eigvalsh", _lapack_operand(tx, a, "eigvalsh"), UPLO=UPLO), "array")


@numpy(np.linalg.svd)
def _svd(tx: TraceContext, a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    if any(isinstance(f, TArray) for f in (full_matrices, compute_uv, hermitian)):
        tx.graph_break("np.linalg.svd with flags computed from array data")
    node = tx.op("svd", _lapack_operand(tx, a, "svd"), full_matrices=bool(full_matrices),
                 compute_uv=bool(compute_uv), hermitian=bool(hermitian))
    return _named(_SVD_RESULT, tx, node, 3) if compute_uv else tx.fresh(node, "array")


_QR_RESULT = type(np.linalg.qr(np.eye(1)))
_SLOGDET_RESULT = type(np.linalg.slogdet(np.eye(1)))
_NOT_GIVEN = object()


def _flags(tx: TraceContext, what: str, **flags: Any) -> None:
    """Flags, modes and exponents are attributes of the op: a value computed from array data breaks."""
    for name, value in flags.items():
        if isinstance(value, TArray):
            tx.graph_break(f"np.linalg.{what} with {name}= computed from array data")


class _Tolerances:
    """The tolerance keywords of one call: numbers known when tracing become attributes; one traced scalar becomes
    the op's last operand, named by the ``traced`` attribute (jitgraph/ir/ops/lapack_more.py). An array of
    tolerances (one per stacked matrix) breaks, as do two traced ones."""

    def __init__(self, tx: TraceContext, what: str) -> None:
        self.tx, self.what = tx, what
        self.attrs: dict[str, Any] = {}
        self.operands: list[Node] = []

    def add(self, name: str, value: Any) -> None:
        if value is None or isinstance(value, int | float | np.integer | np.floating):
            self.attrs[name] = value
            return
        node = self.tx.node(value) if isinstance(value, TArray) else None
        if node is None or node.tensor_type.shape != () or node.tensor_type.dtype.kind not in "biuf" or self.operands:
            self.tx.graph_break(f"np.linalg.{self.what} with {name}= an array, or a second tolerance computed at run "
                                "time (one number, known or traced, compiles)")
        self.attrs[name] = None
        self.attrs.update(traced=name, weak=node.tensor_type.weak)
        self.operands.append(node)


_DATA_TYPED = "its result is real or complex depending on the data (NumPy returns complex only when an eigenvalue is)"
for _name, _why in (("eig", f"{_DATA_TYPED}, so the graph after it cannot be typed; eigh compiles for symmetric matrices"),
                    ("eigvals", f"{_DATA_TYPED}; eigvalsh compiles for symmetric matrices")):
    TABLE.functions[getattr(np.linalg, _name)] = always_breaks(f"np.linalg.{_name}: {_why}")


@numpy(np.linalg.qr)
def _qr(tx: TraceContext, a: Any, mode: str = "reduced") -> Any:
    _flags(tx, "qr", mode=mode)
    if mode == "raw":
        tx.graph_break("np.linalg.qr(mode='raw'): LAPACK's Householder form (h, tau) is not supported by the tracer; "
                       "'reduced', 'complete' and 'r' compile")
    if mode not in ("reduced", "complete", "r"):
        tx.graph_break(f"np.linalg.qr(mode={mode!r}): only 'reduced', 'complete' and 'r' compile (NumPy runs the "
                       "deprecated modes eagerly)")
    node = tx.op("qr", _lapack_operand(tx, a, "qr"), mode=mode)
    return tx.fresh(node, "array") if mode == "r" else _named(_QR_RESULT, tx, node, 2)


@numpy(np.linalg.slogdet)
def _slogdet(tx: TraceContext, a: Any) -> Any:
    node = tx.op("slogdet", _lapack_operand(tx, a, "slogdet"))
    parts = [tx.result(tx.op("tuple_get", node, index=k)) for k in range(2)]
    return _SLOGDET_RESULT(*parts)


@numpy(np.linalg.pinv)
def _pinv(tx: TraceContext, a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _NOT_GIVEN) -> Any:
    _flags(tx, "pinv", hermitian=hermitian)
    tol = _Tolerances(tx, "pinv")
    tol.add("rcond", rcond)
    if rtol is not _NOT_GIVEN:
        if rcond is not None:
            _fail(tx, ValueError("`rtol` and `rcond` can't be both set."))
        tol.add("rtol", rtol)
    node = tx.op("pinv", _lapack_operand(tx, a, "pinv"), *tol.operands, hermitian=bool(hermitian), **tol.attrs)
    return tx.fresh(node, "array")


@numpy(np.linalg.matrix_rank)
def _matrix_rank(tx: TraceContext, A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    _flags(tx, "matrix_rank", hermitian=hermitian)
    node = _lapack_operand(tx, A, "matrix_rank")
    if node.tensor_type.ndim < 2:
        tx.graph_break("np.linalg.matrix_rank of an array with fewer than two dimensions (NumPy returns a Python int "
                       "there, not an array)")
    tolerances = _Tolerances(tx, "matrix_rank")
    tolerances.add("tol", tol)
    tolerances.add("rtol", rtol)
    rank = tx.op("matrix_rank", node, *tolerances.operands, hermitian=bool(hermitian), **tolerances.attrs)
    return tx.result(rank)


@numpy(np.linalg.matrix_power)
def _matrix_power(tx: TraceContext, a: Any, n: Any) -> Any:
    """``n`` known when tracing. ``n == 1`` is ``a`` itself in NumPy (no copy), so it is ``a`` here too."""
    _flags(tx, "matrix_power", n=n)
    try:
        n = operator.index(n)
    except TypeError:
        n = None
    node = _lapack_operand(tx, a, "matrix_power")
    t = node.tensor_type
    if t.ndim < 2:
        _fail(tx, np.linalg.LinAlgError(f"{t.ndim}-dimensional array given. Array must be at least two-dimensional"))
    if t.shape[-1] != t.shape[-2]:
        _fail(tx, np.linalg.LinAlgError("Last 2 dimensions of the array must be square"))
    if n is None:
        _fail(tx, TypeError("exponent must be an integer"))
    if n == 1:
        return a if isinstance(a, TArray) and a.kind == "array" else tx.fresh(node, "array")
    return tx.fresh(tx.op("matrix_power", node, n=n), "array")


@dataclass(eq=False)
class UnusedResiduals(Lazy):
    """``lstsq``'s residuals, which have shape ``(K,)`` or ``(0,)`` by the computed rank: a lazy value (selections.py)
    that only may be dropped. Any use retraces with its site forced, and ``lstsq`` then breaks. ``source`` (the
    singular values, of the residuals' dtype) answers ``.dtype``."""

    source: Node
    sites: frozenset[int]


_LSTSQ_USED = ("np.linalg.lstsq: the size of its residuals depends on the rank of the data, so it compiles only where "
               "they are dropped (x = lstsq(a, b)[0], or x, _, rank, s = lstsq(a, b)) in a function with no other break "
               "or data-dependent cut: here the residuals are used, or a break or cut later in the function retraced "
               "it without lazy values (selections.py)")


@numpy(np.linalg.lstsq)
def _lstsq(tx: TraceContext, a: Any, b: Any, rcond: Any = None) -> Any:
    tol = _Tolerances(tx, "lstsq")
    tol.add("rcond", rcond)  # before the lazy site: a break here is not a forced site's
    before = tx.resume.selections if tx.resume is not None else -1
    site = resume.lazy_site(tx, [a, b])
    if site is None:
        forced = tx.resume is not None and ("selection", before) in tx.resume.force
        tx.graph_break(_LSTSQ_USED if forced else "np.linalg.lstsq: the size of its residuals depends on the rank of "
                       "the data, and this trace cannot set them aside (in a loop or branch region, after a print or "
                       "a draw, or past the limit of data-dependent sites)")
    node = tx.op("lstsq", _lapack_operand(tx, a, "lstsq"), _lapack_operand(tx, b, "lstsq"), *tol.operands,
                 **tol.attrs)
    x, rank, s = (tx.op("tuple_get", node, index=k) for k in range(3))
    return tx.fresh(x, "array"), UnusedResiduals(s, frozenset({site})), tx.result(rank), tx.fresh(s, "array")


# ---- diagonals, triangles, covariance ------------------------------------------------------------------------------
def _diagonal_node(tx: TraceContext, x: Node, offset: int, axis1: int, axis2: int) -> Node:
    """NumPy's ``diagonal``: the two axes gathered by (i, i + offset), moved to the end."""
    t = x.tensor_type
    a1, a2 = (axes_arg(tx, a, t.ndim, "diagonal")[0] for a in (axis1, axis2))
    if a1 == a2:
        _fail(tx, ValueError("axis1 and axis2 cannot be the same"))
    n1, n2 = t.shape[a1], t.shape[a2]
    start1, start2 = (0, offset) if offset >= 0 else (-offset, 0)
    length = max(0, min(n1 - start1, n2 - start2))
    if t.ndim == 2 and (a1, a2) == (0, 1):
        # A strided slice of the flattened matrix (every (n2 + 1)-th element): no index arrays, so loop bodies and
        # kernels read it directly.
        first = start1 * n2 + start2
        flat = tx.op("reshape", x, shape=(-1,))
        return tx.op("getitem", flat, spec=(slice(first, first + length * (n2 + 1), n2 + 1),))
    rest = [k for k in range(t.ndim) if k not in (a1, a2)]
    moved = tx.op("transpose", x, axes=(*rest, a1, a2))
    rows = tx.builder.const(np.arange(start1, start1 + length))
    cols = tx.builder.const(np.arange(start2, start2 + length))
    spec = (slice(None),) * len(rest) + (Operand(0), Operand(1))
    return tx.op("getitem", moved, rows, cols, spec=spec)


@numpy(np.diagonal)
@method("diagonal")
def _diagonal(tx: TraceContext, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    x = tx.node(a)
    if x.tensor_type.ndim < 2:
        _fail(tx, ValueError("diag requires an array of at least two dimensions"))
    return tx.fresh(_diagonal_node(tx, x, int(offset), axis1, axis2), "array")


@numpy(np.trace)
@method("trace")
def _trace(tx: TraceContext, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
           out: Any = None) -> Any:
    if out is not None:
        tx.graph_break("trace(out=...) is not supported by the tracer")
    x = tx.node(a)
    if x.tensor_type.ndim < 2:
        _fail(tx, ValueError("diag requires an array of at least two dimensions"))
    d = _diagonal_node(tx, x, int(offset), axis1, axis2)
    attrs: dict[str, Any] = {"axis": (d.tensor_type.ndim - 1,), "keepdims": False}
    if dtype is not None:
        attrs["dtype"] = np.dtype(dtype)
    return tx.result(tx.op("sum", d, **attrs))


@numpy(np.diag)
def _diag(tx: TraceContext, v: Any, k: int = 0) -> Any:
    x = tx.node(v)
    t = x.tensor_type
    if t.ndim == 2:
        return tx.fresh(_diagonal_node(tx, x, int(k), 0, 1), "array")
    if t.ndim != 1:
        _fail(tx, ValueError("Input must be 1- or 2-d."))
    n = t.shape[0] + abs(int(k))
    first = max(0, -int(k)) * n + max(0, int(k))
    # v stored into every (n + 1)-th element of a flat zeros (a strided slice store, no index arrays), then reshaped
    base = tx.op("zeros", shape=(n * n,), dtype=t.dtype)
    out = tx.op("setitem", base, x, spec=(slice(first, first + t.shape[0] * (n + 1), n + 1),))
    return tx.fresh(tx.op("reshape", out, shape=(n, n)), "array")


def _triangle(lower: bool) -> Any:
    def lowering(tx: TraceContext, m: Any, k: int = 0) -> Any:
        x = tx.node(m)
        t = x.tensor_type
        if t.ndim < 2:
            tx.graph_break(f"np.{'tril' if lower else 'triu'} of a 1-D array (NumPy broadcasts it to a square)")
        mask = np.tri(t.shape[-2], t.shape[-1], int(k) - (0 if lower else 1), dtype=bool)
        keep = tx.builder.const(mask if lower else ~mask)
        return tx.fresh(tx.op("where", keep, x, tx.op("zeros", shape=(), dtype=t.dtype)), "array")

    return lowering


TABLE.functions[np.tril] = _triangle(True)
TABLE.functions[np.triu] = _triangle(False)


@numpy(np.cov)
def _cov(tx: TraceContext, m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
         fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    """NumPy's covariance: rows are variables (``rowvar``), centred, ``X @ X.T / (N - ddof)``."""
    if y is not None or fweights is not None or aweights is not None or dtype is not None:
        tx.graph_break("np.cov with y=, fweights=, aweights= or dtype= is not supported by the tracer")
    x = tx.node(m)
    t = x.tensor_type
    if t.ndim > 2:
        _fail(tx, ValueError("m has more than 2 dimensions"))
    if t.dtype.kind == "c":
        tx.graph_break("np.cov of complex values is not supported by the tracer")
    dt = np.result_type(t.dtype, np.float64)
    x = tx.op("astype", x, dtype=dt)
    if t.ndim < 2:
        x = tx.op("reshape", x, shape=(1, -1))
    elif not rowvar:
        x = tx.op("transpose", x, axes=(1, 0))
    n = x.tensor_type.shape[1]
    dd = (0 if bias else 1) if ddof is None else int(ddof)
    if n - dd <= 0:
        tx.graph_break("np.cov with no degrees of freedom left (NumPy warns and divides by zero)")
    centred = tx.op("subtract", x, tx.op("mean", x, axis=(1,), keepdims=True))
    c = tx.op("matmul", centred, tx.op("transpose", centred, axes=(1, 0)))
    c = tx.op("multiply", c, tx.node(np.asarray(1.0 / (n - dd), dt)))
    if x.tensor_type.shape[0] == 1:
        c = tx.op("reshape", c, shape=())
    return tx.fresh(c, "array")


TABLE.note("complex input", np.linalg.norm)
TABLE.note("complex input (the conjugate)", np.vdot)
TABLE.note("out=", np.trace, ".trace")
TABLE.note("1-D input (NumPy broadcasts it to a square)", np.tril, np.triu)
TABLE.note("y=, fweights=, aweights=, dtype=; complex input", np.cov)
TABLE.note("runs through LAPACK (never inside a kernel or loop body); a singular matrix reruns the call eagerly, "
           "which raises NumPy's LinAlgError", np.linalg.solve, np.linalg.inv, np.linalg.cholesky)
TABLE.note("runs through LAPACK (never inside a kernel or loop body)", np.linalg.det, np.linalg.eigh,
           np.linalg.eigvalsh, np.linalg.svd, np.linalg.slogdet)
TABLE.note("mode='raw' (LAPACK's Householder form); runs through LAPACK", np.linalg.qr)
TABLE.note("an array of tolerances (one per stacked matrix); runs through LAPACK; LinAlgError reruns eagerly",
           np.linalg.pinv)
TABLE.note("1-D input (NumPy returns a Python int); an array of tolerances, or tol and rtol both traced; runs "
           "through LAPACK", np.linalg.matrix_rank)
TABLE.note("an exponent computed from array data; n < 0 on a singular matrix reruns eagerly (LinAlgError)",
           np.linalg.matrix_power)
TABLE.note("any use of the residuals (their size depends on the rank of the data: the call then runs eagerly); "
           "inside a loop or branch region", np.linalg.lstsq)
