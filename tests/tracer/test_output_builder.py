"""The generated result builder (``tracer.outputs.build_output``): for every kind of output spec it returns what the
composed closures return (``_closure``, the reference), the same types and the very same objects, and a call through
``jitgraph.compile`` returning such values matches eager NumPy."""

from __future__ import annotations

import collections
import linecache

import numpy as np

import jitgraph
from jitgraph.tracer.outputs import _closure, build_output, output_value
from jitgraph.tracer.values import ViewStep

Pair = collections.namedtuple("Pair", "first second")
_KNOWN: list[np.ndarray] = []


def _same(a, b) -> None:
    """Equal values of one type; an array the reference returns as it is (an output, a leaf) is that very object."""
    assert type(a) is type(b)
    if isinstance(a, np.ndarray):
        if any(b is x for x in _KNOWN):
            assert a is b
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, tuple | list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    else:
        assert a == b


def test_every_spec_kind_builds_what_the_closures_build() -> None:
    x, y = np.arange(6.0).reshape(2, 3), np.ones(4)
    outs = [x * 2, np.float64(3.5), np.array(7.0), [1.0, 2.0], np.int64(4)]
    leaves = [x, y]
    _KNOWN[:] = [outs[0], outs[2], x, y]
    view = ("view", 0, (ViewStep("transpose", (("axes", None),)),))
    specs = [
        ("out", 0, "array"),
        ("out", 3, "array"),  # not an ndarray: through np.asarray
        ("out", 2, "scalar"),
        ("out", 1, "scalar"),
        ("out", 4, "python"),
        ("leaf", 1),
        ("const", "text"),
        ("tuple", ()),
        ("tuple", (("out", 0, "array"),)),
        ("list", (("leaf", 0), ("const", None), ("out", 2, "scalar"))),
        ("dict", ("W", 3), (("out", 0, "array"), ("tuple", (("leaf", 1), ("const", 2))))),
        ("namedtuple", Pair, (("out", 0, "array"), ("leaf", 0))),
        ("select", ("const", True), ("leaf", 0), ("leaf", 1), True),
        view,
        ("tuple", (view, ("dict", ("a",), (("out", 4, "python"),)))),
    ]
    for spec in specs:
        built = build_output(spec, [])
        _same(built(outs, leaves, (), {}), _closure(spec, [])(outs, leaves, (), {}))
        assert "def build(o, leaves, a, kw)" in "".join(linecache.getlines(built.__code__.co_filename))
    python = build_output(("out", 4, "python"), [])(outs, leaves, (), {})
    assert type(python) is int and python == 4
    # A value built once (a fallback call) goes through the closures: the same value, no generated source.
    cached = len(linecache.cache)
    for spec in specs:
        _same(output_value(spec, [], outs, leaves, (), {}), _closure(spec, [])(outs, leaves, (), {}))
    assert len(linecache.cache) == cached


class _Momentum:
    def __init__(self) -> None:
        self.velocity: dict[str, np.ndarray] = {}

    def step(self, params, grads):
        for k in params:
            v = self.velocity.setdefault(k, np.zeros_like(params[k]))
            v = 0.9 * v - 0.01 * grads[k]
            self.velocity[k] = v
            params[k] = params[k] + v
        return {"norm": sum(float((g * g).sum()) for g in grads.values())}, [params["W"], self.velocity["b"]]


def test_a_stateful_step_rebuilds_its_dicts_like_eager() -> None:
    rng = np.random.default_rng(0)
    eager, comp = _Momentum(), _Momentum()
    step = jitgraph.compile(_Momentum.step)
    pe = {"W": rng.standard_normal((3, 2)), "b": np.zeros(2)}
    pc = {k: v.copy() for k, v in pe.items()}
    for i in range(4):
        grads = {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
        want = _Momentum.step(eager, pe, grads)
        got = step(comp, pc, {k: v.copy() for k, v in grads.items()})
        assert type(got) is tuple and type(got[0]) is dict and type(got[1]) is list
        assert abs(got[0]["norm"] - want[0]["norm"]) <= 1e-12 * want[0]["norm"]
        for a, b in zip(got[1], want[1]):
            np.testing.assert_allclose(a, b, rtol=1e-12)
        assert got[1][0] is pc["W"] and got[1][1] is comp.velocity["b"]
        for k, value in pe.items():
            np.testing.assert_allclose(pc[k], value, rtol=1e-12)
            np.testing.assert_allclose(comp.velocity[k], eager.velocity[k], rtol=1e-12)
