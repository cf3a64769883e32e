"""Where the kernel cache lives, and whether it may be trusted.

Cached kernels are executed, and Numba's index beside them is a pickle, which runs code when it is loaded. So
whoever can write into the cache directory can run code in every process that uses it. The directory is
therefore made safe by construction, and refused when it is not:

* every level jitgraph creates (the cache root and its parents, ``kernels/``, ``kernels/__pycache__``) is
  created 0700, whatever the umask (``chmod`` after ``mkdir``: ``mkdir``'s mode is masked by the umask, and
  Numba creates ``__pycache__`` with a plain ``os.makedirs``, so jitgraph creates it first);
* the levels jitgraph uses (the root, ``kernels/``, ``kernels/__pycache__``) must each be a real directory (not a
  symlink), owned by the effective user, and neither group- nor world-writable;
* the directories above the root must be owned by the effective user or root, symlinks among them too, and not
  be world-writable unless sticky (as ``/tmp``): otherwise someone else could swap the root for their own.

A refused directory is not an error: kernels are compiled in memory instead (no disk cache), and a warning says
once per directory why. Nothing in it is read, imported or unpickled.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import threading
import warnings
from pathlib import Path

from jitgraph import config
from jitgraph.errors import BackendError

_log = logging.getLogger("jitgraph.kernels")
_warned: set[str] = set()
_warn_lock = threading.Lock()
LEVELS = ("kernels", "kernels/__pycache__")  # below the root, the levels jitgraph (and Numba) write into


class CacheRefused(BackendError):
    """The cache directory failed a safety check; the caller compiles in memory instead."""


class CacheWarning(UserWarning):
    """The kernel cache directory is not used (the message says why); kernels are compiled in memory."""


def cache_dir() -> Path:
    """The cache root: ``$JITGRAPH_CACHE_DIR``, else ``$XDG_CACHE_HOME/jitgraph``, else ``~/.cache/jitgraph``."""
    root = config.env("JITGRAPH_CACHE_DIR")
    if root:
        return Path(os.path.abspath(root))
    base = config.env("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.path.abspath(base)) / "jitgraph"


def _make_private(path: Path) -> None:
    """Create ``path`` and every missing parent with mode 0700 (independent of the umask)."""
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for p in reversed(missing):
        try:
            os.mkdir(p, 0o700)
        except FileExistsError:  # another process or thread made it: it is checked like any existing level
            continue
        os.chmod(p, 0o700)


def _level_problem(path: Path) -> str | None:
    """Why a level jitgraph writes into may not be trusted, or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{path} does not exist"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symlink"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.geteuid():
        return f"{path} is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by {'others' if st.st_mode & stat.S_IWOTH else 'its group'} " \
               f"(mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _ancestor_problem(root: Path) -> str | None:
    """Why the directories above the root let someone else replace it, or None."""
    trusted = {os.geteuid(), 0}
    for p in reversed(root.parents):
        try:
            st = os.lstat(p)
        except FileNotFoundError:  # created by jitgraph, 0700
            break
        if st.st_uid not in trusted:
            return f"{p}, above the cache directory, is owned by uid {st.st_uid}"
        if stat.S_ISLNK(st.st_mode):
            st = os.stat(p)
            if st.st_uid not in trusted:
                return f"{p}, above the cache directory, is a symlink to a directory owned by uid {st.st_uid}"
        if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
            return f"{p}, above the cache directory, is world-writable without the sticky bit"
    return None


def problem(root: Path) -> str | None:
    """Why the cache under ``root`` may not be used, or None (creating the missing levels, 0700, first)."""
    try:
        why = _ancestor_problem(root)
        if why is None:
            _make_private(root)
            why = _level_problem(root)
        for level in LEVELS:
            if why is not None:
                break
            _make_private(root / level)
            why = _level_problem(root / level)
    except OSError as exc:
        why = f"{exc.strerror or exc}: {exc.filename or root}"
    return why


def kernels_dir() -> Path:
    """The checked ``kernels/`` directory of the cache; raises CacheRefused (after warning once) otherwise."""
    root = cache_dir()
    why = problem(root)
    if why is None:
        return root / "kernels"
    _warn_once(root, why)
    raise CacheRefused(f"kernel cache directory {root} refused: {why}", hint=HINT)


HINT = ("use a directory owned by you with mode 0700 and no symlink in it (set JITGRAPH_CACHE_DIR), or let "
        "jitgraph create one; until then kernels are compiled in memory")


def _warn_once(root: Path, why: str) -> None:
    with _warn_lock:
        if str(root) in _warned:
            return
        _warned.add(str(root))
    message = f"jitgraph: not using the kernel cache {root}: {why}; {HINT}."
    _log.warning(message)
    warnings.warn(message, CacheWarning, stacklevel=4)


def clear(root: Path) -> tuple[int, int, int]:
    """Delete ``root/kernels``: returns (kernel modules, files, bytes) removed. Raises CacheRefused, deleting
    nothing, when ``kernels/`` is a symlink or not this user's (``rmtree`` would follow into someone else's
    files, or fail half-way)."""
    kernels = root / "kernels"
    if not os.path.lexists(kernels):
        return 0, 0, 0
    why = _level_problem(kernels)
    if why is not None and "writable" not in why:  # a too-open directory of ours may still be emptied
        raise CacheRefused(f"not clearing {kernels}: {why}",
                           hint="remove it by hand if it is yours, or point JITGRAPH_CACHE_DIR elsewhere")
    files = [p for p in kernels.rglob("*") if p.is_file() and not p.is_symlink()]
    modules = [p for p in files if p.suffix == ".py" and p.parent == kernels]
    size = sum(p.stat().st_size for p in files)
    shutil.rmtree(kernels)
    return len(modules), len(files), size
