"""Fusion groups, as the IR describes them: what a kernel may hold, and how a group lines up with its domain.

These are the rules and the group description that the fusion pass (``jitgraph.passes.fuse``) and every kernel
backend share: which ops and dtypes a kernel can hold (and why not, for the dump's "not fused because"), the axis
maps and levels of a group's members (``analyze``), and the same facts recomputed from a ``fused`` node's body
(``group_info``). They live in the IR layer, not in ``passes``, because backends read ``fused`` nodes too and a
backend imports no pass: the pass decides the groups, and this module says what a group *is*.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.types import TensorType

# The ops every kernel backend must be able to emit inside a loop body (a test checks the CPU emitter table).
FUSIBLE_ELEMENTWISE = frozenset({
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "power", "negative", "positive",
    "absolute", "sign", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "sin", "cos", "tan",
    "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "square", "floor",
    "ceil", "trunc", "rint", "isnan", "isfinite", "isinf", "logical_not", "maximum", "minimum", "fmax", "fmin",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "arctan2", "hypot", "copysign", "signbit",
    "where", "clip", "astype", "copy", "logaddexp",
})
FUSIBLE_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "any", "all"})
EPILOGUE_HEADS = frozenset({"matmul", "dot"})
KERNEL_DTYPES = frozenset(np.dtype(d) for d in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                                 "uint32", "uint64", "float32", "float64"))
MAX_LEVELS = 2


def is_whole_setitem(node: Node) -> bool:
    """``x[...] = v`` / ``x[:] = v``: an elementwise assignment of ``v`` (broadcast and cast) to all of ``x``."""
    if node.op != "setitem" or len(node.inputs) != 2:
        return False
    spec = node.attrs.get("spec", ())
    full = all(e is Ellipsis or e == slice(None) for e in spec)
    return full and node.inputs[1].type.ndim <= node.inputs[0].type.ndim


def unsupported_reason(node: Node) -> str | None:
    """Why ``node`` cannot live inside a kernel, or None when it can."""
    kind = OPS[node.op].kind
    if is_whole_setitem(node):
        kind = OpKind.ELEMENTWISE
    if node.op in EPILOGUE_HEADS:
        return "BLAS op: runs through NumPy (its elementwise epilogue is fused into one kernel)"
    if kind is OpKind.ELEMENTWISE and node.op not in FUSIBLE_ELEMENTWISE and node.op != "setitem":
        return f"no kernel emitter for {node.op!r}; runs through NumPy"
    if kind is OpKind.REDUCTION and node.op not in FUSIBLE_REDUCTIONS:
        return f"no kernel emitter for reduction {node.op!r}; runs through NumPy"
    if kind not in (OpKind.ELEMENTWISE, OpKind.REDUCTION) and node.op != "reshape":
        return f"{kind.value} op {node.op!r} runs through NumPy (views cost nothing; others are not fused)"
    types = [t for t in (i.type for i in node.inputs)] + [node.type]
    for t in types:
        if not isinstance(t, TensorType):
            return "tuple-typed operand"
        if t.dtype not in KERNEL_DTYPES:
            return f"dtype {t.dtype} is not supported by kernels; runs through NumPy"
    if kind is OpKind.REDUCTION and node.attrs.get("dtype") is not None and \
            np.dtype(node.attrs["dtype"]) not in KERNEL_DTYPES:
        return f"accumulator dtype {node.attrs['dtype']} is not supported by kernels"
    return None


@dataclass
class GroupInfo:
    """What a backend needs to know about a group besides its body: the domain and per-value maps and levels."""

    domain: tuple[int, ...]
    raxes: tuple[int, ...]
    amap: dict[Node, tuple[int | None, ...]]
    level: dict[Node, int]


def is_scalar_closure(node: Node) -> bool:
    """0-d values that can be recomputed inside every kernel that reads them."""
    t = node.type
    if not isinstance(t, TensorType) or t.shape != ():
        return False
    if node.op in ("const", "input"):
        return True
    return OPS[node.op].kind is OpKind.ELEMENTWISE and unsupported_reason(node) is None


def analyze(members: Iterable[Node], domain: tuple[int, ...], raxes: tuple[int, ...],
            head: Node | None = None) -> GroupInfo | str:
    """Axis maps and levels of a candidate group, or the reason it is not a valid group.

    Values outside ``members`` are operands: level 0, mapped by NumPy's right-aligned broadcasting. This runs from
    scratch for each candidate, which keeps join and merge decisions obviously consistent.
    """
    members = list(members)
    inside = set(members)
    d = len(domain)
    identity = tuple(range(d))
    amap: dict[Node, tuple[int | None, ...]] = {}
    level: dict[Node, int] = {}
    for n in members:
        t = n.type
        if not isinstance(t, TensorType):
            return "tuple-typed value"
        if n is head:
            if t.shape != domain:
                return "BLAS result shape differs from the epilogue's domain"
            amap[n], level[n] = identity, 0
            continue
        ins = [i for i in n.inputs if i in inside]
        lvl = max((level[i] for i in ins), default=0)
        kind = OPS[n.op].kind
        if kind is OpKind.REDUCTION:
            (src,) = n.inputs
            if src.type.shape != domain or (src in inside and amap[src] != identity):
                return f"reduces a {src.type} value, not the group's domain {list(domain)}"
            if tuple(n.attrs["axis"]) != raxes:
                return f"reduces axes {tuple(n.attrs['axis'])}, the group reduces {raxes}"
            keep = bool(n.attrs.get("keepdims"))
            amap[n] = tuple(None if a in raxes else a for a in identity) if keep else \
                tuple(a for a in identity if a not in raxes)
            level[n] = lvl + 1
            if level[n] > MAX_LEVELS:
                return f"more than {MAX_LEVELS} reduction levels in one kernel"
            continue
        if n.op == "reshape":
            (src,) = n.inputs
            if src not in inside:
                return "reshape of an operand (runs as a NumPy view)"
            axes = [a for a in amap[src] if a is not None]
            sizes = [s for s in src.type.shape if s != 1]
            if [s for s in t.shape if s != 1] != sizes or len(axes) != len(sizes):
                return "reshape that changes more than size-1 dims"
            it = iter(axes)
            amap[n], level[n] = tuple(None if s == 1 else next(it) for s in t.shape), lvl
            continue
        k = t.ndim
        if k > d or t.size > int(np.prod(domain)):
            return (f"its result {list(t.shape)} is larger than the kernel's domain {list(domain)}: fusing would "
                    f"recompute that kernel for every broadcast element")
        out: list[int | None] = []
        for j, size in enumerate(t.shape):
            cands = set()
            for i in ins:
                jj = j - (k - i.type.ndim)
                if jj >= 0 and i.type.shape[jj] != 1:
                    cands.add(amap[i][jj])
            if size == 1:
                out.append(None)
            elif len(cands) > 1:
                return "operands walk different domain axes"
            elif cands:
                out.append(cands.pop())
            elif domain[j + d - k] == size:
                out.append(j + d - k)
            else:
                return f"shape {list(t.shape)} does not line up with the group's domain {list(domain)}"
        walked = [a for a in out if a is not None]
        if len(set(walked)) != len(walked):
            # ``a * a.mean(1)``: the (8,) mean walks domain axis 0 but broadcasts along the result's last dim, while
            # ``a`` walks axis 0 along the first: one domain axis would stand for two result dims (a diagonal).
            return "a broadcast operand walks a domain axis along a different dim of the result"
        amap[n], level[n] = tuple(out), lvl
        if any(a is not None and domain[a] != s for a, s in zip(out, t.shape)):
            return "sizes disagree with the group's domain"
    outer = set(range(d)) - set(raxes)
    for n in members:
        walks = {a for a in amap[n] if a is not None}
        if walks not in (outer, outer | set(raxes)) and not all(domain[a] == 1 for a in outer - walks):
            return (f"{n.op} result of shape {list(n.type.shape)} would be recomputed for every element of the "
                    f"domain {list(domain)} (broadcast)")
    return GroupInfo(domain, raxes, amap, level)


def group_info(fused: Node) -> GroupInfo:
    """Recompute the domain, axis maps and levels of a ``fused`` node's body (what kernel emitters consume)."""
    (body,) = fused.regions
    members = [n for n in body.nodes if n.op not in ("input", "const")]
    head = next((n for n in members if n.op in EPILOGUE_HEADS), None)
    computing = [n for n in members if n is not head and not (is_scalar_closure(n))]
    reductions = [n for n in computing if OPS[n.op].kind is OpKind.REDUCTION]
    if reductions:
        domain, raxes = reductions[0].inputs[0].type.shape, tuple(reductions[0].attrs["axis"])
    elif head is not None:
        domain, raxes = head.type.shape, ()
    else:
        domain, raxes = (computing[0].type.shape if computing else ()), ()
    info = analyze([n for n in members if n in computing or n is head], domain, raxes, head)
    if isinstance(info, str):
        raise TypeError(f"fused node {fused.attrs.get('name')} has an invalid body: {info}")
    return info


def unfused_reasons(graph: Graph) -> dict[Node, str]:
    """For explain: why each computing node outside every kernel runs through NumPy."""
    reasons = {}
    for n in graph.nodes:
        if n.op in ("input", "const", "fused", "tuple_get"):
            continue
        why = unsupported_reason(n)
        if why is None and is_scalar_closure(n):
            why = "0-d value computed once by NumPy (it is copied into kernels that read it)"
        reasons[n] = why or "no other fusible op reads or produces it"
    return reasons
