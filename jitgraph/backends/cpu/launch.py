"""Launching one fused node: specialise its kernel to the operands' layout, prepare views, allocate, call.

The first call with a given operand layout (shapes and strides) builds a :class:`Launch`: which views to pass,
which kernel specialisation (rank, broadcast pattern) to call, serial or parallel, how to allocate each output.
Later calls with the same layout only look the plan up, make the views and call Numba, which is what keeps a small
cached call within a few microseconds of eager NumPy.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitgraph import config
from jitgraph.backends.cpu import blas, column_sweep, interrupts, measured_choice, streaming, threads
from jitgraph.backends.cpu import cache as kcache
from jitgraph.backends.cpu.compile_gc import collector_paused
from jitgraph.backends.cpu.flat_body import PRODUCTS_MARK
from jitgraph.backends.cpu.kernel_source import ArrayArg, KernelSpec, kernel_source
from jitgraph.backends.cpu.launch_source import run_function_source
from jitgraph.backends.cpu.loop_order import coalesce, loop_order
from jitgraph.backends.cpu.mathlib import VECTOR_MATH
from jitgraph.backends.cpu.threads import parallel_threshold
from jitgraph.generated_source import run_source
from jitgraph.ir.fusion_groups import GroupInfo, group_info
from jitgraph.ir.graph import Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.ops.cost import math_bound
from jitgraph.progress import compiling

_launch_ids = itertools.count()
_kernel_log = logging.getLogger("jitgraph.kernels")  # JITGRAPH_LOGS=kernels
_perf_log = logging.getLogger("jitgraph.perf")
_SHARED: dict[tuple[str, bool], Any] = {}  # kernel source with its name masked -> the dispatcher compiled for it
COMPILE_LOG: list[tuple[str, float]] = []  # (kernel name, seconds) of every first call that compiled or loaded


def _math_table(option: str) -> dict | None:
    return dict(VECTOR_MATH) if option == "fast" else None


@dataclass
class Launch:
    """One specialisation of a group: the Numba kernel and the generated ``run(operands)`` that feeds it."""

    kernel: Any
    run: Any
    source: str


class GroupKernel:
    """The compiled form of one ``fused`` node."""

    def __init__(self, node: Node, options: Mapping[str, Any]) -> None:
        self.node = node
        self.name: str = node.attrs["name"]
        (self.body,) = node.regions
        self.info: GroupInfo = group_info(node)
        self.use_cache = bool(config.option(options, "cache"))
        self.reuse_outputs = bool(config.option(options, "reuse_outputs"))
        self.math = config.option(options, "math")
        self.math_table = _math_table(self.math)
        self.head = next((n for n in self.body.nodes if n.op in ("matmul", "dot")), None)
        self.inputs = list(self.body.inputs)
        self.input_index = {n: k for k, n in enumerate(self.inputs)}
        d = max(len(self.info.domain), 1)
        self.domain = self.info.domain or (1,)
        self.raxes = self.info.raxes
        self.full = {n for n, m in self.info.amap.items() if any(a in self.raxes for a in m if a is not None)}
        if not self.raxes:
            self.full = set(self.info.amap)
        self.use_of: dict[tuple[Node, Node], int] = {}
        self.uses = self._operand_uses(d)
        self.scalar_inputs = [n for n in self.inputs if self._is_scalar(n)]
        self.array_operands = sorted({self.input_index[v] for v, _ in self.uses if v is not self.head})
        self.kernel_outputs = [o for o in self.body.outputs if o is not self.head]
        self.out_walks = [self._walks(self.info.amap[o], d) for o in self.kernel_outputs]
        self.work = self._work_per_element(d)
        self.threshold = parallel_threshold(self.work)
        self._keys: dict[tuple[tuple[int, int], ...], Any] = {}  # generated key functions, per in-place plan
        self.launches: dict[Any, Launch] = {}  # only launches whose first call finished (see __call__)
        self._first_calls = threading.Lock()  # one first call (plan, compile or load, run) at a time
        # The first full output of the product's dtype is written into the product's buffer (the epilogue).
        self.prod_output = next((k for k, o in enumerate(self.kernel_outputs) if self.head is not None and o in
                                 self.full and o.type.dtype == self.head.type.dtype), None)
        self.modules: dict[Any, Any] = {}
        self.both_loops: dict[Any, bool] = {}  # kernels (by key) with the products and the divider loops
        self.source = ""  # the module source of the latest specialisation built (empty until the first call)
        self.times: dict[str, float] = {"codegen": 0.0, "numba": 0.0}  # summed over specialisations
        # ``C -= s * (A @ B)`` written into C: one BLAS gemm with beta = 1 and no kernel (see blas.py).
        self.update = blas.update_form(self.body, self.head) if self.math == "fast" else None
        self.gemm_updates = 0  # calls that took that path (explain shows it)

    def _key(self, operands: Sequence[Any], inplace: tuple[tuple[int, int], ...]) -> tuple:
        """The launch key: the in-place plan, the array operands' strides, and whether each in-place target is
        writeable. The first call generates a function building exactly this tuple (a loop over the operands cost
        ~1 us of a 3 us small call); the plan is fixed per driver line, so each plan gets its own function."""
        make = self._keys.get(inplace)
        if make is None:
            strides = "".join(f"ops[{j}].strides, " for j in self.array_operands)
            flags = "".join(f"((f := getattr(ops[{j}], 'flags', None)) is None or f.writeable), "
                            for _, j in inplace)
            ns: dict[str, Any] = {}
            exec(f"def key(ops, inplace):\n    return (inplace, {strides}{flags})\n", ns)  # noqa: S102 - ours
            make = self._keys[inplace] = ns["key"]
        return make(operands, inplace)

    def entry(self, inplace: tuple[tuple[int, int], ...] = ()) -> Any:
        """``run(operands)`` for one driver line (its in-place plan fixed): looks the launch up by a key built
        inline and calls it; anything else (a first call, the gemm update) goes through :meth:`__call__`. What a
        small cached call pays between the driver and Numba is this one function."""
        if self.update is not None and inplace == ((0, self.update.c),):
            return lambda ops: self(ops, inplace)
        strides = "".join(f"ops[{j}].strides, " for j in self.array_operands)
        flags = "".join(f"((f := getattr(ops[{j}], 'flags', None)) is None or f.writeable), "
                        for _, j in inplace)
        source = (f"def entry(ops):\n    launch = LAUNCHES.get((PLAN, {strides}{flags}))\n"
                  "    if launch is not None:\n        return launch.run(ops)\n    return CALL(ops, PLAN)\n")
        ns: dict[str, Any] = {"LAUNCHES": self.launches, "PLAN": inplace, "CALL": self}
        exec(source, ns)  # noqa: S102 - our own generated source
        return ns["entry"]

    def _work_per_element(self, d: int) -> int:
        """The serial cost per domain element that decides threads (see :func:`threads.work_per_element`): with
        reductions, only the ops over the whole domain (and the reductions) and the operands walking all of it."""
        reduces = any(OPS[n.op].kind is OpKind.REDUCTION for n in self.info.amap)
        per_element = [n for n in self.info.amap if not reduces or n in self.full or
                       OPS[n.op].kind is OpKind.REDUCTION]
        ops = [(n.op, self.math_table is not None and (n.op, n.type.dtype.name) in self.math_table)
               for n in per_element]
        reads = sum(1 for _, walks in self.uses if not reduces or sum(walks) == d)
        return threads.work_per_element(ops, reads, reduces)

    @staticmethod
    def _is_scalar(n: Node) -> bool:
        return n.type.weak or n.type.shape == ()

    @staticmethod
    def _walks(amap: tuple[int | None, ...], d: int) -> tuple[bool, ...]:
        axes = {a for a in amap if a is not None}
        return tuple(a in axes for a in range(d))

    def _operand_uses(self, d: int) -> list[tuple[Node, tuple[bool, ...]]]:
        """Distinct (body input, walked domain axes) pairs: each becomes one kernel array argument."""
        uses: list[tuple[Node, tuple[bool, ...]]] = []
        inside = set(self.info.amap)
        for n in self.body.nodes:
            if n not in inside or n is self.head:
                continue
            for pos, i in enumerate(n.inputs):
                if i.op != "input" and i is not self.head:
                    continue
                if n.op == "setitem" and pos == 0:
                    continue  # a whole-array assignment never reads the old contents
                if self._is_scalar(i) and i is not self.head:
                    continue
                if OPS[n.op].kind is OpKind.REDUCTION:
                    amap: tuple[int | None, ...] = tuple(range(len(self.info.domain)))
                else:
                    out = self.info.amap[n]
                    shift = len(out) - i.type.ndim
                    amap = tuple(None if s == 1 else out[j + shift] for j, s in enumerate(i.type.shape))
                use = (i, self._walks(amap, d))
                if use not in uses:
                    uses.append(use)
                self.use_of[(n, i)] = uses.index(use)
        return uses

    # -- specialisation ------------------------------------------------------------------------------------------
    def _plan(self, operands: Sequence[Any], inplace: Mapping[int, int]) -> Launch:
        arrays: dict[Node, Any] = dict(zip(self.inputs, operands))
        if self.head is not None:
            arrays[self.head] = np.empty(self.head.type.shape, self.head.type.dtype)
        d = len(self.domain)
        dom = self.domain
        views = []
        virtual = []
        for value, walks in self.uses:
            arr = arrays[value]
            vshape = tuple(dom[a] if walks[a] else 1 for a in range(d))
            view = arr.reshape(vshape)
            views.append((value, vshape, view))
            virtual.append(tuple(view.strides[a] if walks[a] else 0 for a in range(d)))
        out_shapes = [tuple(dom[a] if w[a] else 1 for a in range(d)) for w in self.out_walks]
        if self.raxes:
            perm = None
            groups = [[a] for a in range(d)]
        else:
            ref = max(range(len(views)), key=lambda k: math.prod(views[k][1]), default=None)
            perm = loop_order(dom, virtual[ref]) if ref is not None else tuple(range(d))
            if perm == tuple(range(d)):
                perm = None
            order = perm or tuple(range(d))
            pdom = [dom[a] for a in order]
            out_virtual = []
            for w in self.out_walks:
                # Outputs are allocated in loop order, so their strides follow it.
                st, acc = [0] * d, 1
                for a in reversed(order):
                    st[a] = acc if w[a] else 0
                    acc *= dom[a] if w[a] else 1
                out_virtual.append(st)
            allv = [[v[a] for a in order] for v in virtual + out_virtual]
            groups = [[order[k] for k in g] for g in coalesce(pdom, allv)]
        sizes = tuple(math.prod(dom[a] for a in g) for g in groups)
        specs_views = []
        arg_walks = []
        for (value, vshape, view), (_, walks) in zip(views, self.uses):
            gw = tuple(any(walks[a] and dom[a] != 1 for a in g) or (all(walks[a] for a in g)) for g in groups)
            fshape = tuple(sizes[k] if gw[k] else 1 for k in range(len(groups)))
            specs_views.append((vshape, perm, fshape))
            arg_walks.append(gw)
        out_specs = []
        out_arg_walks = []
        inv = tuple(int(k) for k in np.argsort(perm)) if perm is not None else None
        for w, oshape in zip(self.out_walks, out_shapes):
            gw = tuple(any(w[a] and dom[a] != 1 for a in g) or all(w[a] for a in g) for g in groups)
            fshape = tuple(sizes[k] if gw[k] else 1 for k in range(len(groups)))
            alloc = tuple(oshape[a] for a in (perm or range(d)))
            out_specs.append((oshape, perm, inv, fshape, alloc))
            out_arg_walks.append(gw)
        rank = len(groups)
        inner_dims = tuple(k for k, g in enumerate(groups) if any(a in self.raxes for a in g))
        # Per output, the buffer it may be written into (an operand's, or the BLAS product's), else None: fresh.
        targets = [self._inplace_source(k, o, inplace, operands, (s[0], s[1], s[3]))
                   for k, (o, s) in enumerate(zip(self.kernel_outputs, out_specs))]
        alias = self._store_through(operands, inplace, targets, specs_views, out_specs, arg_walks, out_arg_walks)
        stream = self._streamed(operands, targets, alias)
        narrow = column_sweep.narrow_columns(rank, inner_dims, sizes, virtual)  # float32 column sums, as NumPy's
        key = (rank, inner_dims, tuple(arg_walks), tuple(out_arg_walks),
               tuple(arrays[v].dtype.str for v, _ in self.uses), tuple(sorted(alias.items())), stream, narrow)
        kernel = self.modules.get(key)
        if kernel is None:
            kernel = self._compile(rank, inner_dims, arg_walks, out_arg_walks, alias, stream, narrow)
            self.modules[key] = kernel
            self.both_loops[key] = PRODUCTS_MARK in self.source
        divider = None
        if self.both_loops.get(key) and math.prod(dom) >= measured_choice.MIN_ELEMENTS:
            # also the divider-only kernel, to time against the products (measured_choice.py)
            divider = self.modules.get(key + ("divide",))
            if divider is None:
                shown = self.source
                divider = self._compile(rank, inner_dims, arg_walks, out_arg_walks, alias, stream, narrow, True)
                self.modules[key + ("divide",)] = divider
                self.source = shown  # explain shows the kernel with both loops
        outer = next((k for k in range(rank) if k not in inner_dims), None)
        n_outer = sizes[outer] if outer is not None else 1
        chunks = threads.chunks(n_outer) if math.prod(dom) >= self.threshold else [(0, n_outer)]
        source, ns = run_function_source(self, operands, sizes, specs_views, out_specs, inplace, targets, chunks,
                                         alias)
        filename = f"<jitgraph launch {self.name} #{next(_launch_ids)}>"
        launch = Launch(kernel, run_source(source, filename, {**ns, "KERNEL": kernel})["run"], source)
        if divider is None:
            return launch
        other = Launch(divider, run_source(source, filename, {**ns, "KERNEL": divider})["run"], source)
        return measured_choice.MeasuredLaunch(launch, other)  # type: ignore[return-value]

    def _store_through(self, operands: Sequence[Any], inplace: Mapping[int, int], targets: list[str | None],
                       views: list, outs: list, arg_walks: list, out_walks: list) -> dict[int, int]:
        """Outputs to write through the kernel's own argument for the input they overwrite: output k -> array use u.

        Which outputs go into a caller's buffer at all is the in-place planner's decision
        (:mod:`jitgraph.backends.inplace`, handed in as ``inplace``); this only picks the parameter to store through.

        An in-place update passed as a separate output parameter is the same memory as an input parameter, and
        LLVM's runtime alias check then sends the loop to its scalar version (an Adam step ran 2.6x slower). Storing
        through the input's own argument, at the element just loaded, lets it vectorise. Only for a writeable
        buffer whose kernel view is exactly the input's (same shape, loop order and walked dims); the launch key
        includes writeability, so a read-only argument gets a fresh buffer as before.
        """
        found: dict[int, int] = {}
        for k, expr in enumerate(targets):
            oshape, perm, _, fshape, _ = outs[k]
            if expr is None:
                continue
            if expr == "p":  # the epilogue writes over the BLAS product it reads
                target = self.head
            else:
                j = inplace[k]
                if not isinstance(operands[j], np.ndarray) or not operands[j].flags.writeable:
                    continue
                target = self.inputs[j]
            for u, (value, _) in enumerate(self.uses):
                if value is target and tuple(arg_walks[u]) == tuple(out_walks[k]) and \
                        views[u] == (oshape, perm, fshape):
                    found[k] = u
                    break
        return found

    def _streamed(self, operands: Sequence[Any], targets: list[str | None], alias: Mapping[int, int]
                  ) -> frozenset[str]:
        """Output parameters (``o<k>``) the kernel may write with streaming stores (see :mod:`streaming`): the
        fresh buffers of a launch that moves more bytes than the last-level cache holds."""
        fresh = [k for k, target in enumerate(targets) if k not in alias and target is None]
        moved = sum(operands[self.input_index[v]].nbytes for v in {v for v, _ in self.uses if v is not self.head}
                    if isinstance(operands[self.input_index[v]], np.ndarray))
        moved += sum(math.prod(o.type.shape) * o.type.dtype.itemsize for o in self.kernel_outputs)
        # A kernel with transcendental math per element is bound by it, not by memory: its stores overlap the math
        # and streaming them gained nothing (row softmax over (4096, 1024): 3.7 ms plain, 3.9 ms streamed).
        if not fresh or any(math_bound(n.op) for n in self.full) or not streaming.worth_streaming(moved):
            return frozenset()
        return frozenset(f"o{k}" for k in fresh)

    def _compile(self, rank: int, inner: tuple[int, ...], arg_walks: list, out_walks: list,
                 alias: Mapping[int, int], stream: frozenset[str] = frozenset(), narrow: bool = False,
                 divide: bool = False) -> tuple[Any, Any]:
        arrays = [ArrayArg(f"a{k}", value, tuple(w)) for k, ((value, _), w) in enumerate(zip(self.uses, arg_walks))]
        outputs = [ArrayArg(f"a{alias[k]}" if k in alias else f"o{k}", o, tuple(w))
                   for k, (o, w) in enumerate(zip(self.kernel_outputs, out_walks))]
        scalars = [(f"s{k}", n) for k, n in enumerate(self.scalar_inputs)]
        means = {}
        for n in self.info.amap:
            if n.op == "mean":
                means[n] = " * ".join(f"n{k}" for k in inner) or "1"
        spec = KernelSpec(self.name, self.body, rank, inner, arrays, scalars, outputs,
                          {n for n in self.full if n in self.info.amap}, self.info.level, self.math,
                          self.math_table, self.head, means,
                          {key: arrays[k].name for key, k in self.use_of.items()}, stream, narrow, divide)
        source = kernel_source(spec, self.use_cache)
        # Groups with the same body under another name (Adam on each parameter of a model, the same layer twice)
        # share one Numba dispatcher: one compile instead of one per group. The source shown keeps its own name.
        twin = (source.replace(self.name, "jg_kernel"), self.use_cache)
        shared = _SHARED.get(twin)
        if shared is not None:
            self.source = source
            return shared
        try:
            module = kcache.load_module(self.name, source, self.use_cache)
        except kcache.CacheRefused:  # an unsafe cache directory (warned once): compile in memory, cache nothing
            source = kernel_source(spec, False)
            module = kcache.load_module(self.name, source, False)
        _kernel_log.debug("jitgraph: kernel %s (rank %d):\n%s", self.name, rank, source)
        self.source = source
        kernel = getattr(module, self.name)
        _SHARED[twin] = kernel
        return kernel

    # -- calling -------------------------------------------------------------------------------------------------
    def __call__(self, operands: Sequence[Any], inplace: tuple[tuple[int, int], ...] = ()) -> list[Any]:
        """Run the group on the fused node's operand values. ``inplace`` pairs (kernel output k, operand j) whose
        buffer output k may overwrite. Returns the output values, one per body output."""
        update = self.update
        if update is not None and inplace == ((0, update.c),) and blas.gemm_update(
                operands[update.a], operands[update.b], operands[update.c], update.alpha(operands, self.head.type.dtype)):
            self.gemm_updates += 1
            return [operands[update.c]]
        key = self._key(operands, inplace)
        launch = self.launches.get(key)
        if launch is None:
            with self._first_calls:  # other threads wait for the launch being compiled, then use it
                launch = self.launches.get(key)
                if launch is None:
                    return self._first_call(key, operands, inplace)
        return launch.run(operands)

    def _first_call(self, key: Any, operands: Sequence[Any], inplace: tuple[tuple[int, int], ...]) -> list[Any]:
        """Plan, compile (or load) and run a new layout; the launch is registered only once that all finished.

        A launch registered earlier would outlive a first call that failed or was interrupted (KeyboardInterrupt)
        part-way through Numba: later calls would reuse its suspect dispatcher. Instead nothing is left behind: the
        launch is not registered, and the kernel's dispatcher and module are dropped, so the next call starts
        afresh. A Ctrl-C meanwhile is delivered after the compile (see :mod:`interrupts`)."""
        planned = time.perf_counter()
        # A spinner on a terminal when this takes over ~0.5 s; Ctrl-C waits for the end of the compile; the cyclic
        # garbage collector waits too (its full collections cost ~0.1 s each during a compile: compile_gc.py).
        with interrupts.deferred(), compiling(f"kernel {self.name}"), collector_paused():
            launch = self._plan(operands, dict(inplace))
            start = time.perf_counter()
            try:
                # Another process compiling this kernel (a shared cache directory) finishes first; this one loads.
                with kcache.compile_lock(launch.kernel):
                    try:
                        result = launch.run(operands, True)  # chunks one after the other while Numba compiles
                    except Exception:
                        # A corrupt or truncated Numba cache file fails while loading: delete it and compile afresh.
                        if not self.use_cache or not kcache.numba_files(launch.kernel):
                            raise
                        kcache.drop_numba_cache_of(launch.kernel)
                        result = launch.run(operands, True)
            except BaseException:
                # every kernel of the launch: a measured one's divider may have been compiling (measured_choice.py)
                for dropped in [v.kernel for v in getattr(launch, "variants", (launch,))]:
                    for k in [k for k, kernel in self.modules.items() if kernel is dropped]:
                        del self.modules[k]
                    for k in [k for k, kernel in _SHARED.items() if kernel is dropped]:
                        _SHARED.pop(k, None)
                    kcache.forget_module(dropped)
                raise
            self.launches[key] = launch
        seconds = time.perf_counter() - start
        COMPILE_LOG.append((self.name, seconds))
        # For explain's per-phase compile times: kernel source generation vs Numba (compile or disk-cache load).
        self.times["codegen"] += start - planned
        self.times["numba"] += seconds
        _perf_log.debug("jitgraph: kernel %s: codegen %.1f ms, numba %.1f ms (first call with this layout)",
                        self.name, (start - planned) * 1e3, seconds * 1e3)
        kcache.record_dispatch(launch.kernel)
        return result

    def _inplace_source(self, k: int, o: Node, inplace: Mapping[int, int], operands: Sequence[Any],
                        layout: tuple) -> str | None:
        """The expression of the buffer output ``k`` may be written into, if the planned view of it is exact."""
        if o not in self.full:
            return None
        if k in inplace:
            cand, expr = operands[inplace[k]], f"ops[{inplace[k]}]"
        elif self.head is not None and self.head not in self.body.outputs and k == self.prod_output:
            cand, expr = np.empty(self.head.type.shape, self.head.type.dtype), "p"
        else:
            return None
        if not isinstance(cand, np.ndarray) or cand.shape != o.type.shape or cand.dtype != o.type.dtype:
            return None
        oshape, perm, fshape = layout
        view = cand.reshape(oshape)
        view = (view.transpose(perm) if perm is not None else view).reshape(fshape)
        return expr if np.may_share_memory(view, cand) else None
