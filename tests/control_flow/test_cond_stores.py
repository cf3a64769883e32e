"""A data-dependent ``if`` whose paths rebind locals (arguments included) or store arrays into a caller's dict or list
items becomes one ``cond`` (branches.py): checked against eager NumPy on deep copies over three calls that take both
paths -- results, container contents, and the identity of the arrays the path not taken left in place. Where the
result would not be exact (an in-place write after the ``if``, returning the rebound name, a new key) the call is
still NumPy's."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

import jitgraph


def clip_dict(grads, max_norm):
    total = np.sqrt(sum(np.sum(g ** 2) for g in grads.values()))
    if total > max_norm:
        for k in grads:
            grads[k] = grads[k] * (max_norm / total)
    return total


def clip_arg(w, g, c):
    n = np.linalg.norm(g)
    if n > c:
        g = g * (c / n)
    return w - 0.1 * g


def clip_list(xs, c):
    if np.sum(xs[0]) > c:
        xs[1] = xs[1] + xs[0]
    else:
        xs[1] = xs[1] - 1.0
    return xs[0] * 2


def write_after(g, c):
    if np.sum(g) > c:
        g = g * 2.0
    g += 1.0  # in NumPy this writes the caller's array when the branch is not taken
    return g.sum()


def return_rebound(g, c):
    if np.sum(g) > c:
        g = g * 2.0
    return g  # the caller's own array when the branch is not taken


def new_key(d, c):
    if np.sum(d["a"]) > c:
        d["b"] = d["a"] * 2.0
    return d["a"] + 1.0


def _ids(args: tuple) -> list[Any]:
    """Per argument (and per item of a dict/list argument), the object, to compare identities after a call."""
    out = []
    for a in args:
        out.append(a)
        if isinstance(a, dict):
            out.extend(a.values())
        elif isinstance(a, list):
            out.extend(a)
    return out


def _same(e: Any, a: Any) -> None:
    assert type(e) is type(a)
    if isinstance(e, dict):
        assert list(e) == list(a)
        for k in e:
            _same(e[k], a[k])
    elif isinstance(e, list | tuple):
        assert len(e) == len(a)
        for x, y in zip(e, a):
            _same(x, y)
    else:
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-12)
        assert np.asarray(a).dtype == np.asarray(e).dtype and np.shape(a) == np.shape(e)


def run(fn: Callable[..., Any], calls: list[tuple]) -> Any:
    """Each call's arguments deep-copied for eager and compiled; results, arguments and identities compared."""
    compiled = jitgraph.compile(fn)
    for args in calls:
        e_args, c_args = copy.deepcopy(args), copy.deepcopy(args)
        e_before, c_before = _ids(e_args), _ids(c_args)
        expected, actual = fn(*e_args), compiled(*c_args)
        _same(expected, actual)
        _same(list(e_args), list(c_args))
        e_after, c_after = _ids(e_args), _ids(c_args)
        assert [x is y for x, y in zip(e_before, e_after)] == [x is y for x, y in zip(c_before, c_after)]
        assert [expected is x for x in e_before] == [actual is x for x in c_before]
    return compiled


def _one_graph(compiled: Any) -> None:
    assert compiled.cache_info().fallbacks == 0, compiled.break_reasons()
    graphs = [e for e in compiled.entries if e.mode == "graph"]
    assert graphs and all(e.traced.split is None for e in graphs), compiled.break_reasons()


def _grads(scale: float) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"W": rng.standard_normal((4, 3)) * scale, "b": rng.standard_normal(3) * scale}


def test_dict_items_rewritten_on_one_path_are_one_cond() -> None:
    compiled = run(clip_dict, [(_grads(1.0), 1.0), (_grads(0.01), 1.0), (_grads(2.0), 1.0)])
    _one_graph(compiled)


def test_argument_rebound_on_one_path_is_one_cond() -> None:
    w = np.linspace(-1.0, 1.0, 5)
    g = np.linspace(0.5, 2.0, 5)
    compiled = run(clip_arg, [(w, g, 1.0), (w, g * 0.01, 1.0), (w, g * 3.0, 1.0)])
    _one_graph(compiled)


def test_list_items_stored_on_both_paths_are_one_cond() -> None:
    x, y = np.arange(3.0), np.ones(3)
    compiled = run(clip_list, [([x, y], 1.0), ([-x, y], 1.0), ([x + 1.0, y], 1.0)])
    _one_graph(compiled)


def test_in_place_write_after_the_if_stays_numpys() -> None:
    g = np.arange(4.0)
    run(write_after, [(g, 100.0), (g, 1.0), (g, 100.0)])


def test_returning_the_rebound_name_keeps_the_callers_array() -> None:
    g = np.arange(4.0)
    run(return_rebound, [(g, 100.0), (g, 1.0), (g, 100.0)])


def test_a_new_key_on_one_path_stays_numpys() -> None:
    d = {"a": np.arange(3.0)}
    run(new_key, [(d, 100.0), (d, 1.0), (d, 100.0)])


class Holder:
    def __init__(self) -> None:
        self.v = np.zeros(3)


def attr_store(h, x, c):
    if np.sum(x) > c:
        h.v = x * 2.0
    return x + 1.0


def test_an_attribute_store_on_one_path_stays_numpys() -> None:
    x = np.arange(3.0)
    for c in (100.0, 1.0, 100.0):
        e_h, c_h = Holder(), Holder()
        compiled = jitgraph.compile(attr_store)
        _same(attr_store(e_h, x, c), compiled(c_h, x, c))
        _same(e_h.v, c_h.v)


def is_test(x, c):
    g = x
    if np.sum(g) > c:
        g = g * 2.0
    return g is x, g.sum()


def test_an_identity_test_on_the_rebound_name_stays_numpys() -> None:
    x = np.arange(3.0)
    run(is_test, [(x, 100.0), (x, 1.0), (x, 100.0)])
