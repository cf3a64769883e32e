"""LAPACK: solvers and decompositions (``np.linalg.solve``, ``inv``, ``det``, ``cholesky``, ``eigh``, ``eigvalsh``,
``svd``) as graph ops that every backend runs through NumPy, like the BLAS products and the sorts: no kernel emits
them, so a function that calls them is still one graph, the LAPACK call one line of the compiled driver.

Their results' types follow from the operands' types alone (``eig``, real or complex by the data, is not here), and
NumPy's own routine is the implementation, so values, dtypes and errors are NumPy's. A singular matrix raises at run
time (``raises=True``): the node is never dropped as dead, and the driver reruns the call eagerly, which raises
NumPy's own ``LinAlgError``. Shapes are checked here as NumPy checks them (at least two dimensions, square where the
routine needs it, matching core dimensions), with NumPy's exception for the eager rerun to show. ``qr``, ``slogdet``,
``pinv``, ``matrix_rank``, ``matrix_power`` and ``lstsq`` are in :mod:`jitgraph.ir.ops.lapack_more`, with the same
helpers (:func:`check_stacked`, :func:`result_dtypes`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.ir.graph import TupleType
from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import broadcast, type_error
from jitgraph.ir.types import TensorType


def check_stacked(t: TensorType, square: bool = True) -> None:
    """NumPy's checks of a stack of matrices (``numpy.linalg._assert_stacked_2d`` / ``_assert_stacked_square``)."""
    if t.ndim < 2:
        err = np.linalg.LinAlgError(f"{t.ndim}-dimensional array given. Array must be at least two-dimensional")
        raise type_error(str(err), err)
    if square and t.shape[-1] != t.shape[-2]:
        err = np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
        raise type_error(str(err), err)


def result_dtypes(fn: Callable[..., Any], types: tuple[TensorType, ...], what: str) -> list[np.dtype]:
    """The result dtypes of ``fn`` on 1x1 identity prototypes of ``types`` (NumPy decides: ints become float64,
    float16 is refused with NumPy's TypeError)."""
    protos = [np.ones((1,) * min(t.ndim, 2), t.dtype) for t in types]
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fn(*protos)
    except Exception as exc:  # NumPy rejects these dtypes: the call runs eagerly to show its error
        raise type_error(f"{what}: {exc}", exc) from exc
    parts = result if isinstance(result, tuple) else (result,)
    return [np.asarray(p).dtype for p in parts]


def _one(types: tuple[TensorType, ...], shape: tuple[int, ...], fn: Callable[..., Any], what: str) -> TensorType:
    return TensorType(shape, result_dtypes(fn, types, what)[0])


# ---- solve, inv, det, cholesky ---------------------------------------------------------------------------------
def _infer_solve(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    a, b = types
    check_stacked(a)
    m = a.shape[-1]
    if b.ndim == 1:  # NumPy 2: a 1-D b is one vector; its batch is a's
        if b.shape[0] != m:
            err = ValueError(f"solve1: Input operand 1 has a mismatch in its core dimension 0 (size {b.shape[0]} is "
                             f"different from {m})")
            raise type_error(str(err), err)
        return _one(types, a.shape[:-1], np.linalg.solve, "solve")
    if b.ndim < 2 or b.shape[-2] != m:
        err = ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0 (size {b.shape[-2]} is "
                         f"different from {m})" if b.ndim >= 2 else "solve: b must be at least 1-D")
        raise type_error(str(err), err)
    batch = broadcast([a.shape[:-2], b.shape[:-2]], "solve")
    return _one(types, batch + (m, b.shape[-1]), np.linalg.solve, "solve")


def _infer_inv(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    (a,) = types
    check_stacked(a)
    return _one(types, a.shape, np.linalg.inv, "inv")


def _infer_det(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    (a,) = types
    check_stacked(a)
    return _one(types, a.shape[:-2], np.linalg.det, "det")


def _infer_cholesky(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    (a,) = types
    check_stacked(a)
    return _one(types, a.shape, np.linalg.cholesky, "cholesky")


def _cholesky(a: Any, upper: bool = False) -> Any:
    return np.linalg.cholesky(a, upper=upper) if upper else np.linalg.cholesky(a)


# ---- eigh, eigvalsh, svd ---------------------------------------------------------------------------------------
def _uplo(attrs: dict, what: str) -> str:
    uplo = attrs.get("UPLO", "L")
    if uplo not in ("L", "U"):
        err = ValueError("UPLO argument must be 'L' or 'U'")
        raise type_error(f"{what}: {err}", err)
    return uplo


def _infer_eigh(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TupleType:
    (a,) = types
    check_stacked(a)
    _uplo(attrs, "eigh")
    w, v = result_dtypes(np.linalg.eigh, types, "eigh")
    return TupleType((TensorType(a.shape[:-1], w), TensorType(a.shape, v)))


def _infer_eigvalsh(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    (a,) = types
    check_stacked(a)
    _uplo(attrs, "eigvalsh")
    return _one(types, a.shape[:-1], np.linalg.eigvalsh, "eigvalsh")


def _eigh(a: Any, UPLO: str = "L") -> tuple[Any, Any]:
    return tuple(np.linalg.eigh(a, UPLO=UPLO))


def _eigvalsh(a: Any, UPLO: str = "L") -> Any:
    return np.linalg.eigvalsh(a, UPLO=UPLO)


def _infer_svd(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType | TupleType:
    (a,) = types
    check_stacked(a, square=False)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    dts = result_dtypes(lambda x: np.linalg.svd(x, compute_uv=attrs.get("compute_uv", True)), types, "svd")
    if not attrs.get("compute_uv", True):
        return TensorType(batch + (k,), dts[0])
    full = attrs.get("full_matrices", True)
    u_shape = batch + ((m, m) if full else (m, k))
    vh_shape = batch + ((n, n) if full else (k, n))
    return TupleType((TensorType(u_shape, dts[0]), TensorType(batch + (k,), dts[1]), TensorType(vh_shape, dts[2])))


def _svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    result = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, hermitian=hermitian)
    return tuple(result) if compute_uv else result


define(Op("solve", OpKind.LAPACK, _infer_solve, np.linalg.solve, raises=True,
          doc="np.linalg.solve(a, b) through LAPACK (a 1-D b is one vector, as in NumPy 2); LinAlgError if singular"))
define(Op("inv", OpKind.LAPACK, _infer_inv, np.linalg.inv, raises=True,
          doc="np.linalg.inv(a) through LAPACK; LinAlgError if singular"))
define(Op("det", OpKind.LAPACK, _infer_det, np.linalg.det, doc="np.linalg.det(a) through LAPACK (LU)"))
define(Op("cholesky", OpKind.LAPACK, _infer_cholesky, _cholesky, raises=True,
          doc="np.linalg.cholesky(a, upper) through LAPACK; LinAlgError if not positive definite"))
define(Op("eigh", OpKind.LAPACK, _infer_eigh, _eigh, raises=True,
          doc="np.linalg.eigh(a, UPLO): (eigenvalues, eigenvectors), a tuple; LinAlgError if it does not converge"))
define(Op("eigvalsh", OpKind.LAPACK, _infer_eigvalsh, _eigvalsh, raises=True,
          doc="np.linalg.eigvalsh(a, UPLO): eigenvalues of a symmetric matrix, ascending"))
define(Op("svd", OpKind.LAPACK, _infer_svd, _svd, raises=True,
          doc="np.linalg.svd(a, full_matrices, compute_uv, hermitian): (U, S, Vh) or S; LinAlgError if it does not "
              "converge"))
