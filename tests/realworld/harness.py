"""Run one corpus case eagerly and compiled, on deep copies, and compare everything the code can touch: return
values, every array and object reachable from the arguments (``__dict__`` and ``__slots__``, recursively), the
module globals the corpus writes, and identity (an argument stored on an object is that object, not a copy).
Shared by tests/realworld/test_corpus.py and benchmarks/realworld.py."""

from __future__ import annotations

import copy
import time
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import jitgraph
from jitgraph.jit import eager_mode, tiering

try:
    from . import corpus
except ImportError:  # run as a script's sibling module (benchmarks/realworld.py puts this folder on sys.path)
    import corpus  # type: ignore[no-redef]

GLOBALS = ("STEP", "HISTORY", "CACHE")


@dataclass
class Outcome:
    name: str
    kind: str
    graphs: int = 0  # graph cache entries
    splits: int = 0  # calls that ran split around an eager piece (0 until graph breaks split)
    eager_calls: int = 0  # calls that ran the whole function eagerly
    wrong: list[str] = field(default_factory=list)
    breaks: list[str] = field(default_factory=list)

    @property
    def category(self) -> str:
        if self.wrong:
            return "wrong"
        if self.eager_calls:
            return "eager"
        return "split" if self.splits else "one graph"


def _snapshot_globals() -> dict[str, Any]:
    return {g: copy.deepcopy(getattr(corpus, g)) for g in GLOBALS}


def _set_globals(values: dict[str, Any]) -> None:
    for g, v in values.items():
        setattr(corpus, g, copy.deepcopy(v))


def compare(expected: Any, actual: Any, path: str, errors: list[str], ids: tuple[dict, dict],
            seen: set[int] | None = None) -> None:
    """Append to ``errors`` every difference between ``expected`` (eager) and ``actual`` (compiled)."""
    seen = set() if seen is None else seen
    if id(expected) in seen:
        return
    seen.add(id(expected))
    e_ids, a_ids = ids
    if e_ids.get(id(expected)) != a_ids.get(id(actual)):
        errors.append(f"{path}: identity differs (eager {e_ids.get(id(expected))}, compiled {a_ids.get(id(actual))})")
    if type(expected) is not type(actual):
        errors.append(f"{path}: type {type(actual).__name__} != {type(expected).__name__}")
        return
    if isinstance(expected, np.ndarray | np.generic):
        if expected.dtype != actual.dtype or np.shape(expected) != np.shape(actual):
            errors.append(f"{path}: {actual.dtype}{np.shape(actual)} != {expected.dtype}{np.shape(expected)}")
        elif not np.allclose(expected, actual, rtol=1e-6, atol=1e-9, equal_nan=True):
            errors.append(f"{path}: values differ")
    elif isinstance(expected, dict):
        if list(expected) != list(actual):
            errors.append(f"{path}: keys {list(actual)} != {list(expected)}")
            return
        for k in expected:
            compare(expected[k], actual[k], f"{path}[{k!r}]", errors, ids, seen)
    elif isinstance(expected, list | tuple):
        if len(expected) != len(actual):
            errors.append(f"{path}: length {len(actual)} != {len(expected)}")
            return
        for i, (e, a) in enumerate(zip(expected, actual)):
            compare(e, a, f"{path}[{i}]", errors, ids, seen)
    elif isinstance(expected, float):
        if not np.isclose(expected, actual, rtol=1e-6, atol=1e-9, equal_nan=True):
            errors.append(f"{path}: {actual!r} != {expected!r}")
    elif isinstance(expected, types.FunctionType | types.ModuleType | type | types.MethodType):
        if expected is not actual:
            errors.append(f"{path}: {actual!r} is not {expected!r}")
    elif hasattr(expected, "__dict__") or hasattr(type(expected), "__slots__"):
        state_e, state_a = _state(expected), _state(actual)
        compare(state_e, state_a, f"vars({path})", errors, ids, seen)
    elif expected != actual:
        errors.append(f"{path}: {actual!r} != {expected!r}")


def _state(obj: Any) -> dict[str, Any]:
    state = dict(getattr(obj, "__dict__", {}))
    for klass in type(obj).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if hasattr(obj, slot):
                state[slot] = getattr(obj, slot)
    return state


def _arg_ids(args: tuple) -> dict[int, str]:
    """The arrays among the arguments (top level, and inside top-level dicts and lists), by id: a stored argument
    must be the same object in the compiled run."""
    found: dict[int, str] = {}
    keep = []  # alive, so no later array reuses an id
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            found[id(a)] = f"args[{i}]"
            keep.append(a)
        elif isinstance(a, dict):
            found.update({id(v): f"args[{i}][{k!r}]" for k, v in a.items() if isinstance(v, np.ndarray)})
            keep.extend(a.values())
    _KEEP.append(keep)
    return found


_KEEP: list = []


def run_case(case: corpus.Case, backend: str = "eager", calls: int = 3, quiet: bool = True) -> Outcome:
    """``calls`` calls, eager on one deep copy of the arguments, compiled on another; everything compared after
    each call."""
    base = case.make()
    g0 = _snapshot_globals()
    eager_args, comp_args = copy.deepcopy(base), copy.deepcopy(base)
    compiled = jitgraph.compile(case.fn, backend=backend)
    out = Outcome(case.name, case.kind)
    ids = (_arg_ids(eager_args), _arg_ids(comp_args))
    g_eager, g_comp = dict(g0), dict(g0)
    for k in range(calls):
        errors: list[str] = []
        for which in ("eager", "compiled"):
            _set_globals(g_eager if which == "eager" else g_comp)
            if case.seeded:
                np.random.seed(k)
            fn, args = (case.fn, eager_args) if which == "eager" else (compiled, comp_args)
            try:
                result: Any = ("ok", _quiet(fn, args) if quiet else fn(*args))
            except Exception as exc:  # noqa: BLE001 - compared below: the same exception is right
                result = ("raised", f"{type(exc).__name__}: {exc}")
            if which == "eager":
                g_eager, r_eager = _snapshot_globals(), result
            else:
                g_comp, r_comp = _snapshot_globals(), result
        if r_eager[0] != r_comp[0] or (r_eager[0] == "raised" and r_eager[1] != r_comp[1]):
            errors.append(f"call {k}: eager {r_eager} vs compiled {r_comp}")
        elif r_eager[0] == "ok":
            compare(r_eager[1], r_comp[1], f"call {k}: result", errors, ids)
        compare(eager_args, comp_args, f"call {k}: args", errors, ids)
        compare(g_eager, g_comp, f"call {k}: globals", errors, ({}, {}))
        out.wrong.extend(errors)
    _set_globals(g0)
    _KEEP.clear()
    info = compiled.cache_info()
    for entry in compiled.entries:
        plan = entry.traced.split if entry.mode == "graph" else None
        out.graphs += 0 if entry.mode != "graph" else (len(plan.segments) if plan is not None else 1)
        out.splits += len(plan.cuts) if plan is not None else 0
    out.eager_calls = info.fallbacks
    out.breaks = [str(b) for b in compiled.break_reasons()]
    return out


def _quiet(fn: Any, args: tuple) -> Any:
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args)


def time_case(case: corpus.Case, backend: str, repeat: int = 50) -> tuple[float, float]:
    """Median seconds per call, eager and compiled (warm: the compiled function has seen these arguments, its entry
    is past the measured tier-down's probe, jit/tiering.py, which alternates graph and eager runs, and a function
    whose calls all run eagerly has had the look that puts it in eager mode, jit/eager_mode.py)."""
    base = case.make()
    eager_args, comp_args = copy.deepcopy(base), copy.deepcopy(base)
    compiled = jitgraph.compile(case.fn, backend=backend)
    g0 = _snapshot_globals()
    for _ in range(3 + tiering.PROBE_CALLS + 2 * eager_mode.TICK):  # past the probe and eager mode's first look
        _quiet(compiled, comp_args)
    te, tc = [], []
    for k in range(repeat):
        for fn, args, sink in ((case.fn, eager_args, te), (compiled, comp_args, tc)):
            if case.seeded:
                np.random.seed(k)
            t = time.perf_counter()
            _quiet(fn, args)
            sink.append(time.perf_counter() - t)
    _set_globals(g0)
    return float(np.median(te)), float(np.median(tc))
