"""GEMMs through cuBLASLt (NVIDIA's ``nvmath-python``), with the epilogue the group's IR allows folded into the call.

Why: the hand-written tiled kernel (``matmul.py``) is far from cuBLAS on large products. When ``nvmath-python`` and
CuPy are installed (the ``cuda`` extra) and a real GPU runs, a matmul group's product goes through
``nvmath.linalg.advanced.Matmul``, planned once per signature (shapes, strides, dtypes, epilogue) and re-executed
with new operands. Numba device arrays reach it as CuPy arrays through ``__cuda_array_interface__`` (no copy), so a
transposed operand (an F-ordered view) folds into the call as cuBLAS's transpose flag.

What is folded (``match``), walking from the product along nodes that have one user and are not group outputs:
``alpha * (a @ b)`` (a scalar constant), then ``+ bias`` for a bias along the columns (cuBLAS's BIAS epilogue:
computed as ``(b.T @ a.T + bias).T``, whose bias runs along rows, as cuBLAS wants; the epilogue writes that
result column-major, so its transpose is C-ordered), or ``+ C`` / ``C - ...`` with
a full-shape ``C`` (``beta = 1``: the in-place parameter update ``w -= lr * (h.T @ d)``). Not folded: ReLU and
GELU epilogues (NumPy's ``maximum`` propagates NaN, and ``gelu`` is written out in the user's code with its own
rounding; they run in the elementwise kernel that reads the GEMM's result, like every other remaining node).

Guards (never a wrong answer in silence): the first call of each kernel variant runs both the cuBLAS path and the
hand-written kernels and compares every floating-point output (``compare``); a mismatch or any exception from
the library switches the group to the hand-written kernel for good, and ``explain`` says why. The simulator, a
missing package, or ``JITGRAPH_CUDA_CUBLAS=0`` keep the hand-written kernel with that reason.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from jitgraph import config
from jitgraph.backends.cuda import runtime
from jitgraph.ir.graph import Graph, Node

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@dataclass(frozen=True)
class GemmSpec:
    """``node = alpha * (a @ b) [+ bias | + beta * c]``: what one cuBLAS call computes for a group."""

    head: Node  # the matmul
    node: Node  # the last node the call computes (``head`` when nothing is folded)
    a: Node
    b: Node
    alpha: float = 1.0
    bias: Node | None = None  # shape (n,) or (1, n): added to every row
    c: Node | None = None  # shape (m, n), added with beta = 1

    @property
    def leaves(self) -> list[Node]:
        return [n for n in (self.a, self.b, self.bias, self.c) if n is not None]

    def describe(self) -> str:
        text = "a @ b" if self.alpha == 1.0 else f"{self.alpha:g} * (a @ b)"
        if self.bias is not None:
            text += " + bias (BIAS epilogue)"
        if self.c is not None:
            text += " + C (beta = 1)"
        return text


def _scalar_const(node: Node) -> float | None:
    if node.op != "const":
        return None
    value = node.attrs["value"]
    if np.ndim(value) != 0 or isinstance(value, bool | np.bool_) or np.asarray(value).dtype.kind not in "iuf":
        return None
    return float(value)


def match(body: Graph, head: Node) -> GemmSpec | None:
    """The cuBLAS call for ``head`` (a matmul in ``body``) with what can be folded; None when cuBLAS cannot take it."""
    if head.op != "matmul":
        return None
    a, b = head.inputs
    dtype = head.tensor_type.dtype
    if dtype not in _FLOATS or any(x.op != "input" or x.tensor_type.ndim != 2 or x.tensor_type.dtype != dtype
                                   for x in (a, b)):
        return None
    m, n = head.tensor_type.shape
    if 0 in (m, n, a.tensor_type.shape[1]):
        return None
    users = body.users()
    spec = GemmSpec(head, head, a, b)
    node, stage = head, 0  # stage 0: nothing added yet (alpha may still scale the product); 1: bias or C added
    while node not in body.outputs and len(users.get(node, [])) == 1 and stage == 0:
        user = users[node][0]
        if user.tensor_type.shape != (m, n) or user.tensor_type.dtype != dtype or len(user.inputs) != 2:
            break
        other = user.inputs[1] if user.inputs[0] is node else user.inputs[0]
        if other is node:
            break
        scale = _scalar_const(other)
        full = other.op == "input" and other.tensor_type.shape == (m, n) and other.tensor_type.dtype == dtype
        row = other.op == "input" and other.tensor_type.shape in ((n,), (1, n)) and other.tensor_type.dtype == dtype
        if user.op == "multiply" and scale is not None:
            spec = GemmSpec(head, user, a, b, spec.alpha * scale)
        elif user.op == "add" and row:
            spec, stage = GemmSpec(head, user, a, b, spec.alpha, bias=other), 1
        elif user.op == "add" and full:
            spec, stage = GemmSpec(head, user, a, b, spec.alpha, c=other), 1
        elif user.op == "subtract" and full and user.inputs[0] is other:
            spec, stage = GemmSpec(head, user, a, b, -spec.alpha, c=other), 1
        else:
            break
        node = user
    return spec


class Provider(Protocol):
    """Runs one GEMM on device arrays; returns the result as a device array of the product's shape."""

    name: str

    def gemm(self, spec: GemmSpec, a: Any, b: Any, bias: Any, c: Any) -> Any: ...


class NvmathProvider:
    """``nvmath.linalg.advanced.Matmul`` on CuPy views of the operands, one planned object per signature."""

    name = "cuBLASLt via nvmath-python"

    def __init__(self, nvmath: Any, cupy: Any) -> None:
        self.nvmath, self.cupy = nvmath, cupy
        self.plans: dict[tuple, tuple[Any, list[int]]] = {}

    def _options(self, dtype: np.dtype) -> dict[str, Any] | None:
        """Full-precision compute (never TF32 for float32: NumPy's results are what the answers are held to)."""
        kinds = getattr(self.nvmath.linalg.advanced, "MatmulComputeType", None)
        name = {np.dtype(np.float32): "COMPUTE_32F", np.dtype(np.float64): "COMPUTE_64F"}.get(np.dtype(dtype))
        if kinds is None or name is None or not hasattr(kinds, name):
            return None
        return {"compute_type": getattr(kinds, name)}

    def gemm(self, spec: GemmSpec, a: Any, b: Any, bias: Any, c: Any) -> Any:
        cp = self.cupy
        ca, cb = cp.asarray(a), cp.asarray(b)  # views through __cuda_array_interface__: no copy
        operands: dict[str, Any] = {}
        if bias is not None:  # cuBLAS's bias runs along the result's rows: compute (b.T @ a.T + bias).T
            ca, cb = cb.T, ca.T
            operands["epilog_inputs"] = {"bias": cp.asarray(bias).reshape(-1)}  # rank 1, length n
        if c is not None:
            operands["c"] = cp.asarray(c)
        arrays = [ca, cb] + [v for k, v in sorted(operands.items()) if k == "c"] + list(
            operands.get("epilog_inputs", {}).values())
        key = (spec.alpha, bias is not None, c is not None) + tuple(
            (x.shape, x.strides, x.dtype.str) for x in arrays)
        pointers = [int(x.data.ptr) for x in arrays]
        stream = runtime.stream_handle(runtime.current_stream()) or None
        found = self.plans.get(key)
        if found is None:
            advanced = self.nvmath.linalg.advanced
            mm = advanced.Matmul(ca, cb, c=operands.get("c"), alpha=spec.alpha,
                                 beta=1.0 if c is not None else None, options=self._options(ca.dtype), stream=stream)
            if bias is not None:
                mm.plan(epilog=advanced.MatmulEpilog.BIAS, epilog_inputs=operands["epilog_inputs"], stream=stream)
            else:
                mm.plan(stream=stream)
            self.plans[key] = (mm, pointers)
        else:
            mm, last = found
            if last != pointers:  # new addresses: hand the operands over (same shapes and layouts by the key)
                mm.reset_operands(a=ca, b=cb, **operands, stream=stream)
                self.plans[key] = (mm, pointers)
        result = mm.execute(stream=stream)
        if bias is not None:  # the BIAS epilogue writes a column-major (n, m) result: its transpose is C-ordered
            result = result.T
        return runtime.as_numba_device(result, sync=False)  # stream-ordered: no host wait


# Tests install a provider here (a NumPy one under the simulator); None means: find nvmath-python.
OVERRIDE: list[Provider] = []


@functools.cache
def _nvmath_provider() -> tuple[Provider | None, str]:
    try:
        import cupy  # the cuda extra: optional, so imported lazily
        import nvmath
        import nvmath.linalg.advanced
    except Exception as exc:  # noqa: BLE001 - ImportError, or a CUDA library that fails to load
        return None, (f"nvmath-python/CuPy could not be imported ({type(exc).__name__}: {exc}); install the cuda "
                      "extra: pip install 'jitgraph[cuda]'")
    return NvmathProvider(nvmath, cupy), ""


def provider() -> tuple[Provider | None, str]:
    """The GEMM provider to use, or None and the reason the hand-written kernel runs instead."""
    if OVERRIDE:
        return OVERRIDE[-1], ""
    if not config.env_flag("JITGRAPH_CUDA_CUBLAS"):
        return None, "cuBLAS is turned off (JITGRAPH_CUDA_CUBLAS=0)"
    if runtime.simulated():
        return None, "the CUDA simulator has no cuBLAS"
    return _nvmath_provider()


@dataclass
class GemmState:
    """Per group: the cuBLAS call, whether it is in use, and which kernel variants passed the self-check."""

    spec: GemmSpec | None
    provider: Provider | None
    reason: str = ""  # why the hand-written kernel runs ("" while cuBLAS is in use)
    checked: set[frozenset[int]] = field(default_factory=set)

    @property
    def active(self) -> bool:
        return self.spec is not None and self.provider is not None and not self.reason

    def fail(self, reason: str) -> None:
        self.reason = reason

    def describe(self) -> str:
        if self.active:
            assert self.spec is not None and self.provider is not None
            checked = "self-checked" if self.checked else "self-check on its first call"
            return f"GEMM {self.spec.describe()} through {self.provider.name} ({checked})"
        return f"GEMM by the hand-written tiled kernel because {self.reason}"


def state_for(body: Graph, head: Node) -> GemmState:
    spec = match(body, head)
    if spec is None:
        return GemmState(None, None, "cuBLAS takes two 2-D float32/float64 operands of the result's dtype")
    found, reason = provider()
    return GemmState(spec, found, reason)


class GemmFailed(Exception):
    """The library raised: the group switches to the hand-written kernel (nothing was written yet)."""


def execute(state: GemmState, values: dict[Node, Any]) -> Any:
    """Run the GEMM on the group's leaf values (device arrays); GemmFailed on any library error."""
    spec, found = state.spec, state.provider
    assert spec is not None and found is not None
    pick = [values[n] if n is not None else None for n in (spec.a, spec.b, spec.bias, spec.c)]
    runtime.log_library_call(found.name)
    try:
        result = found.gemm(spec, *pick)
    except Exception as exc:  # noqa: BLE001 - any library failure: fall back with the reason
        raise GemmFailed(f"{found.name} raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    want = spec.node.tensor_type
    if tuple(result.shape) != want.shape or np.dtype(result.dtype) != want.dtype:
        raise GemmFailed(f"{found.name} returned {result.dtype}{tuple(result.shape)}, expected {want.dtype}{want.shape}")
    return runtime.keep_alive(result)  # a recorded CUDA graph writes to this address on every replay


def compare(got: list[Any], want: list[Any], outputs: list[Node]) -> str | None:
    """None when the cuBLAS path's outputs agree with the hand-written kernels' (copied to the host), else why.

    Floating-point outputs must agree to a tolerance scaled by the result's magnitude (the two sum in different
    orders); outputs of other dtypes (``h > 0`` beside ``h``) are derived from them by the same kernel and may
    differ where a value sits at a rounding boundary, so they are not compared."""
    for k, (g, w, node) in enumerate(zip(got, want, outputs)):
        g, w = np.asarray(runtime.to_host(g)), np.asarray(runtime.to_host(w))
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {k} is {g.dtype}{g.shape}, the hand-written kernel gives {w.dtype}{w.shape}"
        if w.dtype.kind != "f" or not w.size:
            continue
        finite = np.isfinite(w)
        if not np.array_equal(finite, np.isfinite(g)):
            return f"output {k} has non-finite values in other places"
        rtol = 1e-3 if w.dtype == np.float32 else 1e-9  # float32 compute: ~1e-5 apart; TF32 would be ~1e-3
        scale = float(np.abs(w[finite]).max()) if finite.any() else 0.0
        if not np.allclose(g[finite], w[finite], rtol=rtol, atol=rtol * scale):
            worst = float(np.abs(g[finite] - w[finite]).max())
            return f"output {k} differs by up to {worst:.3g} (results up to {scale:.3g})"
    return None
