"""Graph replay (graphs.py), the buffer pool and pinned staging under the simulator.

The simulator has no CUDA graphs; a stand-in recorder logs the launches of the recording call (without running
them, as stream capture does) and re-launches them on replay. That exercises everything but the driver calls:
when a call records, the comparison with per-call launches, fresh results per replay, argument restoring, keys,
and the reasons replay turns off. The driver path (cuStreamBeginCapture ... cuGraphLaunch) runs only on a GPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from cuda_util import assert_matches_eager, build, compile_cuda, host, rand
from numba import cuda

from jitgraph.backends import eager
from jitgraph.backends.cuda import graphs, runtime

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


class LogRecorder:
    name = "stand-in recorder"
    launches_run = False

    def __init__(self, broken: bool = False) -> None:
        self.broken = broken

    def stream(self) -> Any:
        return 0

    def begin(self, stream: Any) -> Any:
        return contextlib.nullcontext()

    def end(self, stream: Any, log: runtime.LaunchLog) -> Any:
        return list(log.launches)

    def replay(self, handle: Any, stream: Any) -> None:
        for kernel, grid, block, args in handle[: len(handle) - 1 if self.broken else None]:
            kernel[grid, block](*args)

    def copy(self, dst: Any, src: Any, stream: Any) -> None:
        dst.copy_to_device(src)


@pytest.fixture
def recorder() -> Iterator[LogRecorder]:
    fake = LogRecorder()
    graphs.OVERRIDE.append(fake)
    yield fake
    graphs.OVERRIDE.remove(fake)


def _sgd(b, p, g, m):
    m2 = b.op("add", b.op("multiply", b.const(0.9), m), g)
    p2 = b.op("subtract", p, b.op("multiply", b.const(0.1), m2))
    loss = b.op("sum", b.op("multiply", p2, p2), axis=(0,), keepdims=False)
    return {"outputs": [loss, b.op("tanh", p2)], "mutations": [(0, p2), (2, m2)]}


SGD = [((40,), "float32")] * 3


def _steps(compiled: Any, n: int, keep: list | None = None) -> None:
    """n calls on the same device arguments, each compared with eager NumPy on host copies."""
    state = [rand((40,), seed=1), rand((40,), seed=2), rand((40,), seed=3)]
    dev = [cuda.to_device(a) for a in state]
    graph = compiled.graph
    for _ in range(n):
        want = eager.run(graph, state)
        got = compiled(dev)
        for w, g in zip(want, got):
            np.testing.assert_allclose(host(g), w, rtol=1e-5, atol=1e-6)
        for w, d in zip(state, dev):
            np.testing.assert_allclose(host(d), w, rtol=1e-5, atol=1e-6)
        if keep is not None:
            keep.append((got, [host(g) for g in got]))


def test_replay_records_on_the_second_call_and_matches_eager(recorder: LogRecorder) -> None:
    c = compile_cuda(build(SGD, _sgd))
    kept: list = []
    _steps(c, 5, kept)
    assert len(c.replay.recordings) == 1 and c.replay.replays == 3 and not c.replay.reason
    assert "1 recorded argument set(s), 3 replays" in c.explain()
    for got, values in kept:  # results handed out earlier were not overwritten by later replays
        for g, v in zip(got, values):
            np.testing.assert_array_equal(host(g), v)


def test_a_replay_that_differs_is_caught_when_recording(recorder: LogRecorder) -> None:
    recorder.broken = True  # drops the last launch
    c = compile_cuda(build(SGD, _sgd))
    _steps(c, 4)
    assert "disagreed with per-call launches" in c.replay.reason and not c.replay.recordings


def test_each_argument_set_records_then_replay_turns_off(recorder: LogRecorder) -> None:
    g = build([((30,), "float32")] * 2, lambda b, x, y: b.op("tanh", b.op("multiply", x, y)))
    c = compile_cuda(g)
    alive = [[cuda.to_device(rand((30,), seed=k)), cuda.to_device(rand((30,), seed=k + 50))]
             for k in range(graphs.MAX_RECORDINGS + 1)]  # kept alive: distinct addresses
    for args in alive:
        for _ in range(3):
            np.testing.assert_allclose(host(c(args)[0]), np.tanh(host(args[0]) * host(args[1])), rtol=1e-6)
    assert len(c.replay.recordings) == graphs.MAX_RECORDINGS and "more than" in c.replay.reason
    x = alive[0][0]
    scalar = build([((30,), "float32"), ((), "float32")], lambda b, x, s: b.op("multiply", x, s))
    cs = compile_cuda(scalar)
    for k in range(6):  # scalars are part of the key: 1.0 and 2.0 each record once, then replay
        s = np.float32(1 + k % 2)
        np.testing.assert_allclose(host(cs([x, s])[0]), host(x) * s, rtol=1e-6)
    assert len(cs.replay.recordings) == 2 and cs.replay.replays == 2


def test_an_output_that_views_an_argument_turns_replay_off(recorder: LogRecorder) -> None:
    g = build([((4, 6), "float32")], lambda b, x: (b.op("transpose", x), b.op("exp", x)))
    c = compile_cuda(g)
    x = cuda.to_device(rand((4, 6)))
    for _ in range(3):
        out = c([x])
        np.testing.assert_allclose(host(out[0]), host(x).T)
    assert "is a view of an argument" in c.replay.reason


def test_host_arguments_do_not_replay_and_use_the_staging_buffers(recorder: LogRecorder) -> None:
    c = compile_cuda(build(SGD, _sgd))
    for step in range(3):
        args = [rand((40,), seed=step), rand((40,), seed=7), rand((40,), seed=8)]
        assert_matches_eager(c.graph, args, c, rtol=1e-5, atol=1e-6)
    assert not c.replay.recordings and c.staging.buffers
    assert {slot for slot, _ in c.staging.buffers} == {"in", "out", "mut"}


def test_the_pool_reuses_blocks_and_never_hands_out_a_returned_one() -> None:
    g = build([((50,), "float32")] * 2, lambda b, x, y: (b.op("exp", b.op("add", x, y)),
                                                         b.op("sum", b.op("multiply", x, y), axis=(0,),
                                                              keepdims=False)))
    c = compile_cuda(g)
    firsts = [cuda.to_device(rand((50,), seed=k)) for k in range(2)]
    out1 = c(firsts)
    before = [host(o) for o in out1]
    for k in range(4):  # device results stay the caller's; host calls give back their uploads and results
        assert_matches_eager(g, [rand((50,), seed=10 + k), rand((50,), seed=20 + k)], c, device=k % 2 == 0)
    for o, b in zip(out1, before):
        np.testing.assert_array_equal(host(o), b)
    assert c.pool is not None and c.pool.hits > 0 and "reused" in c.explain()


def test_pool_switch_and_compile_times(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JITGRAPH_CUDA_POOL", "0")
    g = build([((33,), "float32")] * 2, lambda b, x, y: b.op("sinh", b.op("subtract", x, y)))
    c = assert_matches_eager(g, [rand((33,)), rand((33,), seed=1)], device=True)
    assert c.pool is None and "JITGRAPH_CUDA_POOL=0" in c.explain()
    times = c.compile_times()
    assert times["codegen"] > 0 and times["numba"] > 0  # this kernel's first launch happened in this test


def test_a_library_call_is_not_recorded_by_a_launch_log(recorder: LogRecorder) -> None:
    """The stand-in recorder cannot replay a library call: recording fails (reason given), results stay right."""
    from test_cuda_gemm_path import HostGemm

    from jitgraph.backends.cuda import cublas

    fake = HostGemm()
    cublas.OVERRIDE.append(fake)
    try:
        g = build([((6, 8), "float32"), ((8, 5), "float32")], lambda b, x, w: b.op("tanh", b.op("matmul", x, w)))
        c = compile_cuda(g)
        x, w = cuda.to_device(rand((6, 8))), cuda.to_device(rand((8, 5), seed=1))
        for _ in range(3):
            np.testing.assert_allclose(host(c([x, w])[0]), np.tanh(host(x) @ host(w)), rtol=1e-5)
    finally:
        cublas.OVERRIDE.remove(fake)
    assert "cannot be recorded" in c.replay.reason and c.plans and next(iter(c.plans.values())).gemm.active


def test_outputs_sharing_memory_turn_replay_off(recorder: LogRecorder) -> None:
    def fn(b, x):
        y = b.op("exp", x)
        return y, b.op("transpose", y, axes=(1, 0))

    c = compile_cuda(build([((3, 5), "float32")], fn))
    x = cuda.to_device(rand((3, 5)))
    for _ in range(3):
        _, yt = c([x])
        np.testing.assert_allclose(host(yt), np.exp(host(x)).T, rtol=1e-6)
    assert "share memory" in c.replay.reason


def _w5_steps(steps: int) -> Any:
    """W5 (the MLP training step) compiled for CUDA, run on device arguments against eager NumPy."""
    import sys
    from pathlib import Path

    import jitgraph

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from benchmarks.workloads import make_inputs, w5_mlp_step

    x, y, *weights = make_inputs("W5", 0.02)
    want = [w.copy() for w in weights]
    dx, dy, *dw = [cuda.to_device(a) for a in (x, y, *weights)]
    step = jitgraph.compile(w5_mlp_step, backend="cuda", fullgraph=True)
    for _ in range(steps):
        loss = step(dx, dy, *dw)
        want_loss = w5_mlp_step(x, y, *want)
        np.testing.assert_allclose(host(loss), want_loss, rtol=1e-4)
        for got, w in zip(dw, want):
            np.testing.assert_allclose(host(got), w, rtol=1e-3, atol=1e-5)
    (entry,) = [e for e in step.entries if getattr(e, "compiled", None) is not None]
    return entry.compiled


def test_w5_training_steps_replay(recorder: LogRecorder) -> None:
    compiled = _w5_steps(3)
    assert compiled.replay.replays == 1 and not compiled.replay.reason


def test_w5_training_steps_through_the_gemm_path() -> None:
    from test_cuda_gemm_path import HostGemm

    from jitgraph.backends.cuda import cublas

    fake = HostGemm()
    cublas.OVERRIDE.append(fake)
    try:
        compiled = _w5_steps(2)
    finally:
        cublas.OVERRIDE.remove(fake)
    gemms = [p.gemm for p in compiled.plans.values() if p.gemm is not None]
    assert len(gemms) == 5 and all(g.active and g.checked for g in gemms)  # 2 forward, 3 backward
    assert sum(g.spec.c is not None for g in gemms) == 2  # w1 and w2 updates: beta = 1
