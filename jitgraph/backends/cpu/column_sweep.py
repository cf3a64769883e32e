"""Reductions over the *outer* axis of a 2-D group (``x.sum(axis=0)``, bias gradients): row by row, into a vector.

The generic reduction template loops over the kept axis outside and the reduced axis inside, which for a reduction
over axis 0 of a C-ordered array walks memory with a stride of one row per element: the bias gradient
``dh.sum(axis=0)`` of a (256, 512) MLP layer took 1.8 ms that way. This template keeps one accumulator per column of
the thread's chunk ``[lo, hi)`` and adds each row into them, so the inner loop runs along contiguous memory and
vectorises. Float32 sums and means accumulate in float32, one sequential sum per column, exactly as NumPy's own
axis-0 reduction of a matrix with more than one column does (bit for bit, and half the vector work of float64
accumulators: a column variance over (4096, 1024) 2.1 -> 1.4 ms); a single column (NumPy sums it pairwise) keeps
float64 accumulators (``KernelSpec.narrow_columns``). It covers groups with one reduction level whose full-shape outputs do not depend on the
reductions; anything else uses the generic template.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.backends.cpu import emitters as E
from jitgraph.ir.ops.cost import worth_keeping

_F32 = np.dtype(np.float32)


def fits(emit: Any) -> bool:
    """Whether ``emit`` (a kernel_source._Emit) describes a group this template handles."""
    spec = emit.spec
    if spec.rank != 2 or spec.inner != (0,) or not emit.reductions:
        return False
    if {spec.level[r] for r in emit.reductions} != {1}:
        return False
    return all(spec.level.get(o.value, 0) == 0 for o in spec.outputs if o.value in spec.full)


def column_body(emit: Any, w: Any, idx: dict[int, str]) -> None:
    """Main loop: rows outside, this chunk's columns inside; then one loop over the columns for what follows."""
    spec = emit.spec
    reds = emit.reductions
    accs = {r: _accumulator(emit, r) for r in reds}
    w("ulo = np.uint64(lo)")
    for r in reds:
        init = E.reduction_init(r.op, accs[r])
        _filled(w, f"col{emit.var[r]}", "np.uint64(hi) - ulo", init, accs[r])
    finals = [o for o in spec.outputs if o.value in spec.full]
    w("for i0 in range(n0):")
    w("    for i1 in range(ulo, np.uint64(hi)):")
    w.depth += 2
    idx[0], idx[1] = "i0", "i1"
    _column_values(emit, w, 0)
    emit.compute(w, [r.inputs[0] for r in reds] + [o.value for o in finals], idx, "", inner=True)
    _accumulate(emit, w, reds, accs, "col")
    for o in finals:
        w(f"{emit.index(o, idx)} = {emit.ref(o.value, '')}")
    w.depth -= 2
    w("for i1 in range(ulo, np.uint64(hi)):")
    w.depth += 1
    emit._done.clear()  # the values per column are computed again here: the main loop's are out of scope
    _column_values(emit, w, 0)
    for r in reds:
        w(f"{emit.var[r]} = {_column_total(emit, r, 'col')}")
        emit._done.add(r)
    emit._outer_values(w, 1)
    for o in spec.outputs:
        if o.value not in spec.full:
            w(f"{emit.index(o, idx)} = {emit.var[o.value]}")
    w.depth -= 1


def narrow_columns(rank: int, inner: tuple[int, ...], sizes: tuple[int, ...], strides: list[tuple[int, ...]]) -> bool:
    """Whether a launch's column sums add in float32 (``KernelSpec.narrow_columns``): NumPy adds rows one after
    another in the array's dtype where several columns lie contiguous (every operand walking both axes row-major);
    a column-major operand it sums pairwise down each column, and a single column pairwise too: float64
    accumulators stay as accurate there. ``strides``: each operand's byte strides along the two axes (0: not
    walked)."""
    return rank == 2 and inner == (0,) and sizes[1] > 1 and all(abs(s[0]) >= abs(s[1]) for s in strides if s[0] and s[1])


def _accumulator(emit: Any, r: Any) -> np.dtype:
    """The dtype a column's partial of reduction ``r`` accumulates in: float32 for a float32 sum or mean over the
    rows of a matrix with several columns (NumPy's own order and precision there), else the shared rule."""
    if emit.spec.narrow_columns and r.op in ("sum", "mean") and r.type.dtype == _F32 and \
            r.inputs[0].type.dtype == _F32 and r.attrs.get("dtype") is None:
        return _F32
    return E.accumulator_dtype(r)


def _same_reduction(r: Any) -> tuple:
    """What makes two reductions of one group the same column values: op, operand, result dtype and attrs other
    than ``keepdims`` (the column template stores a column's value alike for both)."""
    attrs = tuple(sorted((k, repr(v)) for k, v in r.attrs.items() if k != "keepdims"))
    return (r.op, r.inputs[0], r.type.dtype, attrs)


def _filled(w: Any, name: str, size: str, init: str, dtype: Any) -> None:
    """``name = np.full(size, init, dtype)``, spelled as an allocation and a loop: ``np.full`` is one more
    implementation for Numba to compile in each process (about 0.06 s of the MLP step's cold compile), and
    ``jg_empty`` (helpers.py) none."""
    w(f"{name} = jg_empty({size}, {E.np_name(dtype)})")
    w(f"for f_ in range({name}.shape[0]):")
    w(f"    {name}[f_] = {init}")


def _accumulate(emit: Any, w: Any, reds: list, accs: dict, prefix: str, rows: dict | None = None) -> None:
    """Each reduction's value at ``(i0, i1)``, cast to its accumulator dtype and combined into its column's
    accumulator ``{prefix}{var}[i1 - ulo]``; ``rows``: per reduction, the buffer element the sweep's first loop
    wrote its value to (else the value is the local of the same loop)."""
    for r in reds:
        (src,) = r.inputs
        v = emit.var[r]
        operand = rows[r] if rows else emit.ref(src, "", r)
        value = E.cast(operand, accs[r], src.type.dtype)
        w(f"{prefix}{v}[i1 - ulo] = {E.reduction_combine(r.op, f'{prefix}{v}[i1 - ulo]', value)}")


def _column_total(emit: Any, r: Any, prefix: str) -> str:
    """The expression of reduction ``r``'s result for column ``i1`` from its accumulator ``{prefix}{var}``: a mean
    divides by its count, then the total is cast to the result dtype."""
    v = emit.var[r]
    total = f"{prefix}{v}[i1 - ulo]"
    if r.op == "mean":
        total = E.mean_total(total, f"cnt{v}", r.type.dtype)
    return E.cast(total, r.type.dtype)


def _column_values(emit: Any, w: Any, level: int) -> None:
    """Loads of the operands that do not walk the reduced axis, then the level-``level`` values of one column."""
    for n in emit.spec.body.nodes:
        if emit.operand(n):
            emit.load(w, n, {0: "0", 1: "i1"}, "", inner=False)
    emit._outer_values(w, level)


# -- any number of levels, outputs that use the reductions (batch norm forward and backward, column softmax) --------
def fits_levels(emit: Any) -> bool:
    """Whether the multi-level column template handles ``emit``: a 2-D group reducing axis 0 only, with
    reductions the column accumulators can combine (not argmin/argmax).

    The generic template would sweep each column of a C-ordered array with a stride of one row per element (a
    (256, 512) batch-norm backward ran 4.7x slower than NumPy that way)."""
    spec = emit.spec
    if spec.rank != 2 or spec.inner != (0,) or not emit.reductions:
        return False
    return all(r.op in ("sum", "mean", "max", "min", "prod", "any", "all") for r in emit.reductions)


def levels_body(emit: Any, w: Any, idx: dict[int, str]) -> None:
    """One pass over the rows per reduction level, each accumulating a vector of column partials (the inner loop
    runs along contiguous columns and vectorises); per-column values (reductions, and what is computed from them
    before the next level) are kept in vectors of this chunk's columns; a last pass over the rows writes the
    full-shape outputs, then one loop over the columns writes the per-column outputs."""
    spec = emit.spec
    levels = sorted({spec.level[r] for r in emit.reductions})
    percol = [n for n in emit.members if n not in spec.full and n not in emit.scalar_nodes]
    w("ulo = np.uint64(lo)")
    w("uhi = np.uint64(hi)")
    for n in percol:
        w(f"col{emit.var[n]} = jg_empty(uhi - ulo, {E.np_name(n.type.dtype)})")
    idx[0], idx[1] = "i0", "i1"

    def column_values(below: int) -> None:
        """Inside a loop over i1: operands that do not walk the rows, and the per-column values of lower levels."""
        for n in spec.body.nodes:
            if emit.operand(n):
                emit.load(w, n, {0: "0", 1: "i1"}, "", inner=False)
        for n in percol:
            if spec.level[n] < below:
                w(f"{emit.var[n]} = col{emit.var[n]}[i1 - ulo]")

    def store_level(lvl: int) -> None:
        """The per-column values of level ``lvl`` not yet stored (level 0: those of operands only)."""
        todo = [n for n in percol if spec.level[n] == lvl and n not in emit.reductions]
        if not todo:
            return
        w("for i1 in range(ulo, uhi):")
        w.depth += 1
        column_values(lvl)
        for n in emit.reductions:
            if spec.level[n] == lvl:
                w(f"{emit.var[n]} = col{emit.var[n]}[i1 - ulo]")
        for n in todo:
            w(f"{emit.var[n]} = {emit.expr(n, '')}")
            w(f"col{emit.var[n]}[i1 - ulo] = {emit.var[n]}")
        w.depth -= 1

    finals = [o for o in spec.outputs if o.value in spec.full]
    keep: list = []
    store_level(0)
    for lvl in levels:
        # A reduction repeated with other keepdims (``x.mean(0)`` beside var's ``x.mean(0, keepdims=True)``) is
        # accumulated once: its column values are the first one's.
        first: dict[tuple, Any] = {}
        copies = {r: first.setdefault(_same_reduction(r), r) for r in emit.reductions if spec.level[r] == lvl}
        reds = [r for r, f in copies.items() if f is r]
        accs = {r: _accumulator(emit, r) for r in reds}
        w(f"# level-{lvl} sweep over the rows: {', '.join(r.op for r in reds)} per column")
        for r in reds:
            _filled(w, f"acc{emit.var[r]}", "uhi - ulo", E.reduction_init(r.op, accs[r]), accs[r])
        if lvl == levels[-1] and finals:
            keep = emit.scratch_candidates(reds, [o.value for o in finals])
        # Operands computed with costly math (exp) go through a row buffer, summed in a second loop over the
        # columns: one loop doing both (a float32 exp feeding float64 accumulators) does not vectorise, and ran 2x
        # slower than NumPy. Cheap operands (batch norm's ``xc * xc``) stay in one loop, which vectorises as it is.
        split = any(worth_keeping(n.op) for n in emit._closure([r.inputs[0] for r in reds]))
        rows = {r: f"sc{emit.var[r.inputs[0]]}[i0, i1 - ulo]" if r.inputs[0] in keep else f"buf{emit.var[r]}[i1 - ulo]"
                for r in reds} if split else {}
        for r in reds:
            if split and r.inputs[0] not in keep:
                w(f"buf{emit.var[r]} = jg_empty(uhi - ulo, {E.np_name(r.inputs[0].type.dtype)})")
        for n in keep:
            w(f"sc{emit.var[n]} = jg_empty((n0, hi - lo), {E.np_name(n.type.dtype)})")
        w("for i0 in range(n0):")
        w("    for i1 in range(ulo, uhi):")
        w.depth += 2
        column_values(lvl)
        emit.compute(w, [r.inputs[0] for r in reds], idx, "", inner=True)
        for n in keep:
            w(f"sc{emit.var[n]}[i0, i1 - ulo] = {emit.var[n]}")
        if split:
            for r in reds:
                if r.inputs[0] not in keep:
                    w(f"buf{emit.var[r]}[i1 - ulo] = {emit.ref(r.inputs[0], '', r)}")
            w.depth -= 1
            w("for i1 in range(ulo, uhi):")
            w.depth += 1
        _accumulate(emit, w, reds, accs, "acc", rows)
        w.depth -= 2
        w("for i1 in range(ulo, uhi):")
        for r in reds:
            w(f"    col{emit.var[r]}[i1 - ulo] = {_column_total(emit, r, 'acc')}")
        for r, f in copies.items():
            if f is not r:
                w(f"    col{emit.var[r]}[i1 - ulo] = col{emit.var[f]}[i1 - ulo]  # the same reduction")
        store_level(lvl)
    top = max(levels) + 1
    if finals:
        w("# final pass over the rows: full-shape outputs" + (" (costly values reloaded from the last sweep)"
                                                              if keep else ""))
        w("for i0 in range(n0):")
        w("    for i1 in range(ulo, uhi):")
        w.depth += 2
        column_values(top)
        for n in keep:
            w(f"{emit.var[n]} = sc{emit.var[n]}[i0, i1 - ulo]")
        emit.compute(w, [o.value for o in finals], idx, "", inner=True, have=set(keep))
        for o in finals:
            w(f"{emit.index(o, idx)} = {emit.ref(o.value, '')}")
        w.depth -= 2
    rest = [o for o in spec.outputs if o.value not in spec.full]
    if rest:
        w("for i1 in range(ulo, uhi):")
        w.depth += 1
        for o in rest:
            w(f"{emit.index(o, idx)} = col{emit.var[o.value]}[i1 - ulo]")
        w.depth -= 1
