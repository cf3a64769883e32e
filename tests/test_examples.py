"""Every example script runs with ``--small`` (as a user would: a fresh process, the CPU backend) and prints its
agreement line only after its eager-vs-compiled checks passed.

The examples share one kernel cache directory, kept in pytest's cache folder between runs (or
``$JITGRAPH_CACHE_DIR`` when set), so kernels compiled by one run load from disk in the next: Numba compiles are
what dominate these runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
AGREE = "compiled results agree with eager NumPy"


@pytest.fixture(scope="session")
def kernel_cache(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> str:
    if os.environ.get("JITGRAPH_CACHE_DIR"):
        return os.environ["JITGRAPH_CACHE_DIR"]
    cache = getattr(pytestconfig, "cache", None)  # None under -p no:cacheprovider
    return str(cache.mkdir("jitgraph_kernels") if cache is not None else tmp_path_factory.mktemp("kernels"))


def test_all_five_examples_are_covered():
    assert EXAMPLES == ["adam.py", "dask_training.py", "logistic_regression.py", "mlp_autodiff.py", "mlp_training.py",
                        "physics_stencil.py", "transformer_block.py"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs_small_and_agrees(example: str, kernel_cache: str, tmp_path: Path) -> None:
    env = {**os.environ, "JITGRAPH_CACHE_DIR": kernel_cache, "COLUMNS": "120"}
    env.pop("PYTHONPATH", None)  # the scripts must find jitgraph from a checkout by themselves
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / example), "--small"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    assert proc.returncode == 0, f"{example} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    assert f"OK: {AGREE}" in proc.stdout
    assert "speedup" in proc.stdout and "compile (1st call)" in proc.stdout
    assert "jitgraph captured" in proc.stdout  # graphs, breaks and eager fallbacks are reported
