"""Hypothesis writes small random NumPy functions *as source text*, jitgraph compiles them, results must match.

The functions are written to a real module file and imported, so ``dis``/``inspect`` see them exactly as user code:
chains of ufuncs, operators, reductions with keepdims, matmuls, in-place updates, helper calls, lambdas,
comprehensions and constant loops. Every one must trace into one graph (all constructs used are supported).
"""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import jitgraph
from tests.tracer.helpers import assert_same

_DIR = Path(tempfile.mkdtemp(prefix="jitgraph_random_"))
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)
_counter = itertools.count()

UNARY = ["np.tanh({})", "np.abs({})", "np.sqrt(np.abs({}) + 1.0)", "-({})", "np.maximum({}, 0)", "({}) * 0.5",
         "np.exp(np.tanh({}))", "np.square(np.tanh({}))", "helper1({})", "(lambda v: v * 2.0 - 1.0)({})",
         "({}).T.T", "np.clip({}, -1.0, 1.0)", "({}).astype(np.float64)", "np.log1p(np.abs({}))"]
BINARY = ["({}) + ({})", "({}) - ({})", "({}) * ({})", "np.maximum({}, {})", "np.where(({0}) > ({1}), {0}, {1})",
          "({}) / (np.abs({}) + 1.0)", "helper2({}, {})", "(({}) @ ({}).T) @ x * 0.1",
          "sum([c * ({}) for c in (1.0, 2.0)]) + ({})"]
REDUCE = ["({}).sum(axis=0, keepdims=True)", "({}).mean(axis=1, keepdims=True)",
          "np.max({}, axis=-1, keepdims=True)", "np.sum({})", "({}).std()"]

HELPERS = '''
import numpy as np

def helper1(a):
    return np.tanh(a) * 0.9

def helper2(a, b, scale=0.5):
    return (a - b) * scale

'''


@st.composite
def expressions(draw, depth=0):
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["x", "y", "z", "t", "s * x", "np.full_like(x, 0.5)", "x / np.sqrt(x.shape[1])",
                                      "np.exp(s) * y", "np.float32(s) * z"]))
    kind = draw(st.sampled_from(["unary", "binary", "reduce"]))
    if kind == "unary":
        return draw(st.sampled_from(UNARY)).format(draw(expressions(depth + 1)))
    if kind == "reduce":
        return "(x + " + draw(st.sampled_from(REDUCE)).format(draw(expressions(depth + 1))) + ")"
    template = draw(st.sampled_from(BINARY))
    return template.format(draw(expressions(depth + 1)), draw(expressions(depth + 1)))


@st.composite
def programs(draw):
    lines = ["def f(x, y, z, s):", "    t = x + y"]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["assign", "inplace", "loop", "branch", "arg_inplace", "slice_write"]))
        expr = draw(expressions())
        if kind == "assign":
            lines.append(f"    t = {expr}")
        elif kind == "inplace":
            op = draw(st.sampled_from(["+=", "-=", "*="]))
            lines.append(f"    t {op} np.tanh({expr})")
        elif kind == "loop":
            lines.append(f"    for i in range({draw(st.integers(1, 3))}):")
            lines.append(f"        t = np.tanh(t * 0.5 + ({expr}) * i)")
        elif kind == "arg_inplace":  # mutates the caller's array (maybe through an alias: y may be x)
            op = draw(st.sampled_from(["+=", "-=", "*="]))
            lines.append(f"    {draw(st.sampled_from(['x', 'y', 'z']))} {op} np.tanh({expr})")
        elif kind == "slice_write":
            target = draw(st.sampled_from(["x[0]", "y[:, :1]", "z[-1:, ::2]", "x.T[0]", "y[...]"]))
            lines.append(f"    v = {expr}")
            lines.append(f"    {target} = np.tanh(v){target[1:]}")  # the same index applied to v: same shape
        else:
            lines.append("    if x.shape[0] > 2:")
            lines.append(f"        t = t + {expr}")
    lines.append(draw(st.sampled_from(["    return t", "    return t, t.sum(axis=0)",
                                       "    return {'t': t, 'n': x.shape[0]}"])))
    return HELPERS + "\n".join(lines) + "\n"


def load(source: str):
    name = f"jitgraph_random_{next(_counter)}"
    path = _DIR / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def _arguments(x: np.ndarray, y: np.ndarray, z: np.ndarray, alias: bool) -> list[np.ndarray]:
    x = x.copy()
    return [x, x if alias else y.copy(), z.copy()]


@given(source=programs(), m=st.integers(1, 4), n=st.integers(1, 4), dtype=st.sampled_from([np.float32, np.float64]),
       s=st.floats(-2, 2, allow_nan=False), seed=st.integers(0, 2**16), alias=st.booleans())
def test_random_program_matches_eager(source, m, n, dtype, s, seed, alias):
    """``alias`` passes the same array as x and y, so in-place updates of one show through the other."""
    fn = load(source)
    rng = np.random.default_rng(seed)
    x, y, z = (rng.standard_normal((m, n)).astype(dtype) for _ in range(3))
    eager_args, compiled_args = _arguments(x, y, z, alias), _arguments(x, y, z, alias)
    with np.errstate(all="ignore"):
        expected = fn(*eager_args, s)
        compiled = jitgraph.compile(fn, backend="eager", passes=())
        actual = compiled(*compiled_args, s)
    assert_same(expected, actual, rtol=2e-4, atol=1e-5)
    assert_same(eager_args, compiled_args, rtol=2e-4, atol=1e-5, path="arguments after the call")
    assert len(compiled.graphs()) == 1, [str(b) for b in compiled.break_reasons()]
