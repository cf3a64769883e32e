"""The per-trace state shared by every frame: the graph being built, buffers, guards and wrapped outside values.

Values enter a trace in two ways. Arguments are *leaves* of the dispatch key (arrays, floats and NumPy scalars
become graph inputs in key order). Everything else the code reaches — globals, closure cells, attributes of
objects — is *wrapped* on first read: arrays become extra graph inputs, other values are specialised, and a guard
records the assumption.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from jitgraph.device_arrays import device_type_of, is_device_array
from jitgraph.errors import TypeInferenceError
from jitgraph.ir.graph import GraphBuilder, Node, SourceLoc
from jitgraph.ir.ops import OPS, OpKind, get_op
from jitgraph.ir.symbols import Sym, SymExpr
from jitgraph.ir.types import SUPPORTED_DTYPES, TensorType, type_of
from jitgraph.tracer.dynamic_ints import DynamicInt
from jitgraph.tracer.guards import GuardSet, Source
from jitgraph.tracer.int_overflow import python_int_overflow
from jitgraph.tracer.keys import UNGUARDABLE, is_namedtuple, value_part
from jitgraph.tracer.outside import SPECIALISED, OutsideValues
from jitgraph.tracer.region_state import BodyBuilder, RegionState
from jitgraph.tracer.side_effects import SideEffects
from jitgraph.tracer.values import Buffer, TArray, ViewStep

MAX_STEPS = 200_000  # instructions per trace before we give up (a loop far too long to unroll)
IMMUTABLE_MODULE_PREFIXES = ("numpy", "math", "builtins", "operator", "functools", "itertools")


class GraphBreak(Exception):
    """Internal: the tracer cannot capture this call. Carries the reason and the user's location.

    ``user_error`` is the exception NumPy/Python would raise eagerly (a shape mismatch, say); the call then runs
    eagerly so the user sees exactly that exception.
    """

    def __init__(self, reason: str, filename: str | None, lineno: int | None,
                 user_error: BaseException | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.filename = filename
        self.lineno = lineno
        self.user_error = user_error


RunFrame = Callable[..., Any]
"""``run_frame(tx, code, locals_, cells, globals_, globals_source, builtins, generator) -> return value``: runs a
code object in a new symbolic frame (``frame.run_frame``). Inlining a call needs the interpreter and the
interpreter's handlers make calls; the context carries the entry point, so ``calls`` need not import ``frame``."""


class TraceContext(OutsideValues):
    """Per-trace state shared by every frame.

    ``run_frame`` is the interpreter that inlined calls run in (see :data:`RunFrame`). ``regions`` holds what loop
    and branch regions learn (:class:`RegionState`); ``in_region`` says whether ops now go into a region body.
    """

    def __init__(self, guards: GuardSet, run_frame: RunFrame, dynamic_sources: frozenset[str] = frozenset()) -> None:
        self.builder: GraphBuilder | BodyBuilder = GraphBuilder()
        self.guards = guards
        self.run_frame = run_frame
        self.regions = RegionState()
        # Outside Python ints/floats the trace reads as runtime values (a step counter ``self.t += 1`` that the
        # replay rewrites each call would otherwise fail its value guard on every call): side_effects.py.
        self.dynamic_sources = dynamic_sources
        # Argument dimensions traced as symbolic sizes: source name -> {axis: Sym} (jit/symbolic_sizes.py).
        self.symbolic_dims: dict[str, dict[int, Sym]] = {}
        # With ``duck_outside``, an array read from an attribute or global whose size equals a symbol's takes it,
        # guarded against ``symbol_codes`` (each symbol's first argument dimension, as guard code).
        self.duck_outside = False
        self.symbol_codes: dict[str, tuple[Sym, str]] = {}
        self.side_effects = SideEffects()
        self.copies_of: dict[int, list[Any]] = {}  # a caller's list/dict id -> the tracer's copies of it
        self.copy_origin: dict[int, list[Any]] = {}  # a copy's id -> every copy of the same caller's container
        self.may_split = True  # print/logging/np.random calls cut the graph (split.py) instead of breaking
        self.cuts: list[Any] = []  # split.Cut, in trace order
        self.resume: Any = None  # resume.ResumeState: observations of data-dependent cuts (None: they break)
        self.buffers: list[Buffer] = []
        self.caller_owned: set[int] = set()
        self.readonly_cells: set[int] = set()
        self.made_functions: set[int] = set()
        self.external: dict[int, tuple[Any, Source]] = {}
        self._all_sources: dict[int, list[Source]] = {}
        self.py_inputs: dict[int, tuple[TArray, Any, Source]] = {}  # Python-float arguments: value and source
        self._keep: list[Any] = []
        self._by_source: dict[str, Any] = {}
        self._by_id: dict[int, TArray] = {}
        self._input_arrays: dict[int, Any] = {}  # graph-input index -> the caller's array (its real strides)
        self._input_sources: dict[int, Source] = {}  # graph-input index -> where the array is read at call time
        self._writes_checked: set[int] = set()  # graph inputs whose writeability is guarded already
        self.fn_globals_source: dict[int, Source | None] = {}
        self.n_arg_leaves = 0
        self.depth = 0
        self.steps = 0
        self.filename: str | None = None
        self.lineno: int | None = None

    # ---- locations and breaks -------------------------------------------------------------------------------
    def at(self, filename: str, lineno: int | None) -> None:
        if lineno != self.lineno or filename != self.filename:
            self.filename, self.lineno = filename, lineno
            self.builder.loc = SourceLoc(filename, lineno or 0)

    def graph_break(self, reason: str, user_error: BaseException | None = None) -> NoReturn:
        raise GraphBreak(reason, self.filename, self.lineno, user_error)

    def keep(self, value: Any) -> Any:
        self._keep.append(value)
        return value

    @property
    def in_region(self) -> bool:
        """Whether ops now go into a loop or branch region's body (the builder is a region's stand-in)."""
        return isinstance(self.builder, BodyBuilder)

    # ---- nodes ----------------------------------------------------------------------------------------------
    def node(self, value: Any) -> Node:
        """The IR node for an operand: tracked arrays are read, trace-time numbers become constants."""
        if isinstance(value, TArray):
            return self.read(value)
        if isinstance(value, bool | int | float | complex | np.generic):
            return self.builder.const(value)
        if isinstance(value, np.ndarray):
            return self.builder.const(value)
        if isinstance(value, list | tuple):
            if any(isinstance(v, TArray) for v in _flat(value)):
                return self.read(self.stack_values(value))
            try:
                return self.builder.const(np.asarray(value))
            except (TypeError, ValueError) as exc:
                self.graph_break(f"cannot turn {type(value).__name__} into an array operand", exc)
        self.graph_break(f"a {type(value).__name__} value cannot be an array operand")

    def stack_values(self, values: list | tuple) -> TArray:
        """``np.array([a, b])`` with tracked elements: stack them (nested sequences stack recursively)."""
        parts = [self.stack_values(v) if isinstance(v, list | tuple) else v for v in values]
        nodes = [self.node(p) for p in parts]
        if not nodes:
            return self.fresh(self.builder.const(np.asarray([], dtype=np.float64)))
        return self.fresh(self.op("stack", *nodes, axis=0))

    def op(self, name: str, *inputs: Node, **attrs: Any) -> Node:
        try:
            node = self.builder.op(name, *inputs, **attrs)
        except TypeInferenceError as exc:
            self.graph_break(f"NumPy would raise here: {exc.message}", getattr(exc, "original", None) or exc)
        overflow = python_int_overflow(name, inputs, attrs)
        if overflow is not None:
            self.graph_break(f"NumPy would raise here: {overflow}", overflow)
        return node

    def size_value(self, size: int | Sym | SymExpr) -> int | TArray:
        """A dimension's size as the traced code sees it: a Python int, or for a symbolic dimension a graph
        constant standing for it (``const(s0)``, a Python int at run time; the graph is instantiated per size)."""
        return self.fresh(self.builder.const(size)) if type(size) is Sym or type(size) is SymExpr else size

    def size_symbol(self, value: Any) -> Sym | SymExpr | None:
        """The symbolic size a traced Python int stands for (``const(s0)``, ``const(s0-1)``), or None."""
        if isinstance(value, TArray) and value.kind == "py" and not value.path:
            node = value.buffer.node
            if node.op == "const" and type(node.attrs["value"]) in (Sym, SymExpr):
                return node.attrs["value"]
        return None

    def fresh(self, node: Node, kind: str | None = None) -> TArray:
        """A new array value with its own storage (an op result)."""
        if kind is None:
            t = node.tensor_type
            kind = "py" if t.weak else "array"
        return TArray(Buffer(node), (), kind)

    def strong(self, node: Node) -> Node:
        """A NumPy function's result is a NumPy value even from Python scalars (``np.sqrt(8)`` is a float64,
        which NEP 50 then treats as strong); operators on Python scalars stay Python scalars."""
        t = node.tensor_type
        return self.op("astype", node, dtype=t.dtype) if t.weak else node

    def result(self, node: Node, scalar_if_0d: bool = True) -> TArray:
        """An op result typed the way NumPy hands it back: 0-d results of ufuncs/reductions are NumPy scalars."""
        t = node.tensor_type
        kind = "py" if t.weak else ("scalar" if scalar_if_0d and t.shape == () else "array")
        return TArray(Buffer(node), (), kind)

    def read(self, value: TArray) -> Node:
        buffer = value.buffer
        if not value.path:
            return buffer.node
        if value._cache is not None and value._cache[0] == buffer.version and value._cache[1] is not None:
            return value._cache[1]
        node = buffer.node
        for step in value.path:
            node = self.op(step.op, node, **step.kwargs)
        value._cache = (buffer.version, node)
        return node

    def type_of(self, value: TArray) -> TensorType:
        return self.read(value).tensor_type

    def layout(self, value: TArray, steps: int | None = None) -> str:
        """The physical memory layout of a value (of its first ``steps`` view steps), which writes never change."""
        t = value.buffer.origin.tensor_type
        for step in value.path[:steps]:
            t = get_op(step.op).infer((t,), step.kwargs, ())
        return t.layout

    def view(self, base: TArray, op: str, kind: str = "array", **attrs: Any) -> TArray:
        """A NumPy view of ``base``: same storage, one more step on the path."""
        if base.kind != "array":
            return self.fresh(self.op(op, self.read(base), **attrs), kind)
        step = ViewStep(op, tuple(attrs.items()))
        result = TArray(base.buffer, base.path + (step,), kind)
        self.read(result)  # type-check now, at the user's line
        return result

    def write(self, target: TArray, value: Node) -> None:
        """Store ``value`` into ``target`` (a view or a whole buffer) and propagate it to the base storage."""
        if target.kind != "array":
            self.graph_break("in-place update of an immutable scalar")
        self._check_writeable(target.buffer)
        nodes = [target.buffer.node]
        for step in target.path[:-1]:
            nodes.append(self.op(step.op, nodes[-1], **step.kwargs))
        new = value
        for k in reversed(range(len(target.path))):
            step, base = target.path[k], nodes[k]
            if step.op == "reshape" and (self.layout(target, k) != "C" or not numpy_c_order(target.buffer.origin)):
                self.graph_break("in-place write through a reshape of a non-contiguous array (NumPy may have "
                                 "copied); write to the original array instead")
            new = self._write_back(step, base, new)
        target.buffer.node = new
        target.buffer.version += 1

    def _check_writeable(self, buffer: Buffer) -> None:
        """A write into a caller's array: guard on its ``flags.writeable`` (the graph is only valid for writeable
        arrays), and, where it is read-only, break with NumPy's error: the call runs eagerly, so the exception comes
        at the line NumPy raises it, after exactly the effects eager code makes before it (``b *= 2; a *= 2`` with
        ``b`` read-only leaves ``a`` alone)."""
        array = self.caller_array(buffer)
        if type(array) is not np.ndarray or buffer.input_index in self._writes_checked:
            return  # device arrays have no read-only flag
        writeable = bool(array.flags.writeable)
        if writeable:  # (a read-only one breaks every time: a region that catches the break retries unrolled)
            self._writes_checked.add(buffer.input_index)
        source = self._input_sources.get(buffer.input_index)
        if source is not None:
            self.guards.add(f"{'' if writeable else 'not '}{source.code}.flags.writeable",
                            f"{source.name} is {'' if writeable else 'not '}writeable (it is written in place)")
        if not writeable:
            err = ValueError("assignment destination is read-only")
            self.graph_break(f"{self.builder.input_names[buffer.input_index]} is read-only and written in place "
                             "(NumPy raises ValueError here)", err)

    def _write_back(self, step: ViewStep, base: Node, new: Node) -> Node:
        attrs = step.kwargs
        if step.op == "getitem":
            return self.op("setitem", base, new, spec=attrs["spec"])
        if step.op == "reshape":
            return self.op("reshape", new, shape=base.tensor_type.shape)
        if step.op == "transpose":
            inverse = tuple(int(i) for i in np.argsort(attrs["axes"]))
            return self.op("transpose", new, axes=inverse)
        self.graph_break("assignment destination is read-only", ValueError("assignment destination is read-only"))

    # ---- leaves (arguments) ---------------------------------------------------------------------------------
    def new_input(self, value: Any, name: str, source: Source | None = None) -> TArray:
        device = type(value) is not np.ndarray and is_device_array(value)  # a GPU array (backend="cuda")
        dtype = device_type_of(value).dtype if device else getattr(value, "dtype", None)
        if (device or isinstance(value, np.ndarray | np.generic)) and dtype not in SUPPORTED_DTYPES:
            self.graph_break(f"{name} has dtype {dtype}, which jitgraph does not compile (supported: bool, "
                             "integers, floats, complex)")
        if device:
            t, kind = device_type_of(value), "array"
        elif isinstance(value, np.ndarray):
            t, kind = type_of(value), "array"
            dims = self.symbolic_dims.get(source.name) if source is not None and self.symbolic_dims else None
            if dims:  # dynamic dimensions traced as symbols (jit/symbolic_sizes.py)
                t = t.with_(shape=tuple(dims.get(i, d) for i, d in enumerate(t.shape)))
                for axis, sym in dims.items():
                    self.symbol_codes.setdefault(sym.name, (sym, f"{source.code}.shape[{axis}]"))
        elif isinstance(value, np.generic):
            t, kind = TensorType((), value.dtype), "scalar"
        else:
            t, kind = type_of(value), "py"
        node = self.builder.input(t, name)
        index = len(self.builder.inputs) - 1
        if device or isinstance(value, np.ndarray):
            previous = self._by_id.get(id(value))
            if previous is not None:
                return previous  # the same array reached twice: one storage, as in NumPy
            buffer = Buffer(node, index)
            if source is not None:
                self._input_sources[index] = source
            self.buffers.append(buffer)
            result = TArray(buffer, (), kind)
            self._by_id[id(value)] = result
            self._input_arrays[index] = value
            self._keep.append(value)
            return result
        return TArray(Buffer(node, None), (), kind)

    def wrap_arg(self, value: Any, source: Source) -> Any:
        """Wrap one argument, creating graph inputs in exactly the order the dispatch key lists leaves."""
        t = type(value)
        if t is float or t is DynamicInt:  # a runtime Python number (dynamic_ints.py for the ints)
            value = float(value) if t is float else int(value)
            wrapped = self.new_input(value, source.name)
            self.py_inputs[id(wrapped)] = (wrapped, value, source)
            return wrapped
        if t is np.ndarray or isinstance(value, np.generic):
            return self.new_input(value, source.name, source)
        if t is tuple:
            return tuple(self.wrap_arg(v, source.item(i, self.guards.const)) for i, v in enumerate(value))
        if t is list:
            result = [self.wrap_arg(v, source.item(i, self.guards.const)) for i, v in enumerate(value)]
            return self._mark_external(value, result, source)
        if t is dict:
            result = {k: self.wrap_arg(v, source.item(k, self.guards.const)) for k, v in value.items()}
            return self._mark_external(value, result, source)
        if is_device_array(value) and not isinstance(value, type):  # a leaf of the key (keys.flatten), in order
            return self.new_input(value, source.name, source)
        if isinstance(value, np.ndarray):
            self.graph_break(f"array subclass {t.__name__} as an argument")
        if t in SPECIALISED:
            return value  # part of the dispatch key, by value
        if is_namedtuple(value):  # keyed element by element (keys.flatten): wrapped the same way
            return t._make([self.wrap_arg(v, source.item(i, self.guards.const)) for i, v in enumerate(value)])
        self._by_value(value, source)  # keyed by flatten; nothing to guard here
        self.note_external(value, source)
        self._keep.append(value)
        return value

    def _by_value(self, value: Any, source: Source) -> Any:
        """``value``'s key part (``keys.value_part``). One the trace would use by value but cannot guard on breaks;
        a set is keyed by its contents, so mutating it is a side effect (the caller owns it)."""
        t = type(value)
        part = value_part(value, t)
        if type(part) is tuple and part[-1] is UNGUARDABLE:
            self.graph_break(f"{source.name} is a {t.__name__}, which the tracer would use by value but cannot "
                             "guard on")
        if t is set:
            self.caller_owned.add(id(value))
        return part

    def caller_array(self, buffer: Buffer) -> Any:
        """The caller's array behind a graph-input buffer (its strides are part of the dispatch key), or None."""
        return None if buffer.input_index is None else self._input_arrays.get(buffer.input_index)

    def note_external(self, value: Any, source: Source) -> None:
        """Record where an outside object came from (all the places, for identity guards)."""
        self.external[id(value)] = (value, source)
        self._all_sources.setdefault(id(value), []).append(source)

    def sources_of(self, value: Any) -> list[Source]:
        """Every source the trace read ``value`` from (an object passed as an argument and read as a global)."""
        return self._all_sources.get(id(value), []) if self.source_of(value) is not None else []

    def _mark_external(self, original: Any, wrapped: Any, source: Source) -> Any:
        self.caller_owned.add(id(wrapped))
        self.external[id(wrapped)] = (wrapped, source)
        # One caller's container copied twice (reached through two paths): a store through one copy would not
        # show through the other, so the side-effect recorder refuses to write either (side_effects.py).
        copies = self.copies_of.setdefault(id(original), [])
        copies.append(wrapped)
        self.copy_origin[id(wrapped)] = copies
        if len(copies) > 1 and any(id(c) in self.side_effects.written for c in copies):
            self.graph_break(f"{source.name} is a container written earlier in this call through another path")
        self._keep.append(original)
        self._keep.append(wrapped)
        return wrapped



def numpy_c_order(node: Node, depth: int = 8) -> bool:
    """Whether NumPy itself lays ``node``'s result out in C order. The IR calls every computed array C-ordered, but
    NumPy's ufuncs and copies keep their operands' memory order (``x.T + 1`` is F-ordered), and whether a reshape
    is a view depends on that. Unknown (deep, or an op whose order NumPy does not fix) counts as not C."""
    op = OPS[node.op]
    if node.op in ("input", "const"):
        return node.tensor_type.layout == "C"
    if op.kind is OpKind.CREATION or node.op in ("matmul", "dot"):
        return True  # C-ordered creations (an order='F' one is a transpose view of a C one); BLAS products
    if op.kind is not OpKind.ELEMENTWISE or depth == 0:
        return False
    arrays = [i for i in node.inputs if i.tensor_type.ndim > 1]
    return all(numpy_c_order(i, depth - 1) for i in arrays)


def _flat(value: Any) -> list[Any]:
    out: list[Any] = []
    for v in value:
        if isinstance(v, list | tuple):
            out.extend(_flat(v))
        else:
            out.append(v)
    return out


def is_immutable_module(module: types.ModuleType) -> bool:
    return module.__name__.split(".")[0] in IMMUTABLE_MODULE_PREFIXES


__all__ = ["GraphBreak", "TraceContext", "is_immutable_module"]
