"""More LAPACK ops (``np.linalg.qr``, ``slogdet``, ``pinv``, ``matrix_rank``, ``matrix_power``, ``lstsq``), defined
as :mod:`jitgraph.ir.ops.lapack` defines ``solve`` and ``svd``: NumPy's own function is the reference implementation
that every backend calls, so values, dtypes and errors are NumPy's; the type rules check shapes as NumPy does and
take result dtypes from NumPy itself on 1x1 prototypes.

``lstsq`` is the one whose NumPy result does not have a type fixed by its operands: the size of ``residuals``
depends on the computed rank. The op returns ``(x, rank, s)`` only; the tracer (``jitgraph/tracer/numpy_linalg.py``)
stands a lazy value for the residuals, and any use of them retraces with the call cut out of the graph.
``matrix_power``'s exponent is an attribute known when tracing; ``matrix_power(a, 1)`` (NumPy returns ``a`` itself)
never reaches an op.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.graph import TupleType
from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.lapack import check_stacked, result_dtypes
from jitgraph.ir.ops.rules import type_error
from jitgraph.ir.types import TensorType

QR_MODES = ("reduced", "complete", "r")


# ---- qr, slogdet ------------------------------------------------------------------------------------------------
def _infer_qr(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType | TupleType:
    (a,) = types
    check_stacked(a, square=False)
    mode = attrs.get("mode", "reduced")
    if mode not in QR_MODES:
        err = ValueError(f"Unrecognized mode '{mode}'")
        raise type_error(f"qr: {err}", err)
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    dts = result_dtypes(lambda x: _qr(x, mode), types, "qr")
    if mode == "r":
        return TensorType(batch + (k, n), dts[0])
    q_cols, r_rows = (m, m) if mode == "complete" else (k, k)
    return TupleType((TensorType(batch + (m, q_cols), dts[0]), TensorType(batch + (r_rows, n), dts[1])))


def _qr(a: Any, mode: str = "reduced") -> Any:
    result = np.linalg.qr(a, mode=mode)
    return result if mode == "r" else tuple(result)


def _infer_slogdet(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TupleType:
    (a,) = types
    check_stacked(a)
    sign, logdet = result_dtypes(_slogdet, types, "slogdet")
    return TupleType((TensorType(a.shape[:-2], sign), TensorType(a.shape[:-2], logdet)))


def _slogdet(a: Any) -> tuple[Any, Any]:
    return tuple(np.linalg.slogdet(a))


# ---- tolerances ---------------------------------------------------------------------------------------------------
# A tolerance (pinv's rcond/rtol, matrix_rank's tol/rtol, lstsq's rcond) known when tracing is an attribute; one
# computed at run time (a traced scalar) is the op's last operand, and the attribute ``traced`` names the keyword it
# fills. ``weak`` says it was a Python number: NumPy gets one, as in the eager call (else a NumPy scalar of its dtype).
_TOLERANCE_ATTRS = ("traced", "weak")


def _tolerance_operand(types: tuple[TensorType, ...], count: int, attrs: dict, what: str) -> tuple[TensorType, ...]:
    """The matrix operands; the traced tolerance after them must be a scalar (an array of tolerances broadcasts
    against the stack in NumPy, which these type rules do not follow)."""
    extra = types[count:]
    if len(extra) != (1 if attrs.get("traced") else 0) or any(t.ndim for t in extra):
        err = ValueError(f"{what}: a traced tolerance must be one scalar operand")
        raise type_error(str(err), err)
    return types[:count]


def _numpy_kwargs(tolerance: tuple[Any, ...], attrs: dict) -> dict[str, Any]:
    """The keywords for NumPy: the attributes, with the traced tolerance (if any) under the name ``traced`` gives."""
    kwargs = {k: v for k, v in attrs.items() if k not in _TOLERANCE_ATTRS}
    name = attrs.get("traced")
    if name is not None:
        value = np.asarray(tolerance[0])
        kwargs[name] = value.item() if attrs.get("weak") else value[()]
    return kwargs


# ---- pinv, matrix_rank -------------------------------------------------------------------------------------------
def _infer_pinv(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    (a,) = _tolerance_operand(types, 1, attrs, "pinv")
    check_stacked(a, square=False)
    if a.shape[-1] * a.shape[-2] == 0:  # NumPy returns an empty array of a's own dtype there, with no SVD
        dtype = a.dtype
    else:
        dtype = result_dtypes(lambda x, *tol: _pinv(x, *tol, **attrs), types, "pinv")[0]
    return TensorType(a.shape[:-2] + (a.shape[-1], a.shape[-2]), dtype)


def _pinv(a: Any, *tolerance: Any, **attrs: Any) -> Any:
    """``rtol`` is in ``attrs`` only when the caller gave it: NumPy tells "not given" from None."""
    return np.linalg.pinv(a, **_numpy_kwargs(tolerance, attrs))


def _infer_matrix_rank(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    (a,) = _tolerance_operand(types, 1, attrs, "matrix_rank")
    if a.ndim < 2:  # NumPy returns a Python int there; the tracer keeps such calls out of the graph
        err = ValueError("matrix_rank of an array with fewer than two dimensions is a Python int")
        raise type_error(str(err), err)
    dtype = result_dtypes(lambda x, *tol: np.asarray(_matrix_rank(x, *tol, **attrs)), types, "matrix_rank")[0]
    return TensorType(a.shape[:-2], dtype)


def _matrix_rank(a: Any, *tolerance: Any, **attrs: Any) -> Any:
    return np.linalg.matrix_rank(a, **_numpy_kwargs(tolerance, attrs))


# ---- matrix_power, lstsq ---------------------------------------------------------------------------------------------
def _infer_matrix_power(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    (a,) = types
    check_stacked(a)
    n = attrs["n"]
    return TensorType(a.shape, result_dtypes(lambda x: np.linalg.matrix_power(x, n), types, "matrix_power")[0])


def _matrix_power(a: Any, n: int) -> Any:
    return np.linalg.matrix_power(a, n)


def _infer_lstsq(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TupleType:
    """NumPy's ``lstsq`` checks: two-dimensional ``a``, ``b`` 1- or 2-D (not stacked), ``b``'s rows ``a``'s."""
    a, b = _tolerance_operand(types, 2, attrs, "lstsq")
    for t in (a, b if b.ndim != 1 else None):
        if t is not None and t.ndim != 2:
            err = np.linalg.LinAlgError(f"{t.ndim}-dimensional array given. Array must be two-dimensional")
            raise type_error(str(err), err)
    m, n = a.shape
    if b.shape[0] != m:
        err = np.linalg.LinAlgError("Incompatible dimensions")
        raise type_error(str(err), err)
    x, _, rank, s = result_dtypes(lambda p, q, *tol: np.linalg.lstsq(p, q, **_numpy_kwargs(tol, attrs)), types, "lstsq")
    return TupleType((TensorType((n,) + b.shape[1:], x), TensorType((), rank), TensorType((min(m, n),), s)))


def _lstsq(a: Any, b: Any, *tolerance: Any, **attrs: Any) -> tuple[Any, Any, Any]:
    """``(x, rank, s)``: NumPy's result without the residuals, whose size depends on the rank."""
    x, _, rank, s = np.linalg.lstsq(a, b, **_numpy_kwargs(tolerance, attrs))
    return x, rank, s


define(Op("qr", OpKind.LAPACK, _infer_qr, _qr,
          doc="np.linalg.qr(a, mode) for mode 'reduced', 'complete' ((Q, R), a tuple) and 'r' (R)"))
define(Op("slogdet", OpKind.LAPACK, _infer_slogdet, _slogdet,
          doc="np.linalg.slogdet(a): (sign, logabsdet), a tuple"))
define(Op("pinv", OpKind.LAPACK, _infer_pinv, _pinv, raises=True,
          doc="np.linalg.pinv(a, rcond, hermitian[, rtol]) through the SVD; LinAlgError if it does not converge"))
define(Op("matrix_rank", OpKind.LAPACK, _infer_matrix_rank, _matrix_rank, raises=True,
          doc="np.linalg.matrix_rank(A, tol, hermitian, rtol) of stacked matrices: int64 counts of singular values "
              "above the tolerance"))
define(Op("matrix_power", OpKind.LAPACK, _infer_matrix_power, _matrix_power, raises=True,
          doc="np.linalg.matrix_power(a, n), n an attribute (NumPy's binary decomposition of matmuls; n < 0 inverts "
              "first: LinAlgError if singular)"))
define(Op("lstsq", OpKind.LAPACK, _infer_lstsq, _lstsq, raises=True,
          doc="np.linalg.lstsq(a, b, rcond) without the residuals: (x, rank, s), a tuple; LinAlgError if the SVD does "
              "not converge"))
