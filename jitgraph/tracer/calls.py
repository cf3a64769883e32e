"""Calls and attribute loads: inline Python code, look NumPy and builtins up in their tables, break otherwise.

User functions, methods, lambdas, comprehensions and ``__call__`` objects are *inlined*: their bytecode runs in a
new symbolic frame, so the graph never contains a Python call. Anything implemented in C that is not in a table
(``numpy_table.py``, ``builtins_table.py``) is an unknown call and a graph break, because we cannot know what it
does to its arguments.
"""

from __future__ import annotations

import builtins
import functools
import types
from typing import Any

import numpy as np

from jitgraph.ir.symbols import size_of_shape
from jitgraph.tracer import bytecode, instance_dicts, selections, side_effects, split
from jitgraph.tracer.builtins_table import BUILTINS, call_container_method
from jitgraph.tracer.context import TraceContext, is_immutable_module
from jitgraph.tracer.guards import Source
from jitgraph.tracer.numpy_table import ARRAY_METHODS, NUMPY, UFUNC_METHODS
from jitgraph.tracer.side_effects import AppendOnlyList
from jitgraph.tracer.supers import SuperProxy, super_attr
from jitgraph.tracer.values import (
    ArrayMethod,
    BoundBuiltin,
    BoundMethod,
    ExternalCell,
    TArray,
    UfuncMethod,
    Yielded,
    is_plain,
)

MAX_DEPTH = 48


def register_made_function(tx: TraceContext, fn: types.FunctionType, globals_source: Source | None) -> None:
    """Remember a function created during the trace (its cells and defaults hold symbolic values)."""
    tx.keep(fn)
    tx.made_functions.add(id(fn))
    tx.fn_globals_source[id(fn)] = globals_source


def call(tx: TraceContext, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if selections.involved(fn, args, kwargs):  # sel.sum(), len(sel), np.abs(sel): selections.py (or a retry)
        return selections.call(tx, fn, args, kwargs, call)
    if tx.may_split and not isinstance(fn, ArrayMethod | TArray) and not _compiles(fn):
        value = split.eager_call(tx, fn, args, kwargs)  # print, logging, np.random: run between two graphs
        if value is split.NOT_CUT:
            value = selections.data_call(tx, fn, args, kwargs)  # np.unique, np.nonzero: lazy, or resumed after
        if value is not split.NOT_CUT:
            return value
    if isinstance(fn, ArrayMethod):
        return _lowered(tx, ARRAY_METHODS[fn.name], [fn.self_] + args, kwargs)
    if isinstance(fn, BoundMethod):
        return call(tx, fn.func, [fn.self_] + args, kwargs)
    if isinstance(fn, BoundBuiltin):
        if isinstance(fn.self_, AppendOnlyList):
            return fn.self_.call(tx, fn.name, args, kwargs)
        return call_container_method(tx, fn.self_, fn.name, args, kwargs)
    if isinstance(fn, UfuncMethod):
        lowering = UFUNC_METHODS.get(fn.name)
        if lowering is None:
            tx.graph_break(f"np.{fn.ufunc.__name__}.{fn.name} is not supported")
        return _lowered(tx, lowering, [fn.ufunc] + args, kwargs)
    lowering = _table_get(NUMPY, fn)
    if lowering is not None:
        return _lowered(tx, lowering, args, kwargs)
    lowering = _table_get(BUILTINS, fn)
    if lowering is not None:
        return _lowered(tx, lowering, args, kwargs)
    if fn is getattr:  # an attribute load, which may call a property: here, beside load_attr
        return _lowered(tx, _getattr, args, kwargs)
    if fn is setattr:  # an attribute store, recorded and replayed like ``obj.name = value``
        return _lowered(tx, _setattr, args, kwargs)
    if isinstance(fn, types.FunctionType):
        module = getattr(fn, "__module__", None) or ""
        if module.split(".")[0] == "numpy":
            tx.graph_break(f"np.{fn.__name__} has no entry in the tracer's NumPy table")
        return inline(tx, fn, args, kwargs)
    if isinstance(getattr(fn, "__self__", None), np.random.RandomState | np.random.Generator):
        tx.graph_break(f"random numbers ({fn.__name__}) advance the generator's state, a side effect; draw them "
                       "outside and pass them in")
    if isinstance(fn, types.MethodType):
        return call(tx, fn.__func__, [fn.__self__] + args, kwargs)
    if type(fn) is functools.partial:
        source = tx.source_of(fn) or tx.const_source(fn)
        bound = tx.wrap_external(fn.args, source.attr("args"))
        keywords = tx.wrap_external(fn.keywords, source.attr("keywords"))
        return call(tx, tx.wrap_external(fn.func, source.attr("func")), list(bound) + args, {**keywords, **kwargs})
    if isinstance(fn, type):
        if issubclass(fn, np.generic):
            tx.graph_break(f"{fn.__name__}(...) is not supported here")
        tx.graph_break(f"constructing a {fn.__qualname__} object inside a compiled function")
    if isinstance(fn, TArray):
        tx.graph_break("calling an array", TypeError("'numpy.ndarray' object is not callable"))
    wrapped = jitgraph_wrapped(fn)
    if wrapped is not None:  # a compiled function called inside a trace (itself, recursively, or a helper)
        source = tx.source_of(fn) or tx.const_source(fn)
        return call(tx, tx.wrap_external(wrapped, source.attr("__wrapped__")), args, kwargs)
    dunder = _class_attr(type(fn), "__call__")
    if isinstance(dunder, types.FunctionType):
        return call(tx, dunder, [fn] + args, kwargs)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    tx.graph_break(f"call to {name}, which the tracer does not know (a C function or unsupported callable)")


def jitgraph_wrapped(fn: Any) -> Any:
    """The user's function behind one of jitgraph's own wrappers (``@jitgraph.compile``'s CompiledFunction), or
    None. Calling such a wrapper inside a trace is calling the function it wraps: tracing the wrapper's ``__call__``
    would trace the driver's cache machinery instead of the user's code. The wrapper is recognised without
    importing the driver (a layer above): a class defined in the jitgraph package whose instance carries
    ``__wrapped__`` (set by ``functools.update_wrapper``) holding the callable it compiles."""
    if isinstance(fn, types.FunctionType | types.MethodType | type):
        return None
    if not (getattr(type(fn), "__module__", None) or "").startswith("jitgraph."):
        return None
    instance_dict = getattr(fn, "__dict__", None)
    wrapped = instance_dict.get("__wrapped__") if isinstance(instance_dict, dict) else None
    return wrapped if callable(wrapped) else None


def _compiles(fn: Any) -> bool:
    """Whether ``fn`` has a lowering in the NumPy table (not a named break): LAPACK calls with an op become graph
    ops (a one-graph function), not eager calls between two graphs."""
    lowering = _table_get(NUMPY, fn)
    return lowering is not None and not hasattr(lowering, "breaks")


def _table_get(table: dict[Any, Any], fn: Any) -> Any:
    try:
        return table.get(fn)
    except TypeError:  # unhashable callable
        return None


def _lowered(tx: TraceContext, lowering: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    try:
        return lowering(tx, *args, **kwargs)
    except TypeError as exc:
        if "positional argument" in str(exc) or "keyword argument" in str(exc):
            tx.graph_break(f"bad arguments: {exc}", exc)
        raise


def _class_attr(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


# ---- inlining -------------------------------------------------------------------------------------------------
def inline(tx: TraceContext, fn: types.FunctionType, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Run ``fn``'s bytecode in a new symbolic frame (the context's interpreter) with its arguments bound."""
    code = fn.__code__
    if code.co_flags & (bytecode.CO_COROUTINE | bytecode.CO_ASYNC_GENERATOR):
        tx.graph_break(f"{fn.__qualname__} is a coroutine or async generator")
    made = id(fn) in tx.made_functions
    fsrc = None if made else tx.const_source(fn)
    locals_ = bind(tx, fn, args, kwargs, fsrc)
    cells: dict[str, Any] = {}
    for name in code.co_cellvars:
        cells[name] = tx.keep(types.CellType(locals_.pop(name)) if name in locals_ else types.CellType())
    closure = fn.__closure__ or ()
    for i, name in enumerate(code.co_freevars):
        if made:
            cells[name] = closure[i]
        else:
            assert fsrc is not None
            cells[name] = ExternalCell(closure[i], Source(f"{fsrc.code}.__closure__[{i}].cell_contents", name))
    if made:
        globals_source = tx.fn_globals_source.get(id(fn))
    else:
        globals_source = Source(tx.guards.const(fn.__globals__), "globals")
        tx.keep(fn.__globals__)
    module_builtins = fn.__globals__.get("__builtins__", builtins.__dict__)
    if isinstance(module_builtins, types.ModuleType):
        module_builtins = module_builtins.__dict__
    generator = bool(code.co_flags & bytecode.CO_GENERATOR)
    tx.depth += 1
    if tx.depth > MAX_DEPTH:
        tx.graph_break(f"call depth over {MAX_DEPTH} (recursion is not unrolled)")
    try:
        return tx.run_frame(tx, code, locals_, cells, fn.__globals__, globals_source, module_builtins, generator)
    finally:
        tx.depth -= 1


def bind(tx: TraceContext, fn: types.FunctionType, args: list[Any], kwargs: dict[str, Any],
         fsrc: Source | None) -> dict[str, Any]:
    """Python's argument binding, done on symbolic values (defaults of outside functions are wrapped)."""
    code = fn.__code__
    nargs, nkw = code.co_argcount, code.co_kwonlyargcount
    names = code.co_varnames
    posnames, kwonly = names[:nargs], names[nargs:nargs + nkw]
    extra_index = nargs + nkw
    varargs = names[extra_index] if code.co_flags & bytecode.CO_VARARGS else None
    varkw = names[extra_index + (1 if varargs else 0)] if code.co_flags & bytecode.CO_VARKEYWORDS else None
    locals_: dict[str, Any] = {}
    qual = fn.__qualname__

    def fail(message: str) -> None:
        err = TypeError(f"{qual}() {message}")
        tx.graph_break(str(err), err)

    for name, value in zip(posnames, args):
        locals_[name] = value
    if len(args) > nargs and varargs is None:
        fail(f"takes {nargs} positional arguments but {len(args)} were given")
    if varargs is not None:
        locals_[varargs] = tuple(args[nargs:])
    extra_kw: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in posnames[code.co_posonlyargcount:] or key in kwonly:
            if key in locals_:
                fail(f"got multiple values for argument '{key}'")
            locals_[key] = value
        elif varkw is not None:
            extra_kw[key] = value
        else:
            fail(f"got an unexpected keyword argument '{key}'")
    if varkw is not None:
        locals_[varkw] = extra_kw
    defaults = fn.__defaults__ or ()
    first_default = nargs - len(defaults)
    made = fsrc is None
    for i, name in enumerate(posnames):
        if name not in locals_:
            if i < first_default:
                fail(f"missing required positional argument: '{name}'")
            j = i - first_default
            value = defaults[j]
            locals_[name] = value if made else tx.wrap_external(value, Source(f"{fsrc.code}.__defaults__[{j}]",
                                                                              f"{qual} default {name}"))
    kwdefaults = fn.__kwdefaults__ or {}
    for name in kwonly:
        if name not in locals_:
            if name not in kwdefaults:
                fail(f"missing required keyword-only argument: '{name}'")
            value = kwdefaults[name]
            locals_[name] = value if made else tx.wrap_external(
                value, Source(f"{fsrc.code}.__kwdefaults__[{name!r}]", f"{qual} default {name}"))
    return locals_


# ---- attributes -----------------------------------------------------------------------------------------------
_PLAIN_ATTR_TYPES = (int, float, bool, complex, str, bytes, slice, range, np.dtype, tuple, list, dict, set)


def load_attr(tx: TraceContext, obj: Any, name: str) -> Any:
    if selections.is_lazy(obj):
        return selections.attr(tx, obj, name)
    if isinstance(obj, TArray):
        return array_attr(tx, obj, name)
    if isinstance(obj, SuperProxy):
        return super_attr(tx, obj, name, call)
    if isinstance(obj, AppendOnlyList):
        return BoundBuiltin(obj, name)
    if isinstance(obj, types.ModuleType):
        if not hasattr(obj, name):
            err = AttributeError(f"module '{obj.__name__}' has no attribute '{name}'")
            tx.graph_break(str(err), err)
        value = getattr(obj, name)
        if is_immutable_module(obj):
            return tx.wrap_external(value, None)
        return tx.wrap_external(value, tx.const_source(obj).attr(name))
    if isinstance(obj, np.ufunc):
        if name in ("at", "reduce", "outer", "accumulate", "reduceat"):
            return UfuncMethod(obj, name)
        return getattr(obj, name)
    if isinstance(obj, _PLAIN_ATTR_TYPES):
        value = getattr(obj, name, _MISSING)
        if value is _MISSING:
            err = AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'")
            tx.graph_break(str(err), err)
        if callable(value) and not isinstance(obj, np.dtype):
            return BoundBuiltin(obj, name)
        return value
    if isinstance(obj, types.FunctionType | types.BuiltinFunctionType | BoundMethod | Yielded):
        if name.startswith("__") and hasattr(obj, name):
            return getattr(obj, name)
        tx.graph_break(f"attribute {name!r} of a function")
    if isinstance(obj, type):
        return _class_attr_load(tx, obj, name)
    return _instance_attr(tx, obj, name)


_MISSING = object()


def _getattr(tx: TraceContext, obj: Any, name: str, *default: Any) -> Any:
    if not isinstance(name, str):
        tx.graph_break("getattr with a non-constant name")
    if default:
        tx.graph_break("getattr with a default")
    return load_attr(tx, obj, name)


def _setattr(tx: TraceContext, obj: Any, name: str, value: Any) -> None:
    if not isinstance(name, str):
        tx.graph_break("setattr with a non-constant name")
    if not tx.side_effects.has_attr(obj, name) and tx.attribute_unchanged(obj, name, value):
        return
    side_effects.refuse_attr_store(tx, obj, name)
    tx.side_effects.store_attr(tx, obj, name, value)
    return


def array_attr(tx: TraceContext, array: TArray, name: str) -> Any:
    """An attribute of a traced array: shape facts, ``.T``, or a method from the NumPy table."""
    t = tx.type_of(array)
    if array.kind == "py":
        tx.graph_break(f"attribute {name!r} of a Python number argument")
    if name == "shape":
        return tuple(tx.size_value(d) for d in t.shape)
    if name == "ndim":
        return t.ndim
    if name == "size":
        return tx.size_value(size_of_shape(t.shape))
    if name == "dtype":
        return t.dtype
    if name == "itemsize":
        return t.dtype.itemsize
    if name == "nbytes":
        return t.nbytes
    if name == "T":
        return tx.view(array, "transpose", axes=tuple(reversed(range(t.ndim))))
    if name in ARRAY_METHODS:
        return ArrayMethod(array, name)
    tx.graph_break(f"ndarray attribute {name!r} is not supported by the tracer")


def _class_attr_load(tx: TraceContext, cls: type, name: str) -> Any:
    raw = _class_attr(cls, name)
    if raw is None and not hasattr(cls, name):
        err = AttributeError(f"type object '{cls.__name__}' has no attribute '{name}'")
        tx.graph_break(str(err), err)
    if isinstance(raw, staticmethod):
        return raw.__func__
    if isinstance(raw, classmethod):
        return BoundMethod(cls, raw.__func__)
    if isinstance(raw, types.FunctionType):
        return raw
    if cls.__module__.split(".")[0] in ("numpy", "builtins"):
        return tx.wrap_external(getattr(cls, name), None)
    return tx.wrap_external(getattr(cls, name), tx.const_source(cls).attr(name))


def _guard_not_shadowed(tx: TraceContext, attr: Source, obj: Source, raw: Any) -> None:
    """A method the trace took from the class (inlined, or bound to the object): guard that a later call's object
    still gets that method, not an instance attribute of the same name assigned since (``obj.step = other``) or a
    method the class was given since. The lookup makes a bound method (~40 ns); the object's ``__dict__`` is never
    read (tracer/instance_dicts.py)."""
    if isinstance(raw, staticmethod):
        tx.guards.add(f"{attr.code} is {tx.guards.const(raw.__func__)}", f"{attr.name} is the class's function")
        return
    func = tx.guards.const(raw.__func__ if isinstance(raw, classmethod) else raw)
    own = "" if isinstance(raw, classmethod) else f" and {attr.code}.__self__ is {obj.code}"
    tx.guards.add(f"{attr.code}.__func__ is {func}{own}", f"{attr.name} is the class's method")


def _generator_method(tx: TraceContext, gen: Any, name: str) -> Any:
    """``rng.random`` of a generator passed in or kept on an object (``dropout(x, rng)``, ``self.rng``): its bound
    method, which the split (split.py) runs eagerly between two graphs. A generator reached through the arguments
    is guarded on its identity, so the cached call draws from the very generator it was passed (another generator
    is a recompile); a global one on its type (the split looks the global up at each call)."""
    source = tx.source_of(gen)
    if source is None:
        tx.graph_break(f"{type(gen).__name__}.{name} of a generator the tracer cannot guard on")
    if source.through_arguments:
        tx.guards.identity(source, gen)
        tx.keep(gen)
    else:  # a global: the split looks it up at each call (it may be rebound), so only its type is fixed
        tx.guards.add(f"type({source.code}) is {tx.guards.const(type(gen))}",
                      f"type({source.name}) is {type(gen).__name__}")
    return getattr(gen, name)


def _instance_attr(tx: TraceContext, obj: Any, name: str) -> Any:
    if tx.side_effects.has_attr(obj, name):  # stored earlier in this trace: the stored value, as eager reads it
        return tx.side_effects.attr(obj, name)
    cls = type(obj)
    raw = _class_attr(cls, name)
    if isinstance(raw, property):
        if raw.fget is None:
            tx.graph_break(f"property {name!r} has no getter")
        return call(tx, raw.fget, [obj], {})
    if raw is not None and hasattr(type(raw), "__set__") and not isinstance(raw, types.FunctionType):
        tx.graph_break(f"attribute {name!r} is a data descriptor ({type(raw).__name__})")
    if isinstance(obj, np.random.RandomState | np.random.Generator) and callable(getattr(obj, name, None)):
        return _generator_method(tx, obj, name)
    if not instance_dicts.has_instance_dict(obj):
        tx.graph_break(f"attribute {name!r} of a {cls.__name__} object without __dict__")
    source = tx.source_of(obj) or tx.const_source(obj)
    held, value = instance_dicts.own_value(obj, name, raw)  # without creating obj.__dict__ (instance_dicts.py)
    if held:
        return tx.wrap_external(value, source.attr(name))
    if isinstance(raw, types.FunctionType | staticmethod | classmethod):
        _guard_not_shadowed(tx, source.attr(name), source, raw)
    if isinstance(raw, types.FunctionType):
        return BoundMethod(obj, raw)
    if isinstance(raw, staticmethod):
        return raw.__func__
    if isinstance(raw, classmethod):
        return BoundMethod(cls, raw.__func__)
    if raw is not None:
        if is_plain(raw) or isinstance(raw, np.ndarray):
            return tx.wrap_external(raw, source.attr(name))
        tx.graph_break(f"class attribute {name!r} of type {type(raw).__name__}")
    if _class_attr(cls, "__getattr__") is not None:
        tx.graph_break(f"{cls.__name__}.__getattr__ is not traced")
    err = AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")
    tx.graph_break(str(err), err)
