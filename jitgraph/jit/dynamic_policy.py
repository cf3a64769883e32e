"""What a recompile makes dynamic: int arguments traced as runtime values, and array dimensions whose sizes change.

A mixin of :class:`~jitgraph.jit.function.CompiledFunction` (it reads the function's entries, lock-held state and
``_trace``/``_compile``); every method here runs under the function's compile lock, on a miss.

``compile(dynamic=...)``, as in ``torch.compile``:

* ``None`` (the default): automatic. The first call specialises everything. A recompile caused by an int
  argument's value retraces it as a runtime value (``dynamic_ints.py``); a recompile caused only by array sizes
  marks exactly those dimensions dynamic (the recompile reason says which).
* ``True``: int arguments are runtime values from the first call (where the trace allows), and every dimension is
  dynamic from the first call.
* ``False``: nothing becomes dynamic; every new int value and every new size is a recompile (except dimensions
  marked with ``jitgraph.mark_dynamic``, which win over the function's default).

``jitgraph.mark_dynamic(x, dim)`` / ``mark_static(x, dim)`` mark one array's dimension for every function it is
passed to (``dynamic_ints.mark``); a mark is read on the next miss, as ``torch.compile`` reads it when it traces.

What a dynamic dimension buys: the first recompile caused only by sizes is traced again with those dimensions as
symbols (``f32[s0,784]``, jit/symbolic_sizes.py); when that trace is one whole graph that is, instantiated at each
traced size, the graph traced there, every later call that differs only in those sizes is an *instance* of it: the
symbolic graph instantiated at its sizes and compiled (no trace, no recompile, not an entry; its Numba kernels,
which take extents as arguments, come from the kernel cache). Where the symbolic trace fails (the code branches on
a size, or shapes an array by ``n // 2``), a call with a new size is traced for its sizes; when that trace is the
same graph with other sizes (``entries.same_but_sizes``), it is a *size variant* of an entry: it does not count
towards ``cache_limit`` and is no recompile (``cache_info().size_variants``; the ``jitgraph.recompiles`` log at INFO
shows each). A new size whose graph differs in more than sizes is an ordinary recompile, and so is every new size
after :data:`MAX_VARIANTS` variants (a function whose sizes never repeat then meets ``cache_limit`` and runs
eagerly, as it would without dynamic dimensions, instead of being traced again on every call).
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from jitgraph.jit.entries import Entry, same_but_sizes
from jitgraph.jit.symbolic_sizes import MAX_INSTANCES, symbolic_dims, trace_symbolic
from jitgraph.tracer import dynamic_ints
from jitgraph.tracer.context import GraphBreak
from jitgraph.tracer.trace import parameter_names, trace

log_recompiles = logging.getLogger("jitgraph.recompiles")

MAX_VARIANTS = 32  # size variants per function (each holds a traced graph; the kernels are shared)
MAX_SYMBOLIC_FAILURES = 3  # symbolic traces tried and refused per function before it stops trying (each costs a trace)


class SizePlan(NamedTuple):
    """A miss that differs from each entry of ``likes`` (most recent first) only in the sizes of its ``dims``
    (``x.shape[0]``), all allowed dynamic. Every such entry is a candidate: after a size-0 or size-1 call (its own
    graph), the next size is still a variant of the entry traced at an ordinary size."""

    likes: tuple[tuple[Entry, frozenset[str]], ...]


class DynamicPolicy:
    """Mixin: dynamic ints and dynamic dimensions (module docstring)."""

    dynamic: bool | None
    entries: list[Entry]
    # Whether a size-only recompile is traced again with symbolic sizes (symbolic_sizes.py). GradFunction says no:
    # its entries' graphs are derivatives, not the traced function's graph the symbolic trace is checked against.
    symbolic_sizes = True

    def _clear_dynamic(self) -> None:
        # Int arguments traced as runtime values, those that must stay specialised, and the ints of the last miss.
        self._dynamic: frozenset[int | str] = frozenset()
        self._static: set[int | str] = set()
        self._last_ints: dict[int | str, int] = {}
        # Dimensions (``x.shape[0]``, the labels of ``keys.describe``) dynamic for this function, and those marked
        # static (never dynamic).
        self._dims: set[str] = set()
        self._static_dims: set[str] = set()
        self._instances = 0  # instances of symbolic entries published (symbolic_sizes.py)
        self._symbolic_failures = 0  # symbolic traces refused (after MAX_SYMBOLIC_FAILURES, no more are tried)

    # ---- dimensions ------------------------------------------------------------------------------------------
    def _size_plan(self, facts: dict[str, Any], args: tuple, kwargs: dict[str, Any]) -> SizePlan | None:
        """Read the marks on this call's arrays; then, when the call differs from an entry in array sizes only and
        every such dimension may be dynamic, the plan for it (None otherwise)."""
        marked, static = dynamic_ints.marked_dims(args, kwargs, parameter_names(self._fn, len(args)))
        self._static_dims = (self._static_dims - marked) | static
        self._dims = (self._dims | marked) - static
        likes = []
        for entry in reversed(self.entries):
            dims = dynamic_ints.size_changes(entry.facts, facts)
            if dims is not None and not dims & self._static_dims and \
                    (self.dynamic is not False or dims <= self._dims):
                likes.append((entry, frozenset(dims)))
        return SizePlan(tuple(likes)) if likes else None

    def _settled(self, plan: SizePlan | None) -> bool:
        """Whether a miss under ``plan`` is only new sizes of dimensions already dynamic (no recompile)."""
        return plan is not None and self._variants < MAX_VARIANTS and \
            (self.dynamic is True or any(dims <= self._dims for _, dims in plan.likes))

    def _settle_sizes(self, entry: Entry, plan: SizePlan | None, reason: str | None) -> str | None:
        """After the trace of a miss under ``plan``: a size variant (``entry.variant``), or a recompile that makes
        its dimensions dynamic (the reason says which). Returns the recompile reason."""
        if entry.instance_of is not None:  # a new size of a symbolic entry: no trace, no recompile
            entry.variant = True
            log_recompiles.info("jitgraph: %s: new size of dynamic %s (%s); the symbolic entry instantiated for it",
                                self.name, entry.instance_of.symbolic.describe(), reason)
            return reason
        like = None if plan is None else next(
            ((e, dims) for e, dims in plan.likes
             if e.mode == entry.mode and same_but_sizes(entry.traced_graph, e.traced_graph)), None)
        if like is None:
            return reason  # another graph, not only other sizes: an ordinary recompile
        if self._variants >= MAX_VARIANTS:
            return f"{reason} ({MAX_VARIANTS} sizes of dynamic dimensions traced already)"
        dims = like[1]
        new = set() if self.dynamic is True else dims - self._dims
        if new:
            self._dims |= new
            return f"{reason} ({_in_order(new, entry.facts)} now dynamic)"
        entry.variant = True
        log_recompiles.info("jitgraph: %s: new size of dynamic %s (%s); the same graph, traced for it", self.name,
                            _in_order(dims, entry.facts), reason)
        return reason

    # ---- symbolic sizes (symbolic_sizes.py) -----------------------------------------------------------------
    def _instance(self, plan: SizePlan | None, facts: dict[str, Any], args: tuple, kwargs: dict[str, Any]
                  ) -> Entry | None:
        """A miss that differs from an entry with a symbolic form only in its symbolic dimensions: that form
        instantiated at the call's sizes, as an entry (no trace). None when no form serves the call."""
        if plan is None or self._instances >= MAX_INSTANCES:
            return None
        for like, dims in plan.likes:
            form = like.symbolic
            if form is None or like.mode != "graph" or not dims <= form.labels:
                continue
            sizes = form.sizes_of(facts)
            if sizes is None or form.check(args, kwargs) is None:
                continue
            traced = self._trace(args, kwargs, form.instance(sizes))
            if traced.brk is not None or traced.alias != form.alias:
                continue  # another aliasing of the arguments (``f(q, q, q)`` traced, ``f(q, k, v)`` now): a trace
            entry = self._compile(traced)
            entry.instance_of = like
            self._instances += 1
            return entry
        return None

    def _symbolize(self, entry: Entry, plan: SizePlan | None, facts: dict[str, Any], args: tuple,
                   kwargs: dict[str, Any], reason: str | None) -> str | None:
        """After a new traced graph entry (a recompile, or a size variant no symbolic entry served: another pattern of
        equal sizes, ``q`` and ``k`` of different lengths after equal ones): trace the call again with its dynamic
        dimensions as symbols -- those already dynamic, and those in which this call differs from an earlier entry in
        size only (also where the graphs differ in more than sizes: a size in an attribute, ``np.zeros((n, 3))``) --
        so that later sizes are instances of it (``entry.symbolic``). Where that trace fails nothing changes (after
        :data:`MAX_SYMBOLIC_FAILURES` failures the function stops trying). Returns the recompile reason, naming
        dimensions that became dynamic here."""
        if not self.symbolic_sizes or entry.mode != "graph" or entry.instance_of is not None or entry.device or \
                entry.traced.split is not None or entry.traced.resumable or self._instances >= MAX_INSTANCES or \
                self._symbolic_failures >= MAX_SYMBOLIC_FAILURES:
            return reason
        labels = set(self._dims)
        if plan is not None and self.dynamic is not False:
            labels.update(*(dims for _, dims in plan.likes))
        if self.dynamic is True:
            labels |= {f"{k}[{i}]" for k, v in facts.items() if k.endswith(".shape") for i in range(len(v))}
        dims = symbolic_dims(labels - self._static_dims, facts)
        if not dims:
            return reason
        checks = [(entry.traced_graph, facts)] + [(e.traced_graph, e.facts) for e, _ in (plan.likes if plan else ())
                                                  if e.mode == "graph" and e.instance_of is None and
                                                  e.traced.alias == entry.traced.alias]
        form = trace_symbolic(self._fn, args, kwargs, facts, entry.traced.alias, dims, checks)
        if form is None:
            self._symbolic_failures += 1
            return reason
        entry.symbolic = form
        log_recompiles.info("jitgraph: %s: traced with symbolic sizes (%s); later sizes need no trace", self.name,
                            form.describe())
        new = form.labels - self._dims
        if new and self.dynamic is not True:
            self._dims |= new
            if reason is not None and "now dynamic" not in reason:
                reason = f"{reason} ({_in_order(set(new), facts)} now dynamic)"
        return reason

    # ---- ints ------------------------------------------------------------------------------------------------
    def _compile_dynamic(self, user_args: tuple, user_kwargs: dict[str, Any]) -> Entry | None:
        """On a recompile: int arguments whose value changed since the last miss (with ``dynamic=True``: every int
        argument, from the first call) are retraced as runtime values (dynamic_ints.py). Returns the entry of that
        trace, or None when there is no such argument or the trace needs their values (they then stay
        specialised). ``dynamic=False``: never."""
        if self.dynamic is False:
            return None
        ints = dynamic_ints.int_arguments(user_args, user_kwargs)
        changed = frozenset(ints) if self.dynamic is True else dynamic_ints.changed(self._last_ints, ints)
        new = changed - self._static - self._dynamic
        self._last_ints = ints
        if not new:
            return None
        dynamic = self._dynamic | new
        args, kwargs = dynamic_ints.view(user_args, user_kwargs, dynamic)
        try:  # a trace that needs the int's value may fail in any way: the int then stays specialised, silently
            result = trace(self._fn, args, kwargs)
        except Exception:  # noqa: BLE001
            result = None
        if result is not None and result.breaks is not None and self._same_break(result.breaks):
            # The break is reached whatever the ints' values (a trace that needed them would have broken earlier,
            # on that use): the eager entry keys on their type only, so a loop counter does not retrace it.
            return self._compile(self._trace(args, kwargs, result, dynamic))
        if result is None or result.breaks is not None or result.graph is None or \
                not dynamic_ints.uses_are_float(result.graph):
            self._static |= new
            return None
        entry = self._compile(self._trace(args, kwargs, result, dynamic))
        if entry.mode != "graph":  # the backend failed: the static trace will fail or fall back the same way
            self._static |= new
            return None
        return entry  # self._dynamic becomes ``dynamic`` when the entry is published

    def _same_break(self, brk: GraphBreak) -> bool:
        """Whether an eager entry already broke at the same place for the same reason (a trace break, not a
        backend failure): then the break does not depend on what this retrace made dynamic."""
        for entry in self.entries:
            had = entry.traced.brk
            if entry.mode == "eager" and had is not None and \
                    (had.reason, had.filename, had.lineno) == (brk.reason, brk.filename, brk.lineno):
                return True
        return False


def _in_order(dims: set[str] | frozenset[str], facts: dict[str, Any]) -> str:
    """``q.shape[0], k.shape[0]``: dimensions in the order of the arguments (``facts``), then by axis."""
    labels = {label: k for k, label in enumerate(facts)}
    return ", ".join(sorted(dims, key=lambda d: (labels.get(d[:d.rindex("[")], len(labels)), d)))
