"""Emitters for region nodes: ``loop`` -> ``for`` (``prange`` when the dependence test allows), ``while`` ->
``while <flag>:`` (the test's code before the loop and at the end of the body), ``cond`` -> ``if/else``.

Carried values live in one Python variable per carried slot (named after the body's input, ``v14``), assigned
before the loop and at the end of each iteration. A carried array is *owned* by the loop: its initial value is
donated when dead after the loop node, copied otherwise, and an iteration's result that is not the same buffer
updated in place is copied when it could alias another slot or a read-only value.
"""

from __future__ import annotations

import os

from jitgraph.backends.cpu.scalar import bounds, numpy_calls, runtime
from jitgraph.backends.cpu.scalar.core import Emitter, dtype_ctor
from jitgraph.backends.cpu.scalar.depend import Verdict, const_int, independent, nonneg
from jitgraph.backends.cpu.scalar.scope import Scope, is_array
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops.control import trip_count
from jitgraph.ir.ops.indexing import Operand


def _carry_in(em: Emitter, node: Node, inits: tuple[Node, ...], names: list[str], indent: int) -> list[bool]:
    """Bind each carried slot before the loop; returns which array inits were donated (not copied)."""
    donated = []
    for init, name in zip(inits, names):
        give = is_array(init) and em.scope.dead_after(init, node)
        donated.append(give)
        copy = is_array(init) and not give
        em.write(indent, f"{name} = {em.var[init]}{'.copy()' if copy else ''}")
    return donated


def _carry_out(em: Emitter, body: Graph, carried: tuple[Node, ...], outs: list[str], scope: Scope,
               indent: int) -> list[bool]:
    """Assign an iteration's results to the carried slots; returns which slots were updated in place.

    A result that is the carried buffer itself (same root, not a view: the in-place chain, possibly through nested
    loops under other variable names) needs no assignment at all, which is also what lets a loop be a prange.
    """
    assigns, in_place = [], []
    for node, slot, expr in zip(body.outputs, carried, outs):
        name = em.var[slot]
        same = is_array(node) and node not in scope.view and scope.roots.get(node) == frozenset({slot})
        if expr == name or same:
            in_place.append(True)
            continue
        in_place.append(False)
        if is_array(node) and not scope.exclusive(node):
            expr = f"{expr}.copy()"
        assigns.append((name, expr))
    if len(assigns) == 1:
        em.write(indent, f"{assigns[0][0]} = {assigns[0][1]}")
    elif assigns:
        em.write(indent, f"{', '.join(a for a, _ in assigns)} = {', '.join(b for _, b in assigns)}")
    return in_place


def _result_roots(em: Emitter, node: Node, inits: tuple[Node, ...], donated: list[bool],
                  in_place: list[bool]) -> list[tuple[frozenset[Node], str]]:
    out = []
    for init, give, same in zip(inits, donated, in_place):
        if is_array(init) and give and same:
            out.append((em.scope.roots[init], "same"))
        else:
            out.append((frozenset(), "owned"))
    return out


def bind(em: Emitter, inner: tuple[Node, ...], outer: tuple[Node, ...]) -> None:
    """Name a region's inputs after their outer values, and carry over what is proven about them."""
    for n, o in zip(inner, outer):
        em.var[n] = em.var[o]
        if o in em.nonneg or (n.type.shape == () and nonneg(o, em.nonneg)):  # type: ignore[union-attr]
            em.nonneg.add(n)
        bound = bounds.upper(o, em.upper) if n.type.shape == () else None  # type: ignore[union-attr]
        if bound is not None:
            em.upper[n] = bound
        size = bounds.magnitude(o, em.nonneg, em.upper, em.magnitude)
        if size is not None:
            em.magnitude[n] = size
        low = bounds.lower(o, em.nonneg, em.floor) if bounds.is_int(n) else None
        if low is not None and low > 0:  # ``range(1, n)``'s i in a nested body: ``i - 1`` is >= 0 there too
            em.floor[n] = low


def _worth_it(em: Emitter, body: Graph) -> Verdict | None:
    """Profitability, separate from legality: a parallel launch costs microseconds, so a prange needs real work
    per iteration (a nested loop or whole-array ops) and at most one enclosing loop (launches per outer trip)."""
    if em.loop_depth > 1:
        return Verdict(False, "independent, but nested two loops deep (one parallel launch per outer iteration)")
    if not any(n.regions or (is_array(n) and n.op not in ("setitem", "getitem", "tuple_get")) for n in body.nodes
               if n.op not in ("input", "const")):
        return Verdict(False, "independent, but each iteration is a few scalar operations (not worth a launch)")
    return None


def _serial_twin(em: Emitter, header: int, indent: int, serial_header: str, condition: str) -> None:
    """Wrap the prange loop in ``if <enough trips>: ... else: <same body, serial>`` (a launch costs microseconds)."""
    loop = em.lines[header:]
    pad = "    "
    em.lines[header:] = ([pad * indent + f"if {condition}:"] + [pad + line for line in loop]
                         + [pad * indent + "else:", pad * (indent + 1) + serial_header]
                         + [pad + line for line in loop[1:]])


PARALLEL_MIN_CORES = 4  # "auto": with 2 cores a prange gains at most 2x and loses far more when another process
                        # holds a core (measured here: CSR SpMV 10 ms serial, 35-60 ms as prange on a busy box)


def _parallel_allowed(choice: object) -> bool:
    """The ``parallel`` option (its ``parallel_min_trips`` default, 512, was measured on SpMV and FW rows)."""
    if choice == "auto":
        return (os.cpu_count() or 1) >= PARALLEL_MIN_CORES
    return bool(choice)


SPLIT = 4  # partial sums kept by a reassociable reduction loop


def _split_sum(em: Emitter, node: Node, body: Graph, induction: Node, acc: Node | None, indent: int) -> bool:
    """A float sum the source leaves unordered (``reassociate=True``: np.dot) as ``SPLIT`` partial sums.

    One serial accumulator is a chain of dependent adds that LLVM may not reorder, so the loop would run at one
    add per FP latency; BLAS reorders np.dot's sum, and so may we. The remainder runs as the plain loop.
    """
    out = body.outputs[0] if len(body.outputs) == 1 else None
    eligible = (node.attrs.get("reassociate") and acc is not None and out is not None and out.op == "add"
                and acc.type.shape == () and acc.type.dtype.kind == "f" and acc in out.inputs  # type: ignore[union-attr]
                and node.inputs[2].op == "const" and int(node.inputs[2].attrs["value"]) == 1 and not em.in_prange)
    if not eligible:
        return False
    term = out.inputs[1] if out.inputs[0] is acc else out.inputs[0]  # type: ignore[union-attr]
    derived = {acc}
    for n in body.nodes:
        if any(i in derived for i in n.inputs):
            derived.add(n)
    if term in derived or any(n.regions for n in body.nodes):
        return False
    ctor = dtype_ctor(acc.type.dtype)  # type: ignore[union-attr]
    total, ind = em.var[acc], em.vname(induction)
    start, stop = em.bound(node.inputs[0]), em.bound(node.inputs[1])
    partial = [total] + [f"{total}_{j}" for j in range(1, SPLIT)]
    for name in partial[1:]:
        em.write(indent, f"{name} = {ctor}(0)")
    em.write(indent, f"{total}_hi = {start} + max({stop} - {start}, 0) // {SPLIT} * {SPLIT}")
    em.write(indent, f"for {ind} in range({start}, {total}_hi, {SPLIT}):  # {em.names[node]}: {SPLIT} partial "
                     "sums (the source's sum order is unspecified)")
    for j, name in enumerate(partial):
        em.var[induction], em.var[acc] = (ind if j == 0 else f"({ind} + {j})"), name
        (expr,), _ = em.emit_graph(body, indent + 1, set())
        em.write(indent + 1, f"{name} = {expr}")
    em.write(indent, f"{total} = {ctor}(({partial[0]} + {partial[1]}) + ({partial[2]} + {partial[3]}))")
    em.var[induction], em.var[acc] = ind, total
    em.write(indent, f"for {ind} in range({total}_hi, {stop}):")
    (expr,), _ = em.emit_graph(body, indent + 1, set())
    em.write(indent + 1, f"{total} = {expr}")
    em.serial_reasons[node] = f"serial, {SPLIT} partial sums"
    return True


def _dot_operand(em: Emitter, g: Node, induction: Node, invariants: set[Node], dtype: object) -> str | None:
    """``x[j, k]`` (k the induction variable, every other index invariant, all proven in bounds) as the 1-D view
    text ``x[j, :]`` that :func:`runtime.dot_range` walks; None when ``g`` is not of that form."""
    if g.op != "getitem" or g.inputs[0] not in invariants or not is_array(g.inputs[0]):
        return None
    x, *ops = g.inputs
    spec = g.attrs["spec"]
    if x.tensor_type.dtype != dtype or len(spec) != x.tensor_type.ndim or not all(isinstance(e, Operand) for e in spec):
        return None
    if [ops[e.k] for e in spec].count(induction) != 1 or not bounds.proven(x, spec, tuple(ops), em.nonneg, em.upper):
        return None
    if any(ops[e.k] is not induction and ops[e.k] not in invariants and const_int(ops[e.k]) is None for e in spec):
        return None
    if x.tensor_type.ndim == 1:
        return em.var[x]
    parts = [":" if ops[e.k] is induction else em.var.get(ops[e.k]) or str(const_int(ops[e.k])) for e in spec]
    return f"{em.var[x]}[{', '.join(parts)}]"


def _blas_dot_inline(operands: tuple[Node, ...], induction: Node, dtype: object) -> bool:
    """Whether the driver may call np.dot itself on ``x[lo:hi]`` of both operand views (the BLAS path of
    :func:`runtime.dot_range`, written inline): SciPy's BLAS present, float32/64, and each view contiguous as
    Numba types it (a 1-D C array, or a row ``x[j, :]`` of a C-ordered 2-D one), so np.dot never copies."""
    if not runtime.HAVE_BLAS or str(dtype) not in ("float32", "float64"):
        return False
    for g in operands:
        x, *ops = g.inputs
        t = x.tensor_type
        row = t.ndim == 2 and t.layout == "C" and ops[g.attrs["spec"][-1].k] is induction
        if not (t.ndim == 1 and t.layout == "C" or row):
            return False
    return True


def _dot_call(em: Emitter, node: Node, body: Graph, induction: Node, acc: Node | None, indent: int) -> bool:
    """np.dot of two symbolic 1-D slices (``acc += u[k] * v[k]``, ``reassociate=True``) as one ``dot_range`` call.

    The helper may reassociate the sum (np.dot's order is unspecified), so LLVM vectorises it; the loop written
    out in the strict-IEEE driver could only keep a few scalar partial sums (:func:`_split_sum`). Only when every
    index is proven in bounds (the helper checks nothing) and both operands already have the sum's dtype.
    """
    out = body.outputs[0] if len(body.outputs) == 1 else None
    if not (node.attrs.get("reassociate") and acc is not None and out is not None and out.op == "add"
            and acc.type.shape == () and acc.type.dtype.kind == "f"  # type: ignore[union-attr]
            and out.tensor_type.dtype == acc.type.dtype and acc in out.inputs  # type: ignore[union-attr]
            and node.inputs[2].op == "const" and int(node.inputs[2].attrs["value"]) == 1):
        return False
    dtype = out.tensor_type.dtype
    product = out.inputs[1] if out.inputs[0] is acc else out.inputs[0]
    if product.op != "multiply" or product.tensor_type.dtype != dtype or len(product.inputs) != 2:
        return False
    if any(n not in (out, product, *product.inputs) for n in body.nodes if n.op not in ("input", "const")):
        return False
    invariants = set(body.inputs[2:])
    views = [_dot_operand(em, g, induction, invariants, dtype) for g in product.inputs]
    if None in views:
        return False
    total = em.var[acc]
    start, stop = (em.bound(i) for i in node.inputs[:2])
    call = f"{total} = dot_range({views[0]}, {views[1]}, np.int64({start}), np.int64({stop}), {total})"
    if _blas_dot_inline(product.inputs, induction, dtype):
        # dot_range would choose BLAS too, but np.dot inside a helper is a call LLVM does not inline: ~5-15% of a
        # 2000-row triangular solve (one dot per row) against Numba on the user's source, which calls np.dot inline.
        em.write(indent, f"if {stop} - {start} >= {runtime.DOT_BLAS_FROM}:  # {em.names[node]}: np.dot (BLAS)")
        em.write(indent + 1, f"{total} = {total} + np.dot({views[0]}[{start}:{stop}], {views[1]}[{start}:{stop}])")
        em.write(indent, "else:")
        em.write(indent + 1, f"{call}  # summed in any order (vectorised)")
    else:
        em.write(indent, f"{call}  # {em.names[node]}: np.dot, summed in any order (vectorised)")
    em.serial_reasons[node] = "np.dot in one vectorised call (dot_range)"
    return True


def emit_loop(em: Emitter, node: Node, indent: int) -> None:
    k = node.attrs["carried"]
    (body,) = node.regions
    inits, invariants = node.inputs[3:3 + k], node.inputs[3 + k:]
    induction, carried, inv_inputs = body.inputs[0], body.inputs[1:1 + k], body.inputs[1 + k:]
    if em.in_prange:
        verdict = Verdict(False, "nested inside a prange loop")
    elif not _parallel_allowed(em.parallel_choice):
        verdict = Verdict(False, f"parallel={em.parallel_choice!r} on {os.cpu_count()} cores "
                                 "(pass parallel=True to allow prange)")
    elif numpy_calls.needs_gil(body):
        verdict = Verdict(False, "calls NumPy in object mode, which holds the GIL (numpy_calls.py)")
    else:
        verdict = independent(node, em.nonneg)
        veto = _worth_it(em, body) if verdict else None
        verdict = veto if veto is not None else verdict
    min_trips = em.parallel_min_trips
    if verdict and trip_count(node) is not None and trip_count(node) < min_trips:  # type: ignore[operator]
        verdict = Verdict(False, f"independent, but only {trip_count(node)} trips (prange needs {min_trips})")
    trips = trip_count(node)
    label = em.names[node]
    names = [em.vname(c) for c in carried]
    donated = _carry_in(em, node, inits, names, indent)
    for c, name in zip(carried, names):
        em.var[c] = name
    em.var[induction] = em.vname(induction)
    bind(em, inv_inputs, invariants)
    step_value = node.inputs[2].attrs.get("value") if node.inputs[2].op == "const" else None
    if nonneg(node.inputs[0], em.nonneg) and step_value is not None and int(step_value) > 0:
        em.nonneg.add(induction)
        low = bounds.lower(node.inputs[0], em.nonneg, em.floor)
        if low is not None and low > 0:  # counting up from 1: ``i - 1`` is a proven index (ops.emit_elementwise)
            em.floor[induction] = low
    bound = bounds.induction_bound(node.inputs[1], em.upper)
    if step_value is not None and int(step_value) > 0 and bound is not None:
        em.upper[induction] = bound
    acc = carried[0] if len(carried) == 1 else None
    if _dot_call(em, node, body, induction, acc, indent) or _split_sum(em, node, body, induction, acc, indent):
        em.results[node] = names
        em.result_roots[node] = [(frozenset(), "owned")]
        return
    flag, saved_flag, saved_used = None, em.prange_flag, em.flag_used
    if verdict:
        flag = f"oob{em.vname(node)[1:]}"
        flag_line = len(em.lines)
        em.write(indent, f"{flag} = np.zeros(1, np.bool_)")
        em.prange_flag, em.flag_used = flag, False
    header = len(em.lines)
    em.write(indent, "")
    was, em.in_prange = em.in_prange, em.in_prange or bool(verdict)
    start_lines = len(em.lines)
    em.loop_depth += 1
    outs, scope = em.emit_graph(body, indent + 1, set(carried))
    em.loop_depth -= 1
    em.in_prange = was
    in_place = _carry_out(em, body, carried, outs, scope, indent + 1)
    if len(em.lines) == start_lines:
        em.write(indent + 1, "pass")
    parallel = bool(verdict) and all(in_place)
    reason = verdict.reason if bool(verdict) == parallel else "an iteration result was not updated in place"
    em.serial_reasons[node] = reason
    start, stop, step = em.bound(node.inputs[0]), em.bound(node.inputs[1]), em.var[node.inputs[2]]
    rng = f"numba.prange({start}, {stop})" if parallel else f"range({start}, {stop}, {step})"
    comment = f"  # {label}: {'?' if trips is None else trips} trips, {'prange' if parallel else 'serial'}: {reason}"
    em.lines[header] = "    " * indent + f"for {em.var[induction]} in {rng}:{comment}"
    if parallel:
        em.parallel.append(node)
        if trips is None:  # decided at run time: small trip counts take the serial twin
            _serial_twin(em, header, indent, f"for {em.var[induction]} in range({start}, {stop}):",
                         f"{stop} - {start} >= {min_trips}")
    if flag is not None:
        if em.flag_used:
            em.write(indent, f"if {flag}[0]:")
            em.write(indent + 1, 'raise IndexError("index out of bounds (in a prange loop)")')
        else:
            del em.lines[flag_line]
        em.prange_flag, em.flag_used = saved_flag, saved_used
    em.results[node] = names
    em.result_roots[node] = _result_roots(em, node, inits, donated, in_place)


ROTATE_TEST_LINES = 40  # a longer test keeps the ``while True: ... break`` form (its code written once)


def emit_while(em: Emitter, node: Node, indent: int) -> None:
    """``while``, rotated as CPython compiles one: the test's code once before the loop and once at the end of
    the body, the loop itself ``while <flag>:``. The same statements run in the same order as in ``while True:
    <test>; if not flag: break; <body>``, but LLVM optimises the rotated loop much better: an insertion sort's
    inner ``while j >= 0 and a[j] > key`` ran 1.2x slower than Numba on the user's source in the break form,
    as fast in this one (benchmarks/loops.py)."""
    k = node.attrs["carried"]
    test, body = node.regions
    inits, invariants = node.inputs[:k], node.inputs[k:]
    names = [em.vname(c) for c in body.inputs[:k]]
    donated = _carry_in(em, node, inits, names, indent)
    for region in (test, body):
        for c, name in zip(region.inputs[:k], names):
            em.var[c] = name
        bind(em, region.inputs[k:], invariants)
    _while_facts(em, node, test, body, inits, k)
    em.loop_depth += 1
    header = len(em.lines)
    em.write(indent, f"while True:  # {em.names[node]}")
    (flag,), _ = em.emit_graph(test, indent + 1, set())
    test_lines = em.lines[header + 1:]
    rotate = len(test_lines) <= ROTATE_TEST_LINES
    if rotate:  # the test before the loop and again at the end of each iteration: ``while flag:``
        em.lines[header:] = [line[4:] for line in test_lines] + ["    " * indent + f"while {flag}:  # {em.names[node]}"]
    else:
        em.write(indent + 1, f"if not {flag}:")
        em.write(indent + 2, "break")
    outs, scope = em.emit_graph(body, indent + 1, set(body.inputs[:k]))
    in_place = _carry_out(em, body, body.inputs[:k], outs, scope, indent + 1)
    if rotate:
        em.lines.extend(test_lines)
    em.loop_depth -= 1
    em.results[node] = names
    em.result_roots[node] = _result_roots(em, node, inits, donated, in_place)


def _while_facts(em: Emitter, node: Node, test: Graph, body: Graph, inits: tuple[Node, ...], k: int) -> None:
    """Bounds of a ``while``'s integer slots: a slot the body only decreases (``j - 1``) stays below its initial
    value's bound, one it only increases stays >= 0 when it starts so; and the body runs only where the test
    holds (``while j >= 0 and a[j] > key``: ``j >= 0`` in the body). Test and body inputs line up by position."""
    for slot, init, out in zip(range(k), inits, body.outputs):
        mine = body.inputs[slot]
        step = 0 if out is mine else const_int(out.inputs[1]) if out.op in ("add", "subtract") \
            and len(out.inputs) == 2 and out.inputs[0] is mine else None
        if step is None or not 0 <= step <= 2 ** 31 or not bounds.is_int(mine):
            continue  # (a small step: a slot cannot jump past a bound the test checks and wrap around unseen)
        down, up = out.op == "subtract" or out is mine, out.op == "add" or out is mine
        bound = bounds.upper(init, em.upper)
        for region in (test, body):
            if down and bound is not None:
                em.upper[region.inputs[slot]] = bound
            if up and nonneg(init, em.nonneg):
                em.nonneg.add(region.inputs[slot])
        # After the loop: below the initial bound still; and when the test holds only for a slot >= 0 (``while
        # j >= 0 and ...``) and it starts >= 0, the last value is at least -step (``a[j + 1] = key`` is in range).
        tested_low = test.inputs[slot] in bounds.when_true(test.outputs[0], em.upper)[0]
        start = bounds.lower(init, em.nonneg, em.floor)
        floor = min(start, -step) if down and tested_low and start is not None else None
        em.after_while[(node, slot)] = (bound if down else None, floor)
    low, high = bounds.when_true(test.outputs[0], em.upper)
    for inp, mine in zip(test.inputs, body.inputs):
        if inp in low:
            em.nonneg.add(mine)
        if inp in high:
            em.upper[mine] = min(high[inp], em.upper.get(mine, high[inp]))


def _same_operand(out: Node, region: Graph, scope: Scope, donated: list[bool]) -> int | None:
    """The donated operand whose buffer a branch result *is* (updated in place or passed through), else None."""
    if not is_array(out) or out in scope.view:
        return None
    for j, inp in enumerate(region.inputs):
        if donated[j] and scope.roots.get(out) == frozenset({inp}):
            return j
    return None


def emit_cond(em: Emitter, node: Node, indent: int) -> None:
    """``if``/``else``; a result that is, in both branches, the same donated operand's buffer (the ``if d < D[i,
    j]: D[i, j] = d`` pattern) keeps the operand's variable: no result variable, no rebinding of the array."""
    pred, *operands = node.inputs
    donated = [is_array(o) and em.scope.dead_after(o, node) for o in operands]
    n_out = len(node.regions[0].outputs)
    names = [f"{em.vname(node)}_{k}" for k in range(n_out)]
    status = ["owned"] * n_out
    aliases: list[frozenset[Node]] = [frozenset()] * n_out
    blocks: list[tuple[int, int, list[tuple[int, int | None]]]] = []
    for branch, region in zip(("if", "else"), node.regions):
        em.write(indent, f"if {em.var[pred]}:  # {em.names[node]}" if branch == "if" else "else:")
        bind(em, region.inputs, tuple(operands))
        if branch == "if":  # what the predicate proves holds in the then-branch
            low, high = bounds.when_true(pred, em.upper)
            for inp, operand in zip(region.inputs, operands):
                if operand in low:
                    em.nonneg.add(inp)
                if operand in high:
                    em.upper[inp] = min(high[operand], em.upper.get(inp, high[operand]))
        owned = {i for i, give in zip(region.inputs, donated) if give}
        start = len(em.lines)
        outs, scope = em.emit_graph(region, indent + 1, owned)
        assigned = []
        for k, (out, expr, name) in enumerate(zip(region.outputs, outs, names)):
            assigned.append((len(em.lines), _same_operand(out, region, scope, donated)))
            em.write(indent + 1, f"{name} = {expr}")
            if not is_array(out):
                continue
            if not scope.exclusive(out):
                status[k] = "shared"
            for j, inp in enumerate(region.inputs):
                if inp in scope.roots.get(out, ()) and not donated[j]:
                    aliases[k] |= em.scope.roots.get(operands[j], frozenset())
        blocks.append((start, len(em.lines), assigned))
    em.results[node] = names
    em.result_roots[node] = [(a, s) for a, s in zip(aliases, status)]
    drop = set()
    for k in range(n_out):
        same = {blocks[0][2][k][1], blocks[1][2][k][1]}
        if len(same) == 1 and None not in same:
            (j,) = same
            drop |= {blocks[0][2][k][0], blocks[1][2][k][0]}
            em.results[node][k] = em.var[operands[j]]
            em.result_roots[node][k] = (em.scope.roots[operands[j]], "same")
    if drop:
        pad = "    " * (indent + 1) + "pass"
        for start, end, _ in reversed(blocks):
            kept = [line for p, line in enumerate(em.lines[start:end], start) if p not in drop]
            em.lines[start:end] = kept or [pad]
    else:
        for start, end, _ in reversed(blocks):
            if start == end:
                em.lines[start:end] = ["    " * (indent + 1) + "pass"]
