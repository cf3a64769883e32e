"""The disk cache of generated kernels.

``numba.njit(cache=True)`` only caches functions defined in a real file, so each kernel module is written to
``$JITGRAPH_CACHE_DIR/kernels/<key>.py`` and imported from there; Numba keeps its compiled code next to it in
``__pycache__`` and a new process loads that instead of compiling. The key hashes the kernel source together with
everything the machine code depends on: jitgraph's and Numba's versions, the helper and math-library sources, the
CPU (name and features) and the vector width kernels ask for (``JITGRAPH_VECTOR_WIDTH``). The dtype signature is part of Numba's own index inside the cache.

Robustness:

* writes are atomic (temporary file + ``os.replace``), so two processes filling the cache never see half a file
  (Numba's own index and code files are written the same way); a new module is published with ``os.link`` (the
  first writer wins and later ones keep its file), because Numba's index records the module file's mtime and size
  and would call itself stale if another process replaced the file with the same text;
* a kernel's first call, which compiles and saves Numba's index, holds an exclusive ``flock`` on
  ``kernels/<module>.lock`` (:func:`compile_lock`): processes on one host or several (a shared filesystem) whose
  first calls overlap compile each kernel once between them; the ones that waited find Numba's index and load;
* a module whose text does not hash to its name (truncated, edited, corrupted) is rewritten, and Numba's files
  for it are deleted; if loading Numba's cached code still fails, the kernel is recompiled after deleting them;
* the directory is checked before anything in it is used (:mod:`cache_safety`: 0700 levels owned by this user, no
  symlinks); a directory that fails is not read at all, and kernels are compiled in memory;
* the module is not imported through the import system (which would prefer a ``.pyc`` in ``__pycache__``, and
  trusts an unchecked-hash one whatever the source says): the text jitgraph generated is compared with the file,
  compiled with ``compile()`` and executed into a fresh module object, which is published in ``sys.modules`` only
  once it is complete, under a lock, so a thread never sees a half-executed module.

``cache=False`` compiles from a source string registered in ``linecache`` instead, writing nothing.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.metadata
import itertools
import linecache
import logging
import os
import stat
import sys
import tempfile
import threading
import time
import types
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache as memoize
from pathlib import Path

import llvmlite.binding as llvm
import numba

from jitgraph.backends.cpu.cache_safety import CacheRefused, cache_dir, kernels_dir
from jitgraph.backends.cpu.vector_width import attribute_width

try:
    import fcntl
except ImportError:  # Windows has no fcntl: first calls there take no cross-process lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["CacheRefused", "cache_dir", "compile_lock", "disk_cache_usable", "forget_module", "kernel_key",
           "load_module"]

_log = logging.getLogger("jitgraph.kernels")
# How long a first call waits for another process compiling the same kernel before compiling it too (a process
# that died holding the lock releases it; this bounds a lock that a stuck or very slow compile holds).
LOCK_TIMEOUT_S = 120.0
_no_flock_logged: list[bool] = []

_counter = itertools.count()
STATS = {"modules_written": 0, "modules_loaded": 0, "compiled": 0, "cache_hits": 0}
# Held while a kernel module file is checked, written and executed, and while STATS change: threads compiling the
# same kernel for the first time then get the one module object, complete (executing a module is milliseconds;
# Numba compiles later, on the kernel's first call, under its own lock).
_lock = threading.RLock()


def _jitgraph_version() -> str:
    """The installed jitgraph's version (read from its metadata: this module sits below the package's top)."""
    try:
        return importlib.metadata.version("jitgraph")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


@memoize
def _environment_fingerprint(vector_width: int | None) -> str:
    """Everything besides the kernel text that the compiled code depends on (``vector_width``: the width the
    kernels ask LLVM for, :mod:`vector_width`, which ``JITGRAPH_VECTOR_WIDTH`` may change between processes)."""
    here = Path(__file__).parent
    parts = [_jitgraph_version(), numba.__version__, sys.version, llvm.get_host_cpu_name(),
             llvm.get_host_cpu_features().flatten(), f"vector width {vector_width}"]
    # The modules generated kernels import (their helpers are compiled into the cached code): every one of them.
    imported = [here / "helpers.py", here / "vector_width.py", *sorted(here.glob("mathlib*.py")),
                here.parent / "scalar_semantics.py", here.parent / "cuda" / "device_fns.py"]
    for path in imported:
        if path.exists():
            parts.append(hashlib.sha256(path.read_bytes()).hexdigest())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def kernel_key(source: str) -> str:
    return hashlib.sha256((_environment_fingerprint(attribute_width()) + "\n" + source).encode()).hexdigest()[:24]


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _create(path: Path, text: str) -> bool:
    """Create ``path`` holding ``text`` unless it exists: False when another writer got there first. Unlike
    ``os.replace`` this never changes a published file, whose mtime and size Numba's index depends on."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # a filesystem without hard links: replace atomically (same text, a new stamp)
            os.replace(tmp, path)
        return True
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _numba_files(path: Path) -> list[str]:
    return glob.glob(str(path.parent / "__pycache__" / (path.stem + ".*")))


def drop_numba_cache(path: Path) -> None:
    for f in _numba_files(path):
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass


def numba_files(dispatcher: object) -> list[str]:
    """Numba's cache files for the module a kernel was defined in."""
    filename = getattr(getattr(dispatcher, "py_func", None), "__code__", None)
    if filename is None or not os.path.exists(filename.co_filename):
        return []
    return _numba_files(Path(filename.co_filename))


def drop_numba_cache_of(dispatcher: object) -> None:
    filename = dispatcher.py_func.__code__.co_filename  # type: ignore[attr-defined]
    drop_numba_cache(Path(filename))


def disk_cache_usable() -> bool:
    """Whether kernels may be cached on disk now: the cache directory passes its checks (warns once if not)."""
    try:
        kernels_dir()
    except CacheRefused:
        return False
    return True


def _execute(modname: str, filename: str, source: str) -> types.ModuleType:
    """A new module object holding ``source`` executed (nothing registered anywhere yet)."""
    module = types.ModuleType(modname)
    module.__file__ = filename
    code = compile(source, filename, "exec", dont_inherit=True)
    exec(code, module.__dict__)  # noqa: S102 - our own generated source, not the file's
    return module


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (FileNotFoundError, UnicodeDecodeError):
        return None


def load_module(name: str, source: str, use_cache: bool) -> types.ModuleType:
    """The kernel module for ``source``: from the cache directory, or from memory when ``use_cache`` is False.
    ``name`` is only for readability (it appears in tracebacks). Raises CacheRefused when the cache directory fails
    its checks (the caller compiles in memory; :func:`disk_cache_usable` says so beforehand)."""
    if not use_cache:
        filename = f"<jitgraph kernel {name} #{next(_counter)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        return _execute(f"jitgraph_kernel_{name}", filename, source)
    key = kernel_key(source)
    path = kernels_dir() / f"{name}_{key}.py"
    # Numba's cached code refers back to its module by name, so the module must be in sys.modules under a
    # stable name; Numba finds its files beside the module's file (``co_filename``), and that file holds exactly
    # the text executed (what jitgraph generated, compared before use), so its stamp describes this code.
    modname = f"jitgraph_kernel_{path.stem}"
    with _lock:
        existing = _read(path)
        written = False
        if existing is None:
            written = _create(path, source)
            if not written:  # another process published it meanwhile: checked like any existing file
                existing = _read(path)
        if not written and existing != source:
            drop_numba_cache(path)  # the module was corrupt: Numba's files for it are suspect too
            _atomic_write(path, source)
            written = True
        STATS["modules_written" if written else "modules_loaded"] += 1
        module = sys.modules.get(modname)
        if module is None:
            module = _execute(modname, str(path), source)
            # Tracebacks show the executed text, whatever happens to the file later.
            linecache.cache[str(path)] = (len(source), None, source.splitlines(True), str(path))
            sys.modules[modname] = module  # published complete
    return module


def forget_module(kernel: object) -> None:
    """Drop the cached module a kernel came from, so the next load executes it afresh: a new Numba dispatcher.
    Used after a first call failed or was interrupted part-way through compiling (its dispatcher is suspect)."""
    py_func = getattr(kernel, "py_func", None)
    modname = getattr(py_func, "__module__", None)
    if modname and modname.startswith("jitgraph_kernel_"):
        with _lock:
            if getattr(sys.modules.get(modname), py_func.__name__, None) is kernel:
                del sys.modules[modname]


def _lock_file(kernel: object) -> Path | None:
    """``kernels/<module>.lock`` for a kernel defined in a module of the checked disk cache, else None."""
    code = getattr(getattr(kernel, "py_func", None), "__code__", None)
    if code is None or not code.co_filename.endswith(".py"):
        return None  # compiled in memory (cache=False or a refused directory): nothing shared to lock
    module = Path(code.co_filename)
    try:
        kernels = kernels_dir()
    except CacheRefused:
        return None
    if module.parent != kernels:
        return None
    return kernels / f"{module.stem}.lock"


def _open_lock(path: Path) -> int | None:
    """A descriptor on the lock file (created 0600; a symlink is never followed), or None when none is usable."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | \
        getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:  # ELOOP: a symlink planted in its place
        _log.debug("jitgraph: kernel lock %s not usable (%s): compiling without it", path, exc)
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        _log.debug("jitgraph: kernel lock %s is not a regular file of this user: compiling without it", path)
        return None
    return fd


def _acquire(fd: int, path: Path) -> bool:
    """Take the exclusive lock, polling (never blocking for good): False when flock is unsupported (an NFS mount
    without lock support, logged once) or ``LOCK_TIMEOUT_S`` passed; the caller then compiles without it."""
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    pause = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                _log.debug("jitgraph: kernel lock %s still held after %.0f s: compiling anyway", path, LOCK_TIMEOUT_S)
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
        except OSError as exc:
            if not _no_flock_logged:
                _no_flock_logged.append(True)
                _log.debug("jitgraph: flock unavailable in the kernel cache (%s): first calls take no lock", exc)
            return False


@contextmanager
def compile_lock(kernel: object) -> Iterator[None]:
    """Held around a kernel's first call, which compiles it and saves Numba's index (or loads from it): another
    process (this host or another sharing the directory) wanting the same kernel waits, then finds the index and
    loads instead of compiling. Does nothing for a kernel compiled in memory or outside the checked directory."""
    path = _lock_file(kernel) if fcntl is not None else None
    fd = _open_lock(path) if path is not None else None
    if fd is None:
        yield
        return
    try:
        locked = _acquire(fd, path)
        try:
            yield
        finally:
            if locked:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# Numba's hit and miss totals of each dispatcher when last counted: a dispatcher shared by several launches (or
# several compiled functions, through launch._SHARED) is counted once per compile, not once per launch.
_seen: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def record_dispatch(dispatcher: object) -> None:
    """Count whether a kernel's first call compiled or came from Numba's disk cache (the change in the
    dispatcher's totals since they were last counted)."""
    stats = getattr(dispatcher, "stats", None)
    if stats is None:
        return
    hits = sum(stats.cache_hits.values())
    misses = sum(stats.cache_misses.values())
    with _lock:
        try:
            seen_hits, seen_misses = _seen.get(dispatcher, (0, 0))
            _seen[dispatcher] = (hits, misses)
        except TypeError:  # not weakly referenceable: count the totals, as nothing says what was counted
            seen_hits, seen_misses = 0, 0
        new_hits, new_misses = hits - seen_hits, misses - seen_misses
        STATS["cache_hits"] += max(new_hits, 0)
        STATS["compiled"] += max(new_misses, 0) if new_hits <= 0 else 0
