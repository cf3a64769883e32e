"""Side effects on Python objects, recorded during a trace and replayed after the graph runs (as Dynamo's
side-effect tracking does).

The trace never touches the caller's objects. A store it meets -- ``self.x = v``, ``self.cache["X"] = X``,
``self.stack.append(h)``, ``global step; step = ...`` -- is recorded here instead, and every later read in the same
trace sees the stored value (attribute and global reads consult :meth:`SideEffects.attr`; containers reached from
outside are the tracer's own copies, edited in place). When the trace ends, :meth:`SideEffects.finish` turns each
effect's *final* value into an output spec (``outputs.build_output``): computed arrays become graph outputs,
arguments and arrays read from outside are rebuilt as those very objects (identity kept), constants as
themselves. The driver then applies them after the graph, in the order the objects were first written, through
:func:`replayer`. Program order within one object is not observable for plain objects (no ``__setattr__``, no
property; a ``__slots__`` member is stored by C code alone), which is exactly what :func:`refuse_attr_store` lets
through; everything else breaks with a reason and the call runs eagerly.

Nothing is applied before the whole graph has run: a graph that raises leaves the objects untouched, and the eager
rerun performs each effect once, in NumPy's order.
"""

from __future__ import annotations

import keyword
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from jitgraph.tracer import instance_dicts
from jitgraph.tracer.guards import Source, is_literal_key
from jitgraph.tracer.values import TArray

if TYPE_CHECKING:
    from jitgraph.tracer.context import TraceContext


@dataclass
class Effect:
    """One written location, as recorded: ``kind`` is "attr" (``target.name = value``), "global" (the module
    dict's ``name``) or "contents" (a list or dict, rewritten to ``value``, the tracer's copy, in place)."""

    kind: str
    target: Any
    source: Source
    name: str | None = None
    value: Any = None
    original: list | None = None  # a list's elements when first written (append-only lists are found by it)


class AppendOnlyList:
    """A caller's list the trace only appends to (``self.errors.append(loss)``, ``history["loss"].append(l)``),
    standing in for it without reading it: no length or element guard, so a list that grows each call does not
    recompile each call. Anything but ``append``/``extend`` breaks (``trace`` then keeps its first trace)."""

    __slots__ = ("effect", "items")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.effect: Effect | None = None

    def call(self, tx: TraceContext, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        if name not in ("append", "extend") or kwargs or len(args) != 1:
            tx.graph_break(f"list.{name}() on a list the trace treated as append-only")
        _refuse_region(tx, f"list.{name}()", stores=False)
        if self.effect is None:
            self.effect = Effect("extend", self, tx.source_of(self) or tx.graph_break("an unnamed list"),
                                 value=self.items)
            tx.side_effects.effects.append(self.effect)
        if name == "append":
            self.items.append(args[0])
        elif isinstance(args[0], list | tuple):
            self.items.extend(args[0])
        else:
            tx.graph_break(f"list.extend() of a {type(args[0]).__name__} on an append-only list")


@dataclass
class SideEffects:
    """What one trace wrote to objects it does not own, in first-write order, and the stored values to read back."""

    effects: list[Effect] = field(default_factory=list)
    _attrs: dict[tuple[int, str], Effect] = field(default_factory=dict)
    _containers: dict[int, Effect] = field(default_factory=dict)
    candidates: set[str] = field(default_factory=set)
    cond_paths: list[Any] = field(default_factory=list)
    """Builders of the ``if`` paths being traced as a cond whose item stores become cond results (branches.py)."""
    selections: list[Selection] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.effects)

    @property
    def written(self) -> dict[int, Effect]:
        """The containers written so far, by the id of the tracer's copy."""
        return self._containers

    # ---- recording ------------------------------------------------------------------------------------------
    def attr(self, obj: Any, name: str, default: Any = None) -> Any:
        """The value this trace stored into ``obj.name`` (or the module dict's ``name``), else ``default``."""
        effect = self._attrs.get((id(obj), name))
        return default if effect is None else effect.value

    def has_attr(self, obj: Any, name: str) -> bool:
        return (id(obj), name) in self._attrs

    def store_attr(self, tx: TraceContext, obj: Any, name: str, value: Any, kind: str = "attr",
                   source: Source | None = None) -> None:
        """Record ``obj.name = value`` (``kind="global"``: ``obj`` is a module's globals dict)."""
        _refuse_region(tx, f"assignment to {'global' if kind == 'global' else 'attribute'} '{name}'")
        if source is None:
            source = tx.source_of(obj) or tx.const_source(obj)
        effect = self._attrs.get((id(obj), name))
        if effect is None:
            tx.keep(obj)
            effect = Effect(kind, obj, source, name)
            self._attrs[(id(obj), name)] = effect
            self.effects.append(effect)
        effect.value = value

    def mutate_container(self, tx: TraceContext, container: Any, what: str) -> None:
        """``container`` (a list or dict the tracer copied from the caller's) is about to be edited in place by
        ``what``: its final contents are written back to the caller's object after the graph."""
        _refuse_region(tx, what)
        if id(container) in self._containers:
            return
        if len(tx.copy_origin.get(id(container), ())) > 1:
            tx.graph_break(f"{what} on a container the trace reached through two paths (a write through one would "
                           "not show through the other)")
        source = tx.source_of(container)
        if source is None or not isinstance(container, list | dict):
            tx.graph_break(f"{what} mutates a caller's {type(container).__name__} the tracer cannot write back")
        effect = Effect("contents", container, source, value=container, original=list(container)
                        if isinstance(container, list) else None)
        self._containers[id(container)] = effect
        self.effects.append(effect)

    def mark(self) -> tuple[Any, ...]:
        """What :meth:`rollback` needs to forget the effects recorded by a discovery or region pass of an ``if``."""
        return len(self.effects), dict(self._attrs), dict(self._containers), [(e, e.value) for e in self.effects]

    def only_items_since(self, mark: tuple[Any, ...]) -> bool:
        """Whether every effect recorded since ``mark`` is an item store into a list or dict (no attribute, global
        or append-only list store: those are not cond results, so a path that makes one cannot be a cond)."""
        n, _, _, values = mark
        return all(e.kind == "contents" for e in self.effects[n:]) and \
            all(e.value is value for e, value in values if e.kind != "contents")

    def rollback(self, mark: tuple[Any, ...]) -> None:
        n, attrs, containers, values = mark
        del self.effects[n:]
        self._attrs, self._containers = dict(attrs), dict(containers)
        for effect, value in values:
            effect.value = value

    # ---- cond results that stand for an array the path not taken kept ---------------------------------------
    def check_selections(self, tx: TraceContext, result: Any) -> None:
        """At the end of a trace: each :class:`Selection` is exact only if neither array was written after the
        ``if`` and the result is not returned (the return value would not be the kept object)."""
        for sel in self.selections:
            if tx.cuts:
                sel.refuse("would pass between graph segments (the code between them could see it is a copy)")
            if sel.result.buffer.node is not sel.node or sel.old.buffer.node is not sel.old_node:
                sel.refuse("is written in place after the if (the write would miss the array the other path kept)")
            if _holds_buffer(result, sel.result.buffer):
                sel.refuse("is returned (the return value would not be the array the other path kept)")

    def refuse_selected(self, *values: Any, why: str) -> None:
        """An identity test on a cond result that stands for a kept array (``g is x``): its answer would be wrong
        on the path that kept the array."""
        for sel in self.selections:
            if any(isinstance(v, TArray) and v.buffer is sel.result.buffer for v in values):
                sel.refuse(why)

    def _selected(self, value: TArray) -> Selection | None:
        for sel in self.selections:
            if value.buffer is sel.result.buffer:
                if value is not sel.result:
                    sel.refuse("is stored as a view or another kind (its base would not be the kept array)")
                return sel
        return None

    # ---- the end of a trace ---------------------------------------------------------------------------------
    def finish(self, tx: TraceContext, spec_of: Callable[[Any], Any]) -> list[tuple[str, str, str | None, Any]]:
        """Each effect as ``(kind, target code, name, value spec)``; ``spec_of`` makes a value's output spec (graph
        outputs appended as it goes). Computed arrays stored twice are one output (one object, as in NumPy)."""
        memo: dict[tuple[int, tuple], Any] = {}

        def spec(value: Any) -> Any:
            sel = self._selected(value) if isinstance(value, TArray) else None
            if sel is not None:  # the kept array itself where the path that kept it ran (identity, as in NumPy)
                return ("select", spec_of(sel.pred), spec_of(value), spec_of(sel.old), sel.old_when)
            if isinstance(value, TArray):
                key = (value.buffer.uid, _hashable(value.path), value.kind, value.buffer.version)
                if key not in memo:
                    memo[key] = spec_of(value)
                return memo[key]
            if isinstance(value, list) and tx.source_of(value) is None:
                return ("list", tuple(spec(v) for v in value))
            if isinstance(value, dict) and tx.source_of(value) is None:
                return ("dict", tuple(value), tuple(spec(v) for v in value.values()))
            if type(value) is tuple:
                return ("tuple", tuple(spec(v) for v in value))
            return spec_of(value)

        self.candidates = _rewritten_scalars(tx, self.effects)
        out = []
        for e in self.effects:
            if e.kind == "extend":
                out.append(("extend", e.source.code, None, ("list", tuple(spec(v) for v in e.value))))
            elif e.kind == "contents":
                value = e.value
                contents = ("list", tuple(spec(v) for v in value)) if isinstance(value, list) else \
                    ("dict", tuple(value), tuple(spec(v) for v in value.values()))
                out.append(("contents", e.source.code, None, contents))
            else:
                out.append((e.kind, e.source.code, e.name, spec(e.value)))
        return out


def returned_paths(effects: list[Effect], result: Any) -> dict[Any, tuple[int, ...]]:
    """The stores whose value *is* the return value, or an element of a returned tuple or list (``self.h = [...];
    return self.h``, ``obj["v"] = x[::2]; return obj["v"]``): ``{effect index: path}`` (``()`` the value itself,
    ``(i,)`` element ``i``), or for an item of a dict or list whose contents the replay rewrites,
    ``{(effect index, key): path}``. The replay stores the very object the call returns there, as eager code does, not a
    second one built from the same spec (a list appended to afterwards must be the stored list)."""
    found: dict[Any, tuple[int, ...]] = {}
    elements = list(result) if type(result) in (tuple, list) else []

    def path_of(value: Any) -> tuple[int, ...] | None:
        if value is result:
            return ()
        index = next((i for i, r in enumerate(elements) if r is value), None)
        return None if index is None else (index,)

    for k, e in enumerate(effects):
        if e.kind in ("attr", "global"):
            path = path_of(e.value)
            if path is not None:
                found[k] = path
        elif e.kind == "contents":  # an item stored into a dict or list: ``(effect index, key)``
            items = e.value.items() if isinstance(e.value, dict) else enumerate(e.value)
            for key, value in items:
                path = path_of(value)
                if path is not None:
                    found[(k, key)] = path
    return found


def _hashable(path: Any) -> Any:
    """A view's path as a memo key: slices are unhashable before Python 3.12 (``self.c = Vt[:k]``)."""
    try:
        hash(path)
    except TypeError:
        return repr(path)
    return path


def _rewritten_scalars(tx: TraceContext, effects: list[Effect]) -> set[str]:
    """Outside locations holding an int or float that the trace read by value and the replay rewrites (``self.t +=
    1``, ``state["step"] += 1``): specialised, each call would miss its guard. ``trace`` retries with them read as
    runtime values."""
    found = set()
    for e in effects:
        if e.kind == "attr":
            places = [(e.source.attr(e.name or "").code, e.value)]
        elif e.kind == "global":
            places = [(f"{e.source.code}[{e.name!r}]", e.value)]
        elif e.kind == "contents":
            items = e.value.items() if isinstance(e.value, dict) else enumerate(e.value)
            places = [(e.source.item(k).code, v) for k, v in items if is_literal_key(k)]
            old_items = e.original
            if old_items is not None and len(e.value) > len(old_items) and \
                    all(a is b for a, b in zip(old_items, e.value)):
                found.add(e.source.code)  # only appended to: retraced as an AppendOnlyList
        else:
            continue
        for code, value in places:
            old = tx.read_scalar_at(code)
            if old is not None and value is not old:
                found.add(code)
    return found


def _refuse_region(tx: TraceContext, what: str, stores: bool = True) -> None:
    """A loop or branch region retries unrolled, where the store is recorded once per iteration. The paths of an
    ``if`` traced as a cond may store (``stores``): branches.py makes each stored slot a cond result."""
    if tx.in_region and not (stores and any(b is tx.builder for b in tx.side_effects.cond_paths)):
        tx.graph_break(f"{what} inside a loop or branch compiled as a region")


@dataclass
class Selection:
    """A cond result ``result`` that one path of the ``if`` left as the array ``old`` (``g = g * s`` on one path
    only, or a dict item rewritten on one path): its values are right, but in NumPy it *is* ``old`` when that path
    ran. Stores replay ``old`` itself then (``old_when``: the truth of ``pred`` that selects it); a later write to
    either array, or returning the result, is refused at the end of the trace (``refuse`` breaks, or retraces
    with the branch cut)."""

    result: TArray
    node: Any
    old: TArray
    old_node: Any
    pred: TArray
    old_when: bool
    refuse: Callable[[str], Any]


def _holds_buffer(value: Any, buffer: Any, depth: int = 0) -> bool:
    if isinstance(value, TArray):
        return value.buffer is buffer
    if isinstance(value, list | tuple | dict):  # (deeper than 8: assumed to hold it)
        items = value.values() if isinstance(value, dict) else value
        return depth >= 8 or any(_holds_buffer(v, buffer, depth + 1) for v in items)
    return False


_OBJECT_SETATTR = object.__setattr__


def refuse_attr_store(tx: TraceContext, obj: Any, name: str) -> None:
    """Break, with the reason, on an attribute store the replay could not reproduce exactly: a class with its own
    ``__setattr__``, a property or other data descriptor (not a ``__slots__`` member: :func:`_is_slot_of`), an
    object without a ``__dict__``, or something that is not a plain object (a module, a class, an array)."""
    if isinstance(obj, TArray):
        tx.graph_break(f"assignment to attribute '{name}' of an array")
    if isinstance(obj, types.ModuleType | type | types.FunctionType | np.ndarray | np.generic):
        tx.graph_break(f"assignment to attribute '{name}' of a {type(obj).__name__} is a side effect the tracer "
                       "does not replay")
    cls = type(obj)
    if getattr(cls, "__setattr__", _OBJECT_SETATTR) is not _OBJECT_SETATTR:
        tx.graph_break(f"{cls.__qualname__} defines __setattr__: assignment to '{name}' runs user code that the "
                       "tracer does not replay")
    for klass in cls.__mro__:
        raw = klass.__dict__.get(name)
        if raw is not None:
            if _is_slot_of(klass, name, raw):
                return  # a __slots__ member: C code writes the slot and nothing else, like a __dict__ entry
            if hasattr(type(raw), "__set__"):
                what = "a property" if isinstance(raw, property) else f"a data descriptor ({type(raw).__name__}, " \
                    "as __slots__ makes)"
                tx.graph_break(f"{cls.__qualname__}.{name} is {what}: assignment runs code the tracer does not "
                               "replay")
            break
    if not instance_dicts.has_instance_dict(obj):  # without creating obj.__dict__ (instance_dicts.py)
        tx.graph_break(f"a {cls.__qualname__} object has no __dict__ (__slots__): assignment to '{name}' is not "
                       "replayed")


def _is_slot_of(klass: type, name: str, raw: Any) -> bool:
    """Is ``raw`` the member descriptor that ``klass.__slots__`` made for ``name``? Assigning through it runs no
    user code and changes only that slot, so program order is as unobservable as for a ``__dict__`` entry and the
    store is replayed after the graph like one (reads later in the trace see the recorded value, as
    ``calls._instance_attr`` checks the recorded stores first). Read-only members of C types are not slots."""
    slots = klass.__dict__.get("__slots__", ())
    slots = (slots,) if isinstance(slots, str) else tuple(slots)
    return type(raw) is types.MemberDescriptorType and name in slots


def replayer(effects: list[tuple[str, str, str | None, Any]], constants: list[Any],
             build: Callable[[Any, list[Any]], Callable[..., Any]],
             returned: dict[Any, tuple[int, ...]] | None = None) -> Callable[..., None]:
    """``apply(outs, leaves, args, kwargs, result)`` for finished effects: every target and value is computed first
    (from the state before the call, as the trace read it), then every store is made, in order. A store of the
    returned object (``returned``: :func:`returned_paths`) stores ``result`` itself. Generated as one Python
    function (a store costs what ``obj.name = value`` costs), like the guards."""
    namespace: dict[str, Any] = {"K": constants}
    targets, values, stores = [], [], []
    returned = returned or {}
    for k, (kind, code, name, value_spec) in enumerate(effects):
        targets.append(f"    t{k} = {code}")
        if k in returned:
            values.append(f"    v{k} = R" + "".join(f"[{i}]" for i in returned[k]))
        else:
            namespace[f"B{k}"] = build(value_spec, constants)
            values.append(f"    v{k} = B{k}(o, leaves, A, KW)")
        items = [(key[1], path) for key, path in returned.items() if type(key) is tuple and key[0] == k]
        for j, (item, path) in enumerate(items):  # an item of a rewritten dict or list that is returned too
            namespace[f"KEY{k}_{j}"] = item
            values.append(f"    v{k}[KEY{k}_{j}] = R" + "".join(f"[{i}]" for i in path))
        if kind == "attr":
            stores.append(f"    t{k}.{name} = v{k}" if name and name.isidentifier() and not keyword.iskeyword(name)
                          else f"    setattr(t{k}, {name!r}, v{k})")
        elif kind == "global":
            stores.append(f"    t{k}[{name!r}] = v{k}")
        elif kind == "extend":
            stores.append(f"    t{k}.extend(v{k})")
        else:
            stores.append(f"    if type(t{k}) is list:\n        t{k}[:] = v{k}\n    else:\n        t{k}.clear()\n"
                          f"        t{k}.update(v{k})")
    source = "\n".join(["def apply(o, leaves, A, KW, R=None):", *targets, *values, *stores])
    exec(compile(source, "<jitgraph side effects>", "exec"), namespace)  # noqa: S102 - generated replay code
    return namespace["apply"]
