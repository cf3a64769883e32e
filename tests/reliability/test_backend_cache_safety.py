"""Issue 17, item 9: the disk cache trusts nothing it did not check.

Cached kernels are executed and Numba's index is a pickle, so a cache directory someone else can write is a way
to run code in every process that uses it. Each case runs a fresh process (cold ``sys.modules``, the warning not
yet given) with a timeout: every level jitgraph creates is 0700 even under umask 000; a root, ``kernels/`` or
``__pycache__`` that is world-writable, owned by another user (``os.chown``; the tests run as root) or a symlink
is refused (one warning, kernels compiled in memory, nothing in it read: a planted index would run code when
unpickled); a planted unchecked-hash ``.pyc`` is never imported instead of the source; ``cache clear`` on a
symlinked ``kernels/`` refuses with a message instead of a traceback."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import py_compile
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jitgraph.backends.cuda import compiler

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 240
FOREIGN_UID = 12345

SCRIPT = """
import json, os, sys, warnings
os.umask(int(sys.argv[1], 8))
import numpy as np
import jitgraph
from jitgraph.backends.cpu import cache

def f(x):
    return x * 2.5 + 1.0

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    g = jitgraph.compile(f)
    x = np.arange(8.0)
    out = [g(x).tolist(), g(x + 1.0).tolist()]
    h = jitgraph.compile(lambda y: y * 2.5 + 1.0)   # the same kernel from another function: warned once only
    h(x)
print(json.dumps({"out": out, "stats": cache.STATS,
                  "warnings": [str(w.message) for w in caught if "kernel cache" in str(w.message)]}))
"""


def run(cache: Path, umask: int = 0o022) -> dict[str, Any]:
    env = dict(os.environ, JITGRAPH_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), JITGRAPH_STRICT="1")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, oct(umask)[2:]], env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    x = [float(k) for k in range(8)]
    assert result["out"] == [[v * 2.5 + 1.0 for v in x], [(v + 1.0) * 2.5 + 1.0 for v in x]]
    return result


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def refused(result: dict[str, Any]) -> str:
    """The one warning of a refused cache; nothing was written to or loaded from it."""
    assert len(result["warnings"]) == 1, result["warnings"]
    assert result["stats"]["modules_written"] == 0 and result["stats"]["modules_loaded"] == 0, result["stats"]
    assert result["stats"]["cache_hits"] == 0
    return result["warnings"][0]


@pytest.fixture
def warm(tmp_path: Path) -> Path:
    """A cache filled by one process (the kernel module and Numba's index and code)."""
    cache = tmp_path / "cache"
    result = run(cache)
    assert result["stats"]["modules_written"] == 1 and not result["warnings"]
    assert list((cache / "kernels" / "__pycache__").glob("*.nbi"))
    return cache


def test_every_created_level_is_private_under_umask_000(tmp_path: Path) -> None:
    cache = tmp_path / "a" / "b" / "cache"
    result = run(cache, umask=0)
    assert result["stats"]["modules_written"] == 1 and not result["warnings"]
    for level in (tmp_path / "a", tmp_path / "a" / "b", cache, cache / "kernels", cache / "kernels" / "__pycache__"):
        assert mode(level) == 0o700, (level, oct(mode(level)))
    assert run(cache, umask=0)["stats"]["cache_hits"] >= 1  # and it is used


def test_world_writable_directory_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, 0o777)
    assert "writable by others" in refused(run(cache))
    assert not (cache / "kernels").exists() or not list((cache / "kernels").iterdir())


@pytest.mark.skipif(os.geteuid() != 0, reason="os.chown to another user needs root")
def test_foreign_owner_is_refused(warm: Path) -> None:
    os.chown(warm / "kernels", FOREIGN_UID, -1)
    assert f"uid {FOREIGN_UID}" in refused(run(warm))


def test_symlinked_root_and_kernels_are_refused(warm: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(warm)
    assert "symlink" in refused(run(link))
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    (other / "kernels").symlink_to(warm / "kernels")
    assert "symlink" in refused(run(other))


class Planted:
    """A pickle that runs code when loaded: what an attacker puts in Numba's index."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return exec, (f"open({str(self.marker)!r}, 'w').write('ran')",)


@pytest.mark.parametrize("attack", ["world-writable __pycache__", "foreign kernels/"])
def test_planted_numba_index_is_never_unpickled(warm: Path, tmp_path: Path, attack: str) -> None:
    marker = tmp_path / "planted-code-ran"
    pycache = warm / "kernels" / "__pycache__"
    for index in pycache.glob("*.nbi"):
        index.write_bytes(pickle.dumps(Planted(marker)))
    if attack == "world-writable __pycache__":
        os.chmod(pycache, 0o777)
    else:
        if os.geteuid() != 0:
            pytest.skip("os.chown to another user needs root")
        os.chown(warm / "kernels", FOREIGN_UID, -1)
    result = run(warm)
    assert not marker.exists(), "the planted index was unpickled"
    refused(result)


def test_planted_unchecked_pyc_is_not_imported(warm: Path, tmp_path: Path) -> None:
    (module,) = (warm / "kernels").glob("*.py")
    for f in (warm / "kernels" / "__pycache__").iterdir():
        f.unlink()  # no Numba code either: the kernel is compiled from whatever Python code gets executed
    evil = tmp_path / "evil.py"
    evil.write_text(module.read_text().replace("2.5", "3.5"))
    assert evil.read_text() != module.read_text()
    py_compile.compile(str(evil), cfile=importlib.util.cache_from_source(str(module)), dfile=str(module),
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH, doraise=True)
    result = run(warm)  # asserts x * 2.5 + 1, not x * 3.5 + 1
    assert not result["warnings"] and result["stats"]["modules_loaded"] >= 1


def test_cache_clear_refuses_a_symlinked_kernels_dir(tmp_path: Path) -> None:
    target = tmp_path / "someone-elses"
    (target / "sub").mkdir(parents=True)
    (target / "sub" / "keep.txt").write_text("keep")
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    (root / "kernels").symlink_to(target)
    env = dict(os.environ, JITGRAPH_CACHE_DIR=str(root), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "jitgraph", "cache", "clear"], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "symlink" in proc.stderr
    assert (target / "sub" / "keep.txt").read_text() == "keep"


def test_cache_clear_empties_a_private_cache(warm: Path) -> None:
    env = dict(os.environ, JITGRAPH_CACHE_DIR=str(warm), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "jitgraph", "cache", "clear"], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)
    assert proc.returncode == 0 and "removed 1 kernel modules" in proc.stdout, proc.stdout + proc.stderr
    assert not (warm / "kernels").exists()


def test_cuda_disk_cache_refuses_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA backend's disk cache goes through the same loader: a refused directory gives None (the caller
    compiles in memory) before anything in it is read or executed."""
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, 0o777)
    monkeypatch.setenv("JITGRAPH_CACHE_DIR", str(cache))
    with pytest.warns(UserWarning, match="kernel cache"):
        assert compiler._from_cache_file("k_refused", "def k_refused(a):\n    pass\n") is None
    assert not (cache / "kernels").exists()
    shutil.rmtree(cache)
