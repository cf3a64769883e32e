"""Where NumPy rejects the operands, ``GraphBuilder.op`` rejects them too, with NumPy's own exception type.

The tracer relies on this: a TypeInferenceError becomes a graph break, and the eager call then shows the user
NumPy's own error. ``.original`` must be the exception class NumPy raises, so the fallback behaves identically.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from irtest_util import build_one, check_op

from jitgraph.errors import JitgraphError, TypeInferenceError
from jitgraph.ir import GraphBuilder, Operand

F32 = np.ones((2, 3), np.float32)
F64 = np.ones((4,), np.float64)
I32 = np.ones((2, 3), np.int32)
B = np.ones((2, 3), bool)
EMPTY = np.zeros((0, 3))
IDX = np.array([0, 1])

# (op, args, attrs, NumPy called directly)
REJECTED: list[tuple[str, tuple[Any, ...], dict[str, Any], Callable[..., Any]]] = [
    ("bitwise_and", (F32, F32), {}, np.bitwise_and),
    ("bitwise_or", (F64, 1), {}, np.bitwise_or),
    ("bitwise_xor", (I32, 0.5), {}, np.bitwise_xor),
    ("left_shift", (F32, I32), {}, np.left_shift),
    ("invert", (F32,), {}, np.invert),
    ("subtract", (B, B), {}, np.subtract),
    ("negative", (B,), {}, np.negative),
    ("add", (F32, F64), {}, np.add),
    ("where", (B, F32, F64), {}, np.where),
    ("matmul", (F32, F32), {}, np.matmul),
    ("matmul", (F32, np.float32(2)), {}, np.matmul),
    ("dot", (F32, F32), {}, np.dot),
    ("einsum", (F32, F64), {"subscripts": "ij,jk->ik"}, lambda a, b: np.einsum("ij,jk->ik", a, b)),
    ("einsum", (F32,), {"subscripts": "ij->k"}, lambda a: np.einsum("ij->k", a)),
    ("einsum", (F32,), {"subscripts": "i->i"}, lambda a: np.einsum("i->i", a)),
    ("sum", (F32,), {"axis": (2,), "keepdims": False}, lambda a: np.sum(a, axis=2)),
    ("mean", (F32,), {"axis": (-3,), "keepdims": False}, lambda a: np.mean(a, axis=-3)),
    ("sum", (F32,), {"axis": (0, -2), "keepdims": False}, lambda a: np.sum(a, axis=(0, -2))),
    ("argmax", (F32,), {"axis": 5, "keepdims": False}, lambda a: np.argmax(a, axis=5)),
    ("max", (EMPTY,), {"axis": (0,), "keepdims": False}, lambda a: np.max(a, axis=0)),
    ("min", (EMPTY,), {"axis": (0, 1), "keepdims": False}, lambda a: np.min(a)),
    ("argmin", (EMPTY,), {"axis": None, "keepdims": False}, np.argmin),
    ("argmax", (EMPTY,), {"axis": 0, "keepdims": False}, lambda a: np.argmax(a, axis=0)),
    ("var", (B,), {"axis": (0,), "keepdims": False, "dtype": np.dtype("U1")}, lambda a: np.var(a, 0, "U1")),
    ("reshape", (F32,), {"shape": (4, 2)}, lambda a: np.reshape(a, (4, 2))),
    ("reshape", (F32,), {"shape": (-1, -1)}, lambda a: np.reshape(a, (-1, -1))),
    ("reshape", (F32,), {"shape": (-1, 4)}, lambda a: np.reshape(a, (-1, 4))),
    ("transpose", (F32,), {"axes": (0, 2)}, lambda a: np.transpose(a, (0, 2))),
    ("transpose", (F32,), {"axes": (0, 0)}, lambda a: np.transpose(a, (0, 0))),
    ("transpose", (F32,), {"axes": (0,)}, lambda a: np.transpose(a, (0,))),
    ("broadcast_to", (F32,), {"shape": (3, 3)}, lambda a: np.broadcast_to(a, (3, 3))),
    ("broadcast_to", (F32,), {"shape": (3,)}, lambda a: np.broadcast_to(a, (3,))),
    ("concatenate", (F32, F64), {"axis": 0}, lambda *a: np.concatenate(a, axis=0)),
    ("concatenate", (F32, F32), {"axis": 2}, lambda *a: np.concatenate(a, axis=2)),
    ("concatenate", (np.float32(1), np.float32(2)), {"axis": 0}, lambda *a: np.concatenate(a, axis=0)),
    ("stack", (F32, F64), {"axis": 0}, lambda *a: np.stack(a, axis=0)),
    ("stack", (F32, F32), {"axis": 3}, lambda *a: np.stack(a, axis=3)),
    ("getitem", (F32,), {"spec": (2,)}, lambda a: a[2]),
    ("getitem", (F32,), {"spec": (0, 0, 0)}, lambda a: a[0, 0, 0]),
    ("getitem", (F32,), {"spec": (Ellipsis, 0, Ellipsis)}, lambda a: a[..., 0, ...]),
    ("getitem", (F32,), {"spec": (slice(None, None, 0),)}, lambda a: a[::0]),
    ("getitem", (F32, np.array([0.5])), {"spec": (Operand(0),)}, lambda a, i: a[i]),
    ("getitem", (F32, IDX, np.array([0, 1, 2])), {"spec": (Operand(0), Operand(1))}, lambda a, i, j: a[i, j]),
    ("getitem", (F32, IDX), {"spec": (Operand(0), 3)}, lambda a, i: a[i, 3]),
    ("setitem", (F32, F64), {"spec": (0,)}, lambda a, v: a.copy().__setitem__(0, v)),
    ("setitem", (F32, np.ones((2, 2))), {"spec": (Operand(0),)}, None),
    ("scatter_add", (F32, np.ones(4)), {"spec": (Operand(0),)}, None),
    ("full", (), {"shape": (2,), "dtype": np.dtype(np.int8), "value": 300}, lambda: np.full((2,), 300, np.int8)),
    ("zeros", (), {"shape": (-1, 2), "dtype": np.dtype(np.float32)}, lambda: np.zeros((-1, 2), np.float32)),
    ("eye", (), {"n": -1, "m": None, "k": 0, "dtype": np.dtype(np.float32)}, lambda: np.eye(-1)),
    ("arange", (), {"start": 0, "stop": 3, "step": 0, "dtype": np.dtype(np.int64)}, lambda: np.arange(0, 3, 0)),
]


def _index_args(name: str, args: tuple[Any, ...], reference: Callable[..., Any] | None) -> tuple[Any, ...]:
    return (*args, IDX) if reference is None else args


def _setitem_reference(name: str) -> Callable[..., Any]:
    def ref(x: np.ndarray, value: Any, i: np.ndarray) -> None:
        out = x.copy()
        if name == "setitem":
            out[i] = value
        else:
            np.add.at(out, i, value)

    return ref


@pytest.mark.parametrize("case", range(len(REJECTED)), ids=[f"{c[0]}-{k}" for k, c in enumerate(REJECTED)])
def test_rejected_like_numpy(case: int) -> None:
    name, args, attrs, reference = REJECTED[case]
    args = _index_args(name, args, reference)
    reference = reference or _setitem_reference(name)
    assert check_op(name, args, attrs, reference) == "rejected"


def test_error_is_structured() -> None:
    """The error is a JitgraphError with the op named in the message, a hint, and NumPy's exception chained."""
    with pytest.raises(TypeInferenceError) as info:
        build_one("bitwise_and", (F32, F32), {})
    err = info.value
    assert isinstance(err, JitgraphError)
    assert "bitwise_and" in err.message and err.hint
    assert isinstance(err.original, TypeError)
    assert err.__cause__ is err.original


def test_builder_state_unchanged_by_rejection() -> None:
    """A rejected op must not leave a half-built node behind in the builder."""
    b = GraphBuilder()
    x = b.const(F32)
    with pytest.raises(TypeInferenceError):
        b.op("add", x, b.const(F64))
    assert [n.op for n in b.nodes] == ["const", "const"]
