"""The compiled graph: a generated Python *driver* that calls fused kernels, BLAS and NumPy in order.

The driver is source text, like the kernels, so it can be read (``compiled.driver_source``) and shows in
tracebacks. One statement per top-level node::

    def driver(args):
        v0, v1, v2 = args
        v3, = K3((v0, v1, v2), {0: 0})   # fused kernel; output 0 written into operand 0 (in place)
        del v1                          # memory plan: last reader done
        ...
        return [v3]

Kernels are :class:`~jitgraph.backends.cpu.launch.GroupKernel` objects; nodes without a kernel run their NumPy
reference implementation (shape ops therefore stay NumPy views; ``matmul`` of a transposed view passes BLAS its
trans flag). Mutations of caller inputs are written by the kernel straight into the caller's buffer when that is
safe (planned by :mod:`jitgraph.backends.inplace`); otherwise the value is copied in at the end, as the eager interpreter does.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from jitgraph import config
from jitgraph.backends.base import KernelSource, require_lowered
from jitgraph.backends.cpu import blas_program, numpy_calls
from jitgraph.backends.cpu import driver_indexing as indexing
from jitgraph.backends.cpu.group_work import group_work
from jitgraph.backends.cpu.histogram import uniform_histogram
from jitgraph.backends.cpu.launch import GroupKernel
from jitgraph.backends.inplace import plan_inplace
from jitgraph.generated_source import run_source
from jitgraph.ir.fusion_groups import EPILOGUE_HEADS, unfused_reasons
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.memory import MemoryPlan, views_of
from jitgraph.ir.ops.cost import numpy_is_enough
from jitgraph.ir.printer import node_names
from jitgraph.ir.types import TensorType

_ids = itertools.count()

try:  # NumPy's error state is a context variable: setting it directly costs 0.1 us, ``np.errstate`` 1 us per call
    from numpy._core._ufunc_config import _extobj_contextvar as _ERRSTATE
    from numpy._core._ufunc_config import _make_extobj

    _IGNORE = _make_extobj(all="ignore")
except ImportError:  # another NumPy layout: the public context manager
    _ERRSTATE = _IGNORE = None
_NDARRAY = {np.ndarray}
_BASE = operator.attrgetter("base")
_BLAS_PROGRAM_NOTE = ("whole graph: one Numba function calling BLAS gemv directly, with one loop per fused epilogue "
                      "(blas_program.py; kernel_sources() shows it)")
# The error state around a driver whose NumPy calls may warn: its first and last lines (``_driver``).
_ERRSTATE_FRAME = (["    token = _ERRSTATE.set(_IGNORE)", "    try:"], ["    finally:", "        _ERRSTATE.reset(token)"])
_DRIVER_TITLE = "driver (calls the kernels, BLAS and NumPy in order)"


def _kernel_writes(graph: Graph) -> dict[Node, dict[int, int]]:
    """For each fused node, ``{kernel output k: operand j}``: outputs written straight into the caller's buffer
    that is the kernel's operand ``j`` (planned by :mod:`jitgraph.backends.inplace`).

    The CPU kernels may write an output over an operand they read (each sweep reads an element before the write
    sweep stores over it, and the launch checks the views line up exactly), but not over the BLAS product of a
    matmul epilogue, and only an operand of the kernel itself (its argument is what the kernel stores through).
    """

    def kernel_ok(node: Node, k: int, target: Node) -> bool:
        if node.op != "fused" or target not in node.inputs:
            return False
        return node.regions[0].outputs[k] is not _head(node)

    plan: dict[Node, dict[int, int]] = {}
    for write in plan_inplace(graph, kernel_ok):
        body = write.node.regions[0]
        head = _head(write.node)
        kernel_outputs = [o for o in body.outputs if o is not head]
        target = graph.inputs[write.argument]
        plan.setdefault(write.node, {})[kernel_outputs.index(body.outputs[write.output])] = \
            write.node.inputs.index(target)
    return plan


def _head(fused: Node) -> Node | None:
    """The BLAS product a matmul-epilogue kernel starts from (None for other kernels)."""
    return next((n for n in fused.regions[0].nodes if n.op in EPILOGUE_HEADS), None)


class CpuCompiled:
    """A lowered graph compiled for the CPU backend; call it with the flat argument list.

    The graph must come from the pass pipeline (``jitgraph.passes.run_pipeline``): its ``fused`` nodes are the
    kernels and its memory plan says where the driver drops each intermediate. The backend runs no pass itself.
    """

    def __init__(self, graph: Graph, options: Mapping[str, Any]) -> None:
        self.graph = graph
        self.options = dict(options)
        self.memory: MemoryPlan = require_lowered(graph, "cpu")
        self.kernels = {n: GroupKernel(n, options) for n in graph.nodes if n.op == "fused"}
        self.numpy_nodes = unfused_reasons(graph)
        self.inplace = _kernel_writes(graph)
        # Groups that run faster as their NumPy calls than as a kernel (the cost model, ir/ops/cost.py).
        self.work = {n: w for n, k in self.kernels.items() if (w := group_work(n, k, n in self.inplace)) is not None}
        small_groups = not config.env_flag("JITGRAPH_SMALL_KERNELS")
        self.numpy_groups = {n: why for n, w in self.work.items()
                             if (why := numpy_is_enough(w, small_groups)) is not None}
        for n in self.numpy_groups:
            del self.kernels[n]
            if numpy_calls.dot_operands(n) is not None:
                self.numpy_groups[n] += "; sum(a * b) of two vectors: one BLAS dot, as np.dot and np.linalg.norm run it"
        # ``x[idx] = v`` assigned into x's own buffer where x dies there (driver_indexing.py), not into a copy.
        # np.histogram over fixed uniform bins: counted in one pass (histogram.py), not by NumPy's Python routine.
        use_cache = bool(config.option(options, "cache"))
        self.histograms = {n: h for n in graph.nodes if n.op == "histogram" and
                           (h := uniform_histogram(n, use_cache)) is not None}
        fresh = self._fresh_groups(self.inplace)
        self.setitems_in_place = {n for k, n in enumerate(graph.nodes)
                                  if indexing.writes_in_place(graph.nodes, k, self.memory, fresh)}
        # ... and its value computed straight into x[idx] where one NumPy call makes it just before (out=).
        self.computed_into = indexing.assignments_into(graph.nodes, self.setitems_in_place, self.numpy_groups,
                                                       set(graph.live_roots()), lambda x: views_of(graph, x))
        self.assigned_by = {s: p for p, s in self.computed_into.items()}
        self.driver_source, namespace, inline = self._driver(self.inplace)
        self._fast = namespace["driver"]
        self.blas_program = blas_program.build(graph, options, self._fast) if not self.inplace else None  # BLAS calls
        if self.blas_program is not None:
            self._fast = self.blas_program.driver
        self._safe = self._driver({})[1]["driver"] if self.inplace else self._fast
        self._array_args = [k for k, n in enumerate(graph.inputs) if isinstance(n.type, TensorType) and
                            not n.type.weak and n.type.shape != ()]
        self._pick_arrays = operator.itemgetter(*self._array_args) if len(self._array_args) >= 2 else None
        # What a dispatch runner may call instead of this object (jit/dispatch.py), saving a Python frame per call:
        # ``run_direct`` for any arguments (the driver itself when no output is planned into a caller's buffer), and
        # ``run_unaliased`` for arguments already known to share no memory (the dispatch's aliasing check found
        # none): the in-place driver without the overlap check.
        self.run_direct = self._fast if not self.inplace else self.__call__
        self.run_unaliased = self._fast
        # The driver's body, for a call function to run inline (one Python frame less: ~0.1 us of a 1 us call).
        self.inline_driver = inline if self.blas_program is None else None

    def checked_program(self, leaves: Sequence[Any]) -> tuple[Any, tuple] | None:
        """For a dispatch runner: a function of the leaves and then the outputs, positionally, that checks the leaves'
        shapes and strides against ``leaves`` and writes the graph's outputs, returning whether it ran; with the
        (length, dtype) of each output. None where this graph has none (only a BLAS program has: blas_program.py)."""
        program = self.blas_program
        function = program.checked(leaves) if program is not None else None
        return (function, program.outputs) if function is not None else None

    # -- the CompiledGraph protocol ------------------------------------------------------------------------------
    def kernel_sources(self) -> list[KernelSource]:
        """Each fused kernel's module source (empty until its first call builds it), then the driver; or the BLAS
        program and the driver."""
        if self.blas_program is not None:
            return [KernelSource("BLAS program (blas_program.py: the whole graph, one Numba function)",
                                 self.blas_program.source), KernelSource(_DRIVER_TITLE, self.driver_source)]
        out = [KernelSource(f"kernel {k.name}", k.source) if k.source else
               KernelSource(f"kernel {k.name}", "", "not generated yet: it is built on its first call")
               for k in self.kernels.values()]
        out.append(KernelSource(_DRIVER_TITLE, self.driver_source))
        return out

    def regions(self) -> list[Any]:
        return []  # graphs with control-flow regions go to the loop driver (backends/cpu/scalar)

    def compile_times(self) -> dict[str, float]:
        """Code generation and Numba seconds of the kernels built so far (they are built on first call)."""
        times = {phase: sum(k.times[phase] for k in self.kernels.values()) for phase in ("codegen", "numba")}
        times["numba"] += self.blas_program.seconds if self.blas_program is not None else 0.0
        return times

    def fallback_reason(self) -> str | None:
        return None

    def explain(self) -> str:
        """Kernels with their cut reasons, nodes left to NumPy and why, in-place writes, memory plan."""
        names = node_names(self.graph)
        if self.blas_program is not None:  # the ordinary driver runs only for arguments the program does not take
            return _BLAS_PROGRAM_NOTE + "\n" + self.memory.format()
        lines = []
        for node, kernel in self.kernels.items():
            info = kernel.info
            ops = [n.op for n in info.amap]
            variants = [kernel.name] if kernel.launches else []  # a twin group's dispatcher has the twin's name
            if kernel.gemm_updates:
                variants.append("BLAS gemm with beta=1 (the update folded into the product, no kernel)")
            lines.append(f"{names[node]} kernel {kernel.name} ({node.attrs['kind']}, {len(ops)} ops, domain "
                         f"{list(info.domain)}, reduces {info.raxes or '-'}; ran: {', '.join(variants) or '-'})")
            work = self.work.get(node)
            if work is not None and work.elements < work.parallel_from and len(work.ops) > 1:
                lines.append(f"    a kernel rather than NumPy calls: estimated {work.kernel_us():.1f} us against "
                             f"{work.numpy_us():.1f} us (cost model, ir/ops/cost.py)")
            lines += [f"    not fused with {cut}" for cut in node.attrs.get("cuts", ())]
            for k, j in sorted(self.inplace.get(node, {}).items()):
                lines.append(f"    output {k} written in place into {names[node.inputs[j]]}")
        for node, why in self.numpy_groups.items():
            lines.append(f"{names[node]} group {node.attrs['name']} runs as NumPy ({node.attrs['kind']}): {why}")
        for node, why in self.numpy_nodes.items():
            if node in self.histograms:
                why += "; fixed uniform bins: counted in one pass, NumPy's bin arithmetic (cpu/histogram.py)"
            if node in self.assigned_by:
                why += f"; {names[node.inputs[1]]} is computed straight into {names[node.inputs[0]]}[...] (out=)"
            elif node in self.setitems_in_place:
                why += f"; assigned in place into {names[node.inputs[0]]}'s buffer (its last reader: no copy)"
            if node.op not in ("tuple_get",):
                lines.append(f"{names[node]} {node.op} via NumPy: {why}")
        lines.append(self.memory.format())
        return "\n".join(lines)

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        if self.inplace and self._overlapping(args):
            return self._safe(list(args))
        return self._fast(args)

    def _overlapping(self, args: Sequence[Any]) -> bool:
        """Whether two array arguments may share memory. Arrays that own their memory, or view an array that does,
        share none unless they have the same owner (``keys.alias_pattern`` relies on the same fact): the owners
        decide the usual call, where ``np.may_share_memory`` on every pair cost ~0.4 us a pair (91 pairs for the 14
        arrays of a two-layer network's Adam step). Other arrays are compared pair by pair."""
        pick = self._pick_arrays
        if pick is None:
            return False  # fewer than two arrays
        picked = pick(args)
        if set(map(type, picked)) == _NDARRAY:
            bases = list(map(_BASE, picked))
            owners = [a if b is None else b for a, b in zip(picked, bases)]
            views = [b for b in bases if b is not None]  # must be plain arrays owning their memory
            if len(set(map(id, owners))) == len(owners) and set(map(type, views)) <= _NDARRAY and \
                    all(map(operator.is_, map(_BASE, views), itertools.repeat(None))):
                return False
        arrays = [a for a in picked if isinstance(a, np.ndarray)]
        return any(np.may_share_memory(a, b) for a, b in itertools.combinations(arrays, 2))

    def _fresh_groups(self, inplace: Mapping[Node, dict[int, int]]) -> dict[Node, frozenset[int]]:
        """For each fused node, the positions of its outputs that are new arrays (driver_indexing.fresh_outputs),
        given the driver's in-place plan."""
        return {n: indexing.fresh_outputs(n, n in self.numpy_groups, tuple(inplace.get(n, {})))
                for n in self.graph.nodes if n.op == "fused"}

    def _quiet_line(self, node: Node) -> bool:
        """Whether the driver line of ``node`` makes only NumPy calls that never warn: a kernel without a BLAS
        product (a kernel raises no floating-point warnings; ``matmul`` may), a group run as quiet NumPy calls, or
        a quiet op."""
        if node in self.numpy_groups:
            return all(numpy_calls.quiet(m) for m in node.regions[0].nodes)
        if node.op == "fused":
            return self.kernels[node].head is None
        return numpy_calls.quiet(node)

    # -- driver source -------------------------------------------------------------------------------------------
    def _into(self, value: Node, var: Mapping[Node, str], ns: dict[str, Any]) -> str | None:
        """The target view ``x[idx]`` that ``value`` is computed into (``computed_into``), or None."""
        assign = self.computed_into.get(value)
        if assign is None:
            return None
        index = indexing.index_expr(assign, [var[i] for i in assign.inputs], ns, var[assign])
        return f"{var[assign.inputs[0]]}[{index}]"

    def _numpy_group(self, node: Node, v: str, args: list[str], ns: dict[str, Any], out: str | None = None
                     ) -> list[str]:
        """Driver lines running the group ``node`` as one NumPy call per op, as the reference interpreter does.

        A temporary is deleted right after its last reader, as eager Python drops it: two large temporaries alive
        at once made every call page-fault a fresh buffer (a clip-by-norm over 1e5 floats ran 5x slower)."""
        dot = numpy_calls.dot_operands(node)
        if dot is not None:
            return [f"    {v} = {args[dot[0]]}.dot({args[dot[1]]})  # {node.attrs['name']} as NumPy: one BLAS dot"]
        body = node.regions[0]
        local = dict(zip(body.inputs, args))
        last = {i: j for j, m in enumerate(body.nodes) for i in m.inputs}
        outputs = set(body.outputs)
        lines = []
        for j, m in enumerate(body.nodes):
            if m.op == "input":
                continue
            name = f"{v}_{j}"
            if m.op == "const":
                ns[f"C{name}"] = m.attrs["value"]
                local[m] = f"C{name}"
                continue
            into = out if m is body.outputs[0] else None  # the last member (assignments_into)
            call = numpy_calls.numpy_call(m, [local[i] for i in m.inputs], name, ns, into)
            lines.append(f"    {name} = {call}  # {m.op}" + (f" into {into}" if into else ""))
            local[m] = name
            done = sorted({local[i] for i in m.inputs if last[i] == j and i not in outputs and
                           i.op not in ("input", "const")})
            if done:
                lines.append(f"    del {', '.join(done)}")
        outs = [local[o] for o in body.outputs]
        lines.append(f"    {v} = {outs[0] if len(outs) == 1 else '[' + ', '.join(outs) + ']'}"
                     f"  # {node.attrs['name']} as NumPy: {self.numpy_groups[node]}")
        return lines

    def _driver(self, inplace: Mapping[Node, dict[int, int]]
                ) -> tuple[str, dict[str, Any], InlineDriver | None]:
        graph = self.graph
        names = node_names(graph)
        var = {n: "v" + names[n].lstrip("%") for n in graph.nodes}
        ns: dict[str, Any] = {"np": np, "_copy_back": _copy_back, "_detach_one": _detach_one, "_ERRSTATE": _ERRSTATE,
                              "_IGNORE": _IGNORE}
        lines = ["def driver(args):"]
        if graph.inputs:
            lines.append(f"    {', '.join(var[n] for n in graph.inputs)}, = args")
        for k, n in enumerate(graph.nodes):
            if n.op == "input":
                continue
            v = var[n]
            if n.op == "const":  # read where used, from the driver's namespace (no line: ~0.15 us a constant)
                ns[f"C{v}"] = n.attrs["value"]
                var[n] = f"C{v}"
                continue
            inputs = [var[i] for i in n.inputs]
            args = ", ".join(inputs)
            if n in self.numpy_groups:
                lines += self._numpy_group(n, v, inputs, ns, self._into(n, var, ns))
            elif n.op == "fused":
                plan = tuple(sorted(inplace.get(n, {}).items()))
                ns[f"K{v}"] = self.kernels[n].entry(plan)  # the launch for this line's in-place plan
                lines.append(f"    {v} = K{v}(({args}{',' if len(n.inputs) == 1 else ''}))"
                             f"  # {n.attrs['name']}" + (f", in place {plan!r}" if plan else ""))
                if len(n.regions[0].outputs) == 1:
                    lines.append(f"    {v} = {v}[0]")
            elif n.op == "tuple_get":
                lines.append(f"    {v} = {args}[{n.attrs['index']}]")
            elif n.op == "getitem" and (line := indexing.getitem_line(n, inputs, v, ns)) is not None:
                lines.append(line)
            elif n in self.assigned_by:
                lines.append(f"    {v} = {inputs[0]}  # setitem: {inputs[1]} was computed into it (out=)")
            elif n.op == "setitem" and (assign := indexing.setitem_lines(n, inputs, v, ns,
                                                                         n in self.setitems_in_place)) is not None:
                lines += assign
            elif n in self.histograms:
                ns[f"H{v}"] = self.histograms[n]
                lines.append(f"    {v} = H{v}({inputs[0]})  # histogram: one pass over uniform bins")
            else:
                call = numpy_calls.numpy_call(n, inputs, v, ns, self._into(n, var, ns))
                lines.append(f"    {v} = {call}  # {n.op} via NumPy: {self.numpy_nodes.get(n, '')}")
            dead = [b for b in self.memory.release_after.get(k, ()) if b is not n]
            if dead:
                lines.append(f"    del {', '.join(var[b] for b in dead)}")
        outs = ", ".join(var[o] for o in graph.outputs)
        if graph.mutations:
            mutated = ", ".join(var[graph.inputs[i]] for i, _ in graph.mutations)
            # An output may share memory with a mutated input only if it is not an array of its own (a view of an
            # input, a constant, a kernel output written into a caller's buffer): only those are checked per call
            # (np.may_share_memory, ~0.4 us a pair: 11 outputs by 4 mutated parameters took ~15 us of an Adam step).
            fresh = self._fresh_groups(inplace)
            detached = [var[o] if indexing.fresh_value(o, fresh) else f"_detach_one({var[o]}, ({mutated},))"
                        for o in graph.outputs]
            lines.append(f"    outs = [{', '.join(detached)}]")
            for i, n in graph.mutations:
                target, value = var[graph.inputs[i]], var[n]
                if target != value:
                    lines.append(f"    if {value} is not {target}:")
                    lines.append(f"        _copy_back({target}, {value})")
            lines.append("    return outs")
        else:
            lines.append(f"    return [{outs}]")
        body, result, errstate = lines[1:-1], lines[-1][len("    return "):], None
        if not all(self._quiet_line(n) for n in graph.nodes):
            # NumPy calls run under the reference interpreter's error state (no floating-point warnings). Setting
            # it costs ~0.5 us a call (the context variable, and each ufunc's cached lookup of it), as much as
            # ``np.maximum`` over 1000 floats: a driver whose NumPy calls can never warn (views, comparisons,
            # maximum, ...; see ``_QUIET``) runs without it.
            errstate = "token" if _ERRSTATE is not None else "with"
            if _ERRSTATE is not None:
                lines[1:] = [*_ERRSTATE_FRAME[0], *("    " + line for line in lines[1:]), *_ERRSTATE_FRAME[1]]
            else:
                lines[1:] = ["    with np.errstate(all='ignore'):"] + ["    " + line for line in lines[1:]]
        source = "\n".join(lines) + "\n"
        filename = f"<jitgraph driver #{next(_ids)}>"
        run_source(source, filename, ns)
        return source, ns, inline_driver(ns["driver"], body, result, errstate, ns)


class InlineDriver(NamedTuple):
    """A driver whose body a dispatch call function may run in place of calling it (``jit/dispatch.py``).

    ``fn``: the driver (the call function inlines it only where it would call exactly this function); ``lines``: its
    body at the top level of the function, with its arguments read from ``leaves`` (the list it is called with);
    ``result``: the expression it returns; ``names``: the namespace the lines read."""

    fn: Callable[..., Any]
    lines: tuple[str, ...]
    result: str
    names: dict[str, Any]


def inline_driver(fn: Callable[..., Any], body: list[str], result: str, errstate: str | None,
                  namespace: dict[str, Any]) -> InlineDriver | None:
    """The driver ``fn`` as lines to inline: its ``body`` (the lines between ``def`` and its one ``return result``,
    as ``_driver`` wrote them) and, under the error state's ``try``/``finally`` (``errstate`` "token"), that frame,
    with the result (names only) read after it; None for the ``with np.errstate`` form, or where a line is not
    straight-line code."""
    if errstate == "with" or (errstate and not re.fullmatch(r"\w+|\[\w+(?:, \w+)*\]", result)):
        return None
    body = list(body)
    if body and body[0].endswith(" = args"):
        body[0] = body[0][: -len("args")] + "leaves"
    for line in body:
        text = line.strip()
        if text.startswith(("return", "try:", "with ", "finally:", "yield")) or re.search(r"\bargs\b", text):
            return None
    body = [line[4:] for line in body]
    if errstate:
        body = [*(x[4:] for x in _ERRSTATE_FRAME[0]), *("    " + line for line in body or ["pass"]),
                *(x[4:] for x in _ERRSTATE_FRAME[1])]
    # The driver's locals renamed apart from the call function's (``v3`` -> ``_v3``: its checks name theirs ``v0``...).
    local = re.compile(r"\b(v\d\w*|token|outs)\b")
    body, result = [local.sub(r"_\1", line) for line in body], local.sub(r"_\1", result)
    names = {k: v for k, v in namespace.items() if k not in ("driver", "__builtins__")}
    return InlineDriver(fn, tuple(body), result, names)


def _copy_back(target: np.ndarray, value: Any) -> None:
    if target is not value:
        np.copyto(target, value, casting="unsafe")


def _detach_one(output: Any, mutated: tuple[Any, ...]) -> Any:
    """Outputs are values at the time they were computed: a copy of ``output`` if it shares memory with a mutated
    input (which the driver is about to write)."""
    if isinstance(output, np.ndarray) and any(np.may_share_memory(output, m) for m in mutated):
        return np.array(output, copy=True)
    return output
