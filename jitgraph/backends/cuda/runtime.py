"""Everything that touches numba.cuda outside kernels: importing it, the device's properties, launch sizes and the
movement of arrays between host and device.

Why one module: numba.cuda must be imported lazily (importing jitgraph must work without numba-cuda and must not
initialise a GPU driver), and whether we run on a real GPU or on Numba's simulator changes launch sizes (the
simulator runs one Python thread per GPU thread, so blocks stay small) and the reduction code (the simulator has no
warp shuffles). Keeping those decisions here keeps the code generators free of environment checks.

Data movement, as documented for users: arguments that expose ``__cuda_array_interface__`` (Numba device arrays,
CuPy arrays, torch CUDA tensors) are used in place; host NumPy arguments are copied to the device on every call and
results are copied back, so that path pays for the transfers and suits only large, compute-heavy graphs.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitgraph import config
from jitgraph.device_arrays import byte_range, device_address, is_device_array
from jitgraph.errors import BackendError

_HINT_INSTALL = "install the CUDA extra: pip install 'jitgraph[cuda]' (it brings numba-cuda)"
_HINT_NO_GPU = ("run on a machine with an NVIDIA GPU and driver, set NUMBA_ENABLE_CUDASIM=1 before Python starts "
                "to run kernels in Numba's (slow) simulator, or use backend='cpu'")


@functools.cache
def cuda() -> Any:
    """The ``numba.cuda`` module, imported on first use; a clear BackendError when numba-cuda is missing."""
    if not hasattr(np, "row_stack"):
        # numba-cuda <= 0.30 registers an overload for np.row_stack, which NumPy 2.5 removed, and so fails on its
        # first kernel compile. The name was an alias of np.vstack; restoring the alias lets those versions work.
        np.row_stack = np.vstack
    try:
        from numba import cuda as module  # lazy: importing jitgraph must not import numba.cuda
    except ImportError as exc:
        raise BackendError(f"backend='cuda' needs numba-cuda, which could not be imported ({exc})",
                           hint=_HINT_INSTALL) from exc
    return module


@functools.cache
def simulated() -> bool:
    """Whether numba.cuda runs kernels in its Python simulator (decided when numba.cuda was imported, so read once:
    it is asked several times per call)."""
    try:
        from numba.cuda.core import config  # numba-cuda >= 0.2x keeps its own config
    except ImportError:  # older numba-cuda (and numba's bundled cuda) read numba's config
        from numba.core import config

    return bool(config.ENABLE_CUDASIM)


def require_cuda() -> None:
    """Raise a BackendError unless kernels can run: a GPU with a working driver, or the simulator."""
    module = cuda()
    if simulated():
        return
    try:
        available = module.is_available()
    except Exception as exc:
        raise BackendError(f"backend='cuda': the CUDA driver failed to initialise ({exc})", hint=_HINT_NO_GPU) from exc
    if not available:
        detail = ""
        error = getattr(module, "cuda_error", lambda: None)()
        if error is not None:
            detail = f" ({str(error).strip().splitlines()[0]})"
        sim = "" if not config.env_set("NUMBA_ENABLE_CUDASIM") else "; NUMBA_ENABLE_CUDASIM was set too late"
        raise BackendError(f"backend='cuda': no CUDA GPU is available{detail}{sim}", hint=_HINT_NO_GPU)


BLOCKS_PER_SM = 16  # grid-stride kernels: blocks per multiprocessor at most (measured: benchmarks/cuda_elementwise.py)


@dataclass(frozen=True)
class DeviceInfo:
    """What launch configuration and the bandwidth report need to know about the device."""

    name: str
    sm_count: int
    max_threads: int
    warp: int
    simulated: bool
    peak_gbps: float | None  # theoretical DRAM bandwidth: 2 (DDR) x memory clock x bus width

    @property
    def elementwise_threads(self) -> int:
        return 32 if self.simulated else 256

    @property
    def max_blocks(self) -> int:
        """Grid-stride kernels launch at most this many blocks: enough to fill every SM several times over."""
        return 4 if self.simulated else self.sm_count * BLOCKS_PER_SM

    @property
    def split_blocks(self) -> int:
        """Blocks the first stage of a two-stage reduction spreads a row over."""
        return 8 if self.simulated else self.sm_count * 8


@functools.cache
def device_info() -> DeviceInfo:
    module = cuda()
    if simulated():
        return DeviceInfo("Numba CUDA simulator", 1, 64, 32, True, None)
    dev = module.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    try:
        peak = 2.0 * dev.MEMORY_CLOCK_RATE * 1e3 * dev.GLOBAL_MEMORY_BUS_WIDTH / 8 / 1e9
    except Exception:  # noqa: BLE001 - attribute missing on an unusual driver: gpu_check asks for --peak-gbps
        peak = None
    return DeviceInfo(name, int(dev.MULTIPROCESSOR_COUNT), int(dev.MAX_THREADS_PER_BLOCK), int(dev.WARP_SIZE),
                      False, peak)


# ---- launch configuration ----------------------------------------------------------------------------------------
def grid_stride(total: int, info: DeviceInfo) -> tuple[int, int]:
    """(blocks, threads) for a grid-stride loop over ``total`` items."""
    threads = info.elementwise_threads
    blocks = max(1, min(math.ceil(total / threads), info.max_blocks))
    return blocks, threads


def column_block_threads(n_reduce: int, info: DeviceInfo) -> int:
    """Threads per block of the column family: 32 columns times a power of two of row slices, about one slice per
    eight reduced rows, up to 8 slices (256 threads: Numba compiles without launch bounds, so a kernel may use up to
    255 registers a thread, and 1,024 threads of such a kernel do not launch on an H200:
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES); 2 under the simulator, which runs every thread as a Python thread."""
    cap = 2 if info.simulated else 8
    slices = 1
    while slices < cap and slices * 8 < n_reduce:
        slices *= 2
    return 32 * slices


def row_block_threads(n_reduce: int, info: DeviceInfo) -> int:
    """Threads per block for block-per-row reductions: a power of two, no more than the row needs (>= a warp)."""
    cap = 64 if info.simulated else 256
    threads = 32
    while threads < cap and threads < n_reduce:
        threads *= 2
    return threads


# ---- arrays (is_device_array and byte_range come from jitgraph.device_arrays, the facts every layer shares) --------
def as_numba_device(value: Any, sync: bool = True) -> Any:
    """A Numba view of a foreign device array (CuPy, torch), so kernels and copies accept it; no data moves.

    ``sync=False`` skips Numba's wait on the stream the producer names in its interface: for results made on the
    stream this backend launches on (a host wait per GEMM, and an error inside a CUDA-graph recording)."""
    module = cuda()
    if getattr(value, "__cuda_ndarray__", False) is True:
        return value
    if not hasattr(module, "as_cuda_array"):
        raise BackendError(f"{type(value).__name__} device arrays need a real GPU; the simulator only takes "
                           "numba.cuda arrays", hint="pass numba.cuda.to_device(...) arrays under the simulator")
    return module.as_cuda_array(value, sync=sync)


def transpose(value: Any, axes: tuple[int, ...] | None) -> Any:
    """A transposed *view* of a device array (shape and strides permuted, same memory).

    Numba's ``DeviceNDArray.transpose`` copies through a transpose kernel that it compiles again on every call
    (hundreds of milliseconds) and only handles 2-D arrays; NumPy semantics need a view anyway, so writes through
    it reach the original.
    """
    x = as_numba_device(value)
    axes = tuple(range(x.ndim))[::-1] if axes is None else tuple(axes)
    if simulated() or x.size == 0:
        return x.transpose(axes)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray  # lazy: numba.cuda, only once a GPU runs

    shape = tuple(x.shape[a] for a in axes)
    strides = tuple(x.strides[a] for a in axes)
    return DeviceNDArray(shape, strides, x.dtype, stream=x.stream, gpu_data=x.gpu_data)


def expand_ellipsis(spec: tuple[Any, ...], ndim: int) -> tuple[Any, ...]:
    """``spec`` with ``...`` written out as full slices: Numba's device arrays index with ints and slices only."""
    if Ellipsis not in spec:
        return spec
    k = spec.index(Ellipsis)
    explicit = sum(1 for e in spec if e is not Ellipsis and e is not None)
    return spec[:k] + (slice(None),) * (ndim - explicit) + tuple(e for e in spec[k + 1:] if e is not Ellipsis)


# ---- the stream launches go to ----------------------------------------------------------------------------------
# Launches and copies go to the legacy default stream (0) unless a call runs under ``on_stream``: graph capture needs
# a stream of its own (the legacy stream cannot be captured). Thread-local, since captures are per thread.
_LOCAL = threading.local()


def current_stream() -> Any:
    """The stream kernels launch on now: 0 (the legacy default stream) or the one ``on_stream`` set."""
    return getattr(_LOCAL, "stream", 0)


@contextlib.contextmanager
def on_stream(stream: Any) -> Iterator[None]:
    previous = current_stream()
    _LOCAL.stream = stream
    try:
        yield
    finally:
        _LOCAL.stream = previous


def stream_handle(stream: Any) -> int:
    """The raw ``CUstream`` value of a Numba stream (0 for the legacy default stream)."""
    if isinstance(stream, int):
        return stream
    handle = getattr(stream, "handle", None)
    return int(handle) if handle is not None else 0


@dataclass
class LaunchLog:
    """What a recorded call issued: its launches (kernel, grid, block, arguments) and every buffer it allocated,
    which the recording must keep alive (replays write to the recorded addresses)."""

    launches: list[tuple[Any, tuple[int, ...], tuple[int, ...], list[Any]]]
    keep: list[Any]
    execute: bool


@contextlib.contextmanager
def logging_launches(execute: bool = True) -> Iterator[LaunchLog]:
    """Log every launch and allocation in this thread (graph capture counts launches against the captured nodes
    and keeps the buffers); with ``execute=False`` launches are only logged, for a stand-in recorder to replay.
    While this is active, device-to-host copies raise: a capture cannot contain a synchronising copy."""
    log = LaunchLog([], [], execute)
    previous = getattr(_LOCAL, "log", None)
    _LOCAL.log = log
    try:
        yield log
    finally:
        _LOCAL.log = previous


def keep_alive(value: Any) -> Any:
    """``value`` (a buffer just made); kept by the recording when a call is being recorded."""
    log = getattr(_LOCAL, "log", None)
    if log is not None:
        log.keep.append(value)
    return value


def capturing() -> bool:
    return getattr(_LOCAL, "log", None) is not None


def launch(kernel: Any, grid: tuple[int, ...], block: tuple[int, ...], args: list[Any]) -> None:
    """Launch ``kernel`` on the current stream (the one place kernels are configured, so capture sees them all)."""
    log = getattr(_LOCAL, "log", None)
    if log is not None:
        log.launches.append((kernel, grid, block, list(args)))
        if not log.execute:
            return
    stream = current_stream()
    if simulated():  # the simulator's kernel object is configured in place: no caching
        if stream == 0:
            kernel[grid, block](*args)
        else:
            kernel[grid, block, stream](*args)
        return
    key = (id(kernel), grid, block, id(stream))
    configured = _CONFIGURED.get(key)
    if configured is None:  # Numba builds a configuration object per kernel[...]: once per launch shape here
        configured = kernel[grid, block] if stream == 0 else kernel[grid, block, stream]
        _CONFIGURED[key] = configured
        _CONFIGURED_KEEP.append((kernel, stream))  # ids stay unique while the objects are alive
    configured(*args)


_CONFIGURED: dict[tuple[int, tuple[int, ...], tuple[int, ...], int], Any] = {}
_CONFIGURED_KEEP: list[tuple[Any, Any]] = []


def log_library_call(name: str) -> None:
    """A library call (cuBLAS) issues its own launches: while a call is recorded, count it in the log; a stand-in
    recorder that only logs launches cannot replay it, so the recording fails instead of baking in its result."""
    log = getattr(_LOCAL, "log", None)
    if log is None:
        return
    if not log.execute:
        raise BackendError(f"{name} cannot be recorded without stream capture", hint="calls launch per call")
    log.launches.append((name, (), (), []))


def to_device(value: np.ndarray) -> Any:
    if capturing():  # a captured copy would read this host array's address again on every replay
        raise BackendError("a host-to-device copy while a CUDA graph is being recorded",
                           hint="the graph runs with per-call launches instead")
    stream = current_stream()
    if stream == 0:
        return keep_alive(cuda().to_device(np.ascontiguousarray(value)))
    return keep_alive(cuda().to_device(np.ascontiguousarray(value), stream=stream))


def empty(shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return keep_alive(cuda().device_array(shape, dtype=dtype))


def to_host(value: Any) -> Any:
    if is_device_array(value):
        if capturing():
            raise BackendError("a device-to-host copy while a CUDA graph is being recorded",
                               hint="the graph runs with per-call launches instead")
        return as_numba_device(value).copy_to_host()
    return value


def synchronize() -> None:
    cuda().synchronize()


def copy_stream() -> Any:
    """The stream for asynchronous host<->device copies: the current one, or the legacy default stream as a
    stream object (Numba copies synchronously when given the integer 0)."""
    stream = current_stream()
    return stream if stream != 0 else cuda().legacy_default_stream()


def device_pointer(value: Any) -> int:
    """The device address of a device array's first element (0 under the simulator, which has none)."""
    if simulated():
        host = host_array_of(value)
        return host.__array_interface__["data"][0] if host is not None else id(value)
    address = device_address(value)
    if address is None:
        raise BackendError(f"{type(value).__name__} has no CUDA array interface", hint="pass a numba.cuda array")
    return address


# Kernel timing for scripts/gpu_check.py: while ``KERNEL_EVENTS`` is a list, every launch records a CUDA event pair
# around itself, so kernel time can be told apart from launch overhead, allocation and transfers.
KERNEL_EVENTS: list[tuple[str, Any, Any]] | None = None
# Iterations of the spin kernel launched before each timed launch: about 3 ms of GPU time, longer than the host
# time of any launch (a cuBLAS call through nvmath-python costs a few hundred microseconds of Python), so the event
# pair measures GPU time alone.
SPIN_ITERATIONS = 2_000_000


@functools.cache
def _spin_kernel() -> Any:
    """A one-thread kernel that keeps the GPU busy for a while (a dependent chain of multiply-adds).

    Launching it before the start event means the timed kernel is already queued when the GPU reaches the event,
    so the event pair measures the kernel alone and not the host's launch overhead (tens of microseconds in
    Numba), which would otherwise dominate kernels that stream a few hundred megabytes.
    """
    module = cuda()

    def spin(out: Any, n: int) -> None:
        x = out[0]
        for _ in range(n):
            x = x * 0.999999 + 1e-7
        out[0] = x

    return module.jit(spin)


_SPIN_BUFFER: list[Any] = []


@contextlib.contextmanager
def timed(name: str) -> Iterator[None]:
    if KERNEL_EVENTS is None or simulated() or capturing():  # a recording replays without events
        yield
        return
    if not _SPIN_BUFFER:
        _SPIN_BUFFER.append(cuda().to_device(np.ones(1, np.float32)))
    _spin_kernel()[1, 1](_SPIN_BUFFER[0], SPIN_ITERATIONS)
    start, end = cuda().event(), cuda().event()
    start.record()
    yield
    end.record()
    KERNEL_EVENTS.append((name, start, end))


def kernel_seconds(events: list[tuple[str, Any, Any]]) -> float:
    """Total GPU time of recorded launches (synchronises)."""
    synchronize()
    return sum(cuda().event_elapsed_time(s, e) for _, s, e in events) / 1e3


def host_array_of(value: Any) -> np.ndarray | None:
    """The NumPy array behind a simulator array (for overlap checks); None on a real device."""
    inner = getattr(value, "_ary", None)
    return inner if isinstance(inner, np.ndarray) else None


def may_share_memory(a: Any, b: Any) -> bool:
    """Whether two device arrays' byte ranges overlap (used before in-place writes)."""
    ha, hb = host_array_of(a), host_array_of(b)
    if ha is not None and hb is not None:
        return bool(np.may_share_memory(ha, hb))
    ra, rb = byte_range(a), byte_range(b)
    if ra is None or rb is None:
        return a is b
    return ra[0] < rb[1] and rb[0] < ra[1]

