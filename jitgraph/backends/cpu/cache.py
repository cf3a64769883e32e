"""The disk cache of generated kernels.

``numba.njit(cache=True)`` only caches functions defined in a real file, so each kernel module is written to
``$JITGRAPH_CACHE_DIR/kernels/<key>.py`` and imported from there; Numba keeps its compiled code next to it in
``__pycache__`` and a new process loads that instead of compiling. The key hashes the kernel source together with
everything the machine code depends on: jitgraph's and Numba's versions, the helper and math-library sources, and
the CPU (name and features). The dtype signature is part of Numba's own index inside the cache.

Robustness:

* writes are atomic (temporary file + ``os.replace``), so two processes filling the cache never see half a file
  (Numba's own index and code files are written the same way);
* a module whose text does not hash to its name (truncated, edited, corrupted) is rewritten, and Numba's files
  for it are deleted; if loading Numba's cached code still fails, the kernel is recompiled after deleting them;
* the directory is created with mode 0o700, since cached code is executed.

``cache=False`` compiles from a source string registered in ``linecache`` instead, writing nothing.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.metadata
import importlib.util
import itertools
import linecache
import os
import sys
import tempfile
import types
from functools import cache as memoize
from pathlib import Path

import llvmlite.binding as llvm
import numba

from jitgraph import config

_counter = itertools.count()
STATS = {"modules_written": 0, "modules_loaded": 0, "compiled": 0, "cache_hits": 0}


def cache_dir() -> Path:
    root = config.env("JITGRAPH_CACHE_DIR")
    if root:
        return Path(root)
    base = config.env("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jitgraph"


def _jitgraph_version() -> str:
    """The installed jitgraph's version (read from its metadata: this module sits below the package's top)."""
    try:
        return importlib.metadata.version("jitgraph")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


@memoize
def _environment_fingerprint() -> str:
    """Everything besides the kernel text that the compiled code depends on."""
    here = Path(__file__).parent
    parts = [_jitgraph_version(), numba.__version__, sys.version, llvm.get_host_cpu_name(),
             llvm.get_host_cpu_features().flatten()]
    # The modules generated kernels import (their helpers are compiled into the cached code): every one of them.
    imported = [here / "helpers.py", *sorted(here.glob("mathlib*.py")), here.parent / "scalar_semantics.py",
                here.parent / "cuda" / "device_fns.py"]
    for path in imported:
        if path.exists():
            parts.append(hashlib.sha256(path.read_bytes()).hexdigest())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def kernel_key(source: str) -> str:
    return hashlib.sha256((_environment_fingerprint() + "\n" + source).encode()).hexdigest()[:24]


def _ensure_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


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


def load_module(name: str, source: str, use_cache: bool) -> types.ModuleType:
    """Import the kernel module for ``source``: from the cache directory, or from memory when ``use_cache`` is
    False. ``name`` is only for readability (it appears in tracebacks)."""
    if not use_cache:
        filename = f"<jitgraph kernel {name} #{next(_counter)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        module = types.ModuleType(f"jitgraph_kernel_{name}")
        module.__file__ = filename
        exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - our own generated source
        return module
    key = kernel_key(source)
    directory = cache_dir() / "kernels"
    _ensure_dir(directory)
    path = directory / f"{name}_{key}.py"
    try:
        existing = path.read_text()
    except (FileNotFoundError, UnicodeDecodeError):
        existing = None
    if existing != source:
        if existing is not None:
            drop_numba_cache(path)  # the module was corrupt: Numba's files for it are suspect too
        _atomic_write(path, source)
        STATS["modules_written"] += 1
    else:
        STATS["modules_loaded"] += 1
    # Numba's cached code refers back to its module by name, so the module must be in sys.modules under a
    # stable, importable name.
    modname = f"jitgraph_kernel_{path.stem}"
    if modname in sys.modules:
        return sys.modules[modname]
    spec = importlib.util.spec_from_file_location(modname, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[modname]
        raise
    linecache.checkcache(str(path))
    return module


def record_dispatch(dispatcher: object) -> None:
    """Count whether a kernel's first call compiled or came from Numba's disk cache."""
    stats = getattr(dispatcher, "stats", None)
    if stats is None:
        return
    hits = sum(stats.cache_hits.values())
    misses = sum(stats.cache_misses.values())
    STATS["cache_hits"] += hits
    STATS["compiled"] += max(misses, 0) if hits == 0 else 0
