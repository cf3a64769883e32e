"""CUDA-graph replay: a compiled graph's launches on device-resident arguments, recorded once and replayed per call.

Why: a dozen kernels launched through Numba cost ~2 ms of Python per call (argument typing, configuration objects)
while the GPU needs a fraction of that. Recorded once as a CUDA graph (stream capture through the driver API
numba-cuda already binds, ``cuStreamBeginCapture`` / ``cuStreamEndCapture`` / ``cuGraphInstantiate``), a call is
one ``cuGraphLaunch`` plus one device-to-device copy per result.

When (``Replay.call``): every array argument is a device array and the graph has no node that runs on the host.
A recording is keyed by the arguments' addresses, shapes, strides and dtypes and the values of scalar arguments
(they are baked into the recorded launches); a key is recorded on its second call (the first compiles the kernels
and runs the cuBLAS self-checks), at most ``MAX_RECORDINGS`` keys per graph, after which the graph keeps per-call
launches (its arguments move from call to call).

Guards (never a wrong answer in silence): the recording call runs the graph normally first, restores the mutated
arguments, records, replays once and compares every output and mutated argument with the normal run (bit for bit,
or for floats within 1e-5 of the largest value, as a library GEMM may sum in a varying order); a difference, an error, a captured graph with fewer nodes than launches issued, or an output that is a view of an
argument turn replay off for this graph with the reason, and the normal run's results are returned. Recorded
intermediates and results live in buffers the recording owns (addresses must not change); each replay copies the
results into fresh arrays, so values returned earlier are never overwritten.

Limits: replays run on a stream of their own that is ordered with the legacy default stream (where everything
else of this backend runs); CUDA work issued from another thread *while a call is being recorded* makes that
recording fail (with the reason) and may fail that other work, as with any stream capture. The cuBLAS workspace
a recorded GEMM uses is owned by its planned ``Matmul`` object, which ``cublas.NvmathProvider`` keeps for the
life of the process.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from jitgraph import config
from jitgraph.backends.cuda import compiler, runtime
from jitgraph.backends.cuda.outputs import OutputSlot
from jitgraph.backends.cuda.pool import BufferPool
from jitgraph.device_arrays import device_array_facts

MAX_RECORDINGS = 4
MAX_SEEN = 64  # argument sets seen once, remembered until replay gives up on a graph whose arguments keep moving


class Recorder(Protocol):
    """Records the launches issued on ``stream`` between ``begin`` and ``end``; ``replay`` runs them again."""

    name: str
    launches_run: bool  # whether launches are issued while recording (the driver captures them); else only logged

    def stream(self) -> Any: ...

    def begin(self, stream: Any) -> Any: ...  # a context manager around the recorded call

    def end(self, stream: Any, log: runtime.LaunchLog) -> Any: ...  # the replayable handle

    def replay(self, handle: Any, stream: Any) -> None: ...

    def copy(self, dst: Any, src: Any, stream: Any) -> None: ...


class DriverRecorder:
    """Stream capture through the CUDA driver (numba-cuda's ``cuda.bindings`` driver wrapper, which raises on error)."""

    name = "CUDA graph (stream capture)"
    launches_run = True

    def __init__(self) -> None:
        from numba.cuda.cudadrv.driver import binding, driver  # lazy: only on a real GPU

        self.driver, self.binding = driver, binding
        self._stream: Any = None

    def stream(self) -> Any:
        if self._stream is None:  # a blocking stream: it stays ordered with the legacy default stream
            self._stream = runtime.cuda().stream()
        return self._stream

    def begin(self, stream: Any) -> Any:
        mode = self.binding.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED  # allocations may happen inside
        self.driver.cuStreamBeginCapture(runtime.stream_handle(stream), mode)
        return runtime.cuda().defer_cleanup()  # no deferred cuMemFree (it synchronises) while capturing

    def end(self, stream: Any, log: runtime.LaunchLog) -> Any:
        graph = self.driver.cuStreamEndCapture(runtime.stream_handle(stream))
        _, count = self.driver.cuGraphGetNodes(graph, 0)
        if int(count) < len(log.launches):
            self.driver.cuGraphDestroy(graph)
            raise RuntimeError(f"the captured graph has {int(count)} nodes for {len(log.launches)} launches")
        handle = self.driver.cuGraphInstantiate(graph, 0)
        return _Handle(handle, graph, self.driver)

    def replay(self, handle: Any, stream: Any) -> None:
        self.driver.cuGraphLaunch(handle.exec, runtime.stream_handle(stream))

    def copy(self, dst: Any, src: Any, stream: Any) -> None:
        if dst.is_c_contiguous() and src.is_c_contiguous():
            self.driver.cuMemcpyDtoDAsync(runtime.device_pointer(dst), runtime.device_pointer(src),
                                          int(src.size * src.dtype.itemsize), runtime.stream_handle(stream))
        else:
            with runtime.on_stream(stream):
                compiler.assign(dst, src)


class _Handle:
    """An instantiated graph; destroyed with its recording."""

    def __init__(self, exec_: Any, graph: Any, driver: Any) -> None:
        self.exec, self.graph, self.driver = exec_, graph, driver

    def __del__(self) -> None:
        try:
            self.driver.cuGraphExecDestroy(self.exec)
            self.driver.cuGraphDestroy(self.graph)
        except Exception:  # noqa: BLE001, S110 - at interpreter exit the driver may be gone already
            pass


# Tests install a stand-in recorder here (one that logs and re-launches under the simulator).
OVERRIDE: list[Recorder] = []


@functools.cache
def _driver_recorder() -> tuple[Recorder | None, str]:
    try:
        return DriverRecorder(), ""
    except Exception as exc:  # noqa: BLE001 - a numba-cuda without the cuda.bindings driver
        return None, f"the CUDA driver bindings are unavailable ({type(exc).__name__}: {exc})"


def recorder() -> tuple[Recorder | None, str]:
    """The recorder to use, or None and why calls launch every kernel."""
    if OVERRIDE:
        return OVERRIDE[-1], ""
    if not config.env_flag("JITGRAPH_CUDA_GRAPHS"):
        return None, "graph replay is turned off (JITGRAPH_CUDA_GRAPHS=0)"
    if runtime.simulated():
        return None, "the CUDA simulator has no CUDA graphs"
    return _driver_recorder()


@dataclass
class Recording:
    handle: Any
    outputs: list[Any]  # the recorded results (device arrays the recording owns) or constants
    owned: list[Any]  # pooled blocks and other buffers the recorded launches write to
    slots: dict[int, OutputSlot] = field(default_factory=dict)  # output position -> where its copies go


@dataclass
class Replay:
    """Per compiled graph: its recordings, and why it does not replay (when it does not)."""

    recorder: Recorder | None
    reason: str = ""
    output_inputs: dict[int, int] = field(default_factory=dict)  # output position -> argument returned as is
    mutated: list[int] = field(default_factory=list)
    recordings: dict[tuple, Recording] = field(default_factory=dict)
    seen: dict[tuple, int] = field(default_factory=dict)
    replays: int = 0

    def describe(self) -> str:
        if self.reason:
            return f"per-call launches because {self.reason}"
        assert self.recorder is not None
        return (f"{self.recorder.name}: {len(self.recordings)} recorded argument set(s), {self.replays} replays "
                "(recorded on the second call with the same device arguments)")

    def key(self, args: Sequence[Any]) -> tuple | None:
        """The recording key of a call, or None when the call cannot replay (host arrays, unknown values)."""
        parts: list[Any] = []
        for a in args:
            facts = device_array_facts(a)  # Numba, CuPy or torch arrays alike (their interface, not attributes)
            if facts is not None:
                parts.append((runtime.device_pointer(a), facts[0], facts[2], facts[1].str))
            elif isinstance(a, bool | int | float | complex | np.generic) or a is None:
                parts.append((type(a), a))
            else:
                return None  # a host NumPy array (it is copied per call) or something unhashable
        return tuple(parts)

    def call(self, args: Sequence[Any], run: Callable[[Sequence[Any], BufferPool | None], list[Any]],
             snapshot: Callable[[Any], Any], restore: Callable[[Any, Any], None]) -> list[Any] | None:
        """The call's results through replay, or None when the caller must run it normally.

        ``run(args, pool)`` runs the graph normally (device arguments in, device results out), ``snapshot(x)`` and
        ``restore(x, saved)`` copy a device argument aside and back."""
        if self.reason or self.recorder is None:
            return None
        key = self.key(args)
        if key is None:
            return None
        found = self.recordings.get(key)
        if found is not None:
            return self._replay(found, args)
        self.seen[key] = self.seen.get(key, 0) + 1
        if self.seen[key] < 2:
            if len(self.seen) > MAX_SEEN:
                self.reason = f"{MAX_SEEN} calls came with argument addresses or scalar values not seen before"
                self.seen.clear()
            return None
        if len(self.recordings) >= MAX_RECORDINGS:
            self.reason = f"more than {MAX_RECORDINGS} different argument addresses or scalar values were seen"
            return None
        return self._record(key, args, run, snapshot, restore)

    def _replay(self, rec: Recording, args: Sequence[Any]) -> list[Any]:
        assert self.recorder is not None
        stream = self.recorder.stream()
        self.recorder.replay(rec.handle, stream)
        out = []
        for k, value in enumerate(rec.outputs):
            if k in self.output_inputs:
                out.append(args[self.output_inputs[k]])
            elif runtime.is_device_array(value):
                slot = rec.slots.get(k)
                if slot is None:
                    slot = rec.slots[k] = OutputSlot(tuple(value.shape), value.dtype)
                fresh = slot.take()
                self.recorder.copy(fresh, value, stream)
                out.append(fresh)
            else:
                out.append(value)
        self.replays += 1
        return out

    def _record(self, key: tuple, args: Sequence[Any], run: Callable[[Sequence[Any], BufferPool | None], list[Any]],
                snapshot: Callable[[Any], Any], restore: Callable[[Any, Any], None]) -> list[Any]:
        assert self.recorder is not None
        saved = {i: snapshot(args[i]) for i in self.mutated}
        want = run(args, None)
        owned = [(k, v) for k, v in enumerate(want) if k not in self.output_inputs and runtime.is_device_array(v)]
        views = [k for k, v in owned if any(runtime.is_device_array(a) and runtime.may_share_memory(v, a)
                                            for a in args)]
        if views:
            self.reason = f"output {views[0]} is a view of an argument"
            return want
        shared = [(j, k) for j, v in owned for k, w in owned if j < k and runtime.may_share_memory(v, w)]
        if shared:  # replays hand out copies, which would not share memory as these results do
            self.reason = f"outputs {shared[0][0]} and {shared[0][1]} share memory"
            return want
        want_host = [runtime.to_host(v) for v in want] + [runtime.to_host(args[i]) for i in self.mutated]
        after = {i: snapshot(args[i]) for i in self.mutated}
        for i, value in saved.items():
            restore(args[i], value)
        pool = BufferPool()
        stream = self.recorder.stream()
        runtime.synchronize()
        try:
            with runtime.on_stream(stream), runtime.logging_launches(self.recorder.launches_run) as log, \
                    self.recorder.begin(stream):
                try:
                    got = run(args, pool)
                finally:
                    handle = self.recorder.end(stream, log)
            self.recorder.replay(handle, stream)
            runtime.synchronize()
            got_host = [runtime.to_host(v) for v in got] + [runtime.to_host(args[i]) for i in self.mutated]
        except Exception as exc:  # noqa: BLE001 - any capture failure: per-call launches from now on
            self.reason = f"recording failed ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
            self._restore(args, after, restore)
            return want
        problem = _differs(got_host, want_host)
        if problem is not None:
            self.reason = f"the replayed graph disagreed with per-call launches ({problem})"
            self._restore(args, after, restore)
            return want
        self.recordings[key] = Recording(handle, got, pool.hold() + log.keep)
        return want

    def _restore(self, args: Sequence[Any], after: dict[int, Any], restore: Callable[[Any, Any], None]) -> None:
        runtime.synchronize()
        for i, value in after.items():
            restore(args[i], value)


def _differs(got: list[Any], want: list[Any]) -> str | None:
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"value {k} is {g.dtype}{g.shape}, expected {w.dtype}{w.shape}"
        if np.array_equal(g, w, equal_nan=w.dtype.kind in "fc"):
            continue
        # The same kernels on the same inputs: equal bit for bit, unless a library call (cuBLAS) sums in an order
        # that varies between runs. Missing launches or wrong addresses differ by far more than rounding.
        if w.dtype.kind not in "fc" or not np.array_equal(np.isfinite(g), np.isfinite(w)):
            return f"value {k} differs"
        finite = np.isfinite(w)
        scale = float(np.abs(w[finite]).max()) if finite.any() else 0.0
        if not np.allclose(g[finite], w[finite], rtol=1e-5, atol=1e-5 * scale):
            return f"value {k} differs by up to {float(np.abs(g[finite] - w[finite]).max()):.3g}"
    return None
