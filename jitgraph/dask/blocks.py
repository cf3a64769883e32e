"""``map_blocks`` for compiled functions: the output's meta, dtype and chunks found by tracing, and a plan that says
what a chunked call will do.

``dask.array.map_blocks`` learns a function's output type by calling it on empty (0-length) arrays. For a compiled
function that is a real call with shapes no block has: a compile (or an eager fallback) the cluster never needs, and
a wrong answer for functions whose output shape depends on the block's (a row reduction, a slice). Tracing needs
no data and no kernels: ``cf.trace(block)`` gives the output's type, and each distinct block shape is traced once
(regular chunks and the edge chunks: at most two sizes per dimension), so the helper knows every output chunk.

A trace that breaks (data-dependent control flow, ``print``, ...) has no graph: each block then runs eagerly on the
worker. The plan says so, with the line, and only then is the function called on one zero block to learn its type.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import dask.array as da
import numpy as np
from dask.base import normalize_token

from jitgraph.api import compile as jit_compile
from jitgraph.errors import JitgraphError
from jitgraph.ir.types import TensorType
from jitgraph.jit import CompiledFunction, Traced

__all__ = ["BlockTrace", "ChunkPlanError", "Plan", "map_blocks", "plan"]


class ChunkPlanError(JitgraphError):
    """The output chunks cannot be found from the traces (say which argument to give instead)."""


@dataclass
class BlockTrace:
    """One distinct block shape: the shapes of the array arguments' blocks, and what tracing them gave."""

    shapes: tuple[tuple[int, ...], ...]
    out: TensorType
    traced: Traced
    count: int = 0  # blocks of the output with these input shapes

    @property
    def break_reason(self) -> str | None:
        reason = self.traced.break_reason
        return None if reason is None else str(reason)


@dataclass
class Plan:
    """What ``map_blocks(f, *arrays)`` will do: one task per output block, one compile per distinct block shape
    and worker process (kernels shared through the disk cache), the output's chunks and dtype."""

    name: str
    numblocks: tuple[int, ...]
    traces: list[BlockTrace]
    chunks: tuple[tuple[int, ...], ...]
    dtype: np.dtype
    cache_limit: int
    notes: list[str] = field(default_factory=list)

    @property
    def n_blocks(self) -> int:
        return int(np.prod(self.numblocks)) if self.numblocks else 1

    @property
    def meta(self) -> np.ndarray:
        return np.empty((0,) * len(self.chunks), dtype=self.dtype)

    @property
    def eager(self) -> bool:
        """Whether some block shape breaks the trace (its blocks run eagerly, in NumPy, on the workers)."""
        return any(t.break_reason is not None for t in self.traces)

    def __str__(self) -> str:
        shape = tuple(sum(c) for c in self.chunks)
        lines = [(f"map_blocks({self.name}): {self.n_blocks} task(s) over a {'x'.join(map(str, self.numblocks))} "
                 f"block grid -> {short(self.dtype)}{list(shape)} in chunks {chunk_text(self.chunks)}"),
                 (f"{len(self.traces)} distinct block shape(s): each worker process compiles each once on its first "
                 "block of that shape (kernels already in JITGRAPH_CACHE_DIR are loaded, not compiled)")]
        for t in self.traces:
            args = ", ".join(f"{list(s)}" for s in t.shapes)
            how = f"EAGER (graph break: {t.break_reason})" if t.break_reason else "compiled graph"
            lines.append(f"  blocks {args} x{t.count}: -> {t.out} : {how}")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


def short(dtype: np.dtype) -> str:
    return np.dtype(dtype).name


def chunk_text(chunks: tuple[tuple[int, ...], ...]) -> str:
    """``((4, 4, 2), (8,))`` as ``(4,4,2) x (8)``; long runs of one size are counted (``4*25,2``)."""
    def one(c: tuple[int, ...]) -> str:
        parts = [f"{size}*{len(list(run))}" if len(run := list(group)) > 2 else ",".join(map(str, run))
                 for size, group in itertools.groupby(c)]
        return "(" + ",".join(parts) + ")"
    return " x ".join(one(c) for c in chunks)


def _compiled(f: Callable[..., Any]) -> CompiledFunction:
    return f if isinstance(f, CompiledFunction) else jit_compile(f)


def _aligned(args: Sequence[Any]) -> tuple[list[Any], int]:
    """The arguments with their dask arrays' chunks unified (as ``da.map_blocks`` does, dimensions aligned on
    the right) and the block grid's number of dimensions."""
    arrays = [a for a in args if isinstance(a, da.Array)]
    if not arrays:
        raise ChunkPlanError("map_blocks needs at least one dask array argument")
    ndim = max(a.ndim for a in arrays)
    pairs: list[Any] = []
    for a in arrays:
        pairs += [a, tuple(range(ndim - a.ndim, ndim))]
    _, unified = da.core.unify_chunks(*pairs)
    it = iter(unified)
    return [next(it) if isinstance(a, da.Array) else a for a in args], ndim


def _grid_chunks(arrays: list[da.Array], ndim: int) -> list[tuple[int, ...]]:
    """The block grid's chunks per dimension (an array with one block along a dimension broadcasts)."""
    grid: list[tuple[int, ...]] = [(1,)] * ndim
    for a in arrays:
        for d, c in enumerate(a.chunks):
            g = ndim - a.ndim + d
            if len(c) > 1 or len(grid[g]) == 1 and grid[g] == (1,):
                grid[g] = c
    return grid


def _block_shape(a: da.Array, ndim: int, sizes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of ``a``'s block at the grid position whose dimensions have ``sizes``."""
    return tuple(c[0] if len(c) == 1 else sizes[ndim - a.ndim + d] for d, c in enumerate(a.chunks))


def _out_type(cf: CompiledFunction, traced: Traced, args: list[Any], kwargs: dict[str, Any]) -> TensorType:
    """The output type of one traced block: from the graph, or (after a break) from one eager call."""
    spec, graph = traced.out_spec, traced.graph
    if graph is not None and isinstance(spec, tuple) and spec and spec[0] == "out":
        return graph.outputs[spec[1]].tensor_type
    if graph is not None and isinstance(spec, tuple) and spec and spec[0] == "leaf":
        return graph.inputs[spec[1]].tensor_type
    out = np.asarray(cf.fn(*args, **kwargs))  # a break (or a view of an input): one block, run for its type
    return TensorType(out.shape, out.dtype)


def plan(f: Callable[..., Any], *args: Any, drop_axis: Sequence[int] | int = (), new_axis: Sequence[int] | int = (),
         **kwargs: Any) -> Plan:
    """Trace ``f`` once per distinct block shape of the dask arrays in ``args`` and work out the output's chunks
    and dtype. Non-dask arguments are passed to every block as they are; ``kwargs`` go to ``f``."""
    cf = _compiled(f)
    args_list, ndim = _aligned(args)
    arrays = [a for a in args_list if isinstance(a, da.Array)]
    grid = _grid_chunks(arrays, ndim)
    drop = sorted({drop_axis} if isinstance(drop_axis, int) else set(drop_axis))
    new = sorted({new_axis} if isinstance(new_axis, int) else set(new_axis))
    per_dim: list[dict[int, int]] = [{} for _ in range(ndim)]  # grid dimension -> {block size: output size}
    traces: list[BlockTrace] = []
    for sizes in itertools.product(*(sorted(set(c)) for c in grid)):
        block_args = [np.zeros(_block_shape(a, ndim, sizes), a.dtype) if isinstance(a, da.Array) else a
                      for a in args_list]
        traced = cf.trace(*block_args, **kwargs)
        out = _out_type(cf, traced, block_args, kwargs)
        traced.release()
        count = int(np.prod([sum(1 for s in c if s == size) for c, size in zip(grid, sizes)]))
        shapes = tuple(b.shape for a, b in zip(args_list, block_args) if isinstance(a, da.Array))
        traces.append(BlockTrace(shapes, out, traced, count))
        kept = [d for d in range(ndim) if d not in drop]
        if out.ndim != len(kept) + len(new):
            raise ChunkPlanError(
                f"{cf.name} returns {out} for blocks {[list(_block_shape(a, ndim, sizes)) for a in arrays]}: "
                f"{out.ndim} dimension(s), where the {ndim}-dimensional block grid"
                f"{' less drop_axis' if drop else ''}{' plus new_axis' if new else ''} has {len(kept) + len(new)}",
                hint="pass drop_axis= for dimensions the function reduces away, new_axis= for ones it adds")
        out_dims = [d for d in range(out.ndim) if d not in new]
        for g, o in zip(kept, out_dims):
            seen = per_dim[g].setdefault(sizes[g], out.shape[o])
            if seen != out.shape[o]:
                raise ChunkPlanError(f"{cf.name}: the output size along dimension {o} depends on more than the "
                                     f"block's size along it ({seen} vs {out.shape[o]})",
                                     hint="call dask.array.map_blocks with explicit chunks=")
    dtypes = {t.out.dtype for t in traces}
    if len(dtypes) > 1:
        raise ChunkPlanError(f"{cf.name}: blocks of different shapes give different dtypes "
                             f"({sorted(map(str, dtypes))})")
    last = traces[-1].out
    chunks_kept = [tuple(per_dim[g][s] for s in grid[g]) for g in range(ndim) if g not in drop]
    chunks: list[tuple[int, ...]] = []
    it = iter(chunks_kept)
    for o in range(last.ndim):
        chunks.append((last.shape[o],) if o in new else next(it))
    notes = []
    if len(traces) > cf.cache_limit:
        notes.append(f"{len(traces)} block shapes exceed cache_limit={cf.cache_limit}: later shapes run eagerly; "
                     "rechunk to fewer distinct shapes or raise cache_limit")
    if any(t.break_reason for t in traces):
        notes.append("blocks whose trace breaks run eagerly in NumPy on the workers (no speed-up, same results)")
    grid_blocks = tuple(len(c) for c in grid)
    return Plan(cf.name, grid_blocks, traces, tuple(chunks), np.dtype(last.dtype), cf.cache_limit, notes)


def map_blocks(f: Callable[..., Any], *args: Any, drop_axis: Sequence[int] | int = (),
               new_axis: Sequence[int] | int = (), name: str | None = None, explain: bool = False,
               **kwargs: Any) -> da.Array | tuple[da.Array, Plan]:
    """``dask.array.map_blocks`` with a compiled ``f`` (a plain function is compiled), meta, dtype and chunks found
    by tracing (:func:`plan`). ``explain=True`` also returns the :class:`Plan` (print it)."""
    cf = _compiled(f)
    p = plan(cf, *args, drop_axis=drop_axis, new_axis=new_axis, **kwargs)
    extra: dict[str, Any] = {}
    if drop_axis != ():
        extra["drop_axis"] = drop_axis
    if new_axis != ():
        extra["new_axis"] = new_axis
    out = da.map_blocks(cf, *args, dtype=p.dtype, chunks=p.chunks, meta=p.meta, name=name, **extra, **kwargs)
    return (out, p) if explain else out


@normalize_token.register(CompiledFunction)
def _token(cf: CompiledFunction) -> tuple[Any, ...]:
    """A deterministic Dask token (task names) from the wrapped function and the options, not the object's id."""
    return ("jitgraph.CompiledFunction", normalize_token(cf.fn), cf.backend, cf.fullgraph,
            normalize_token(sorted(cf.options.items())))
