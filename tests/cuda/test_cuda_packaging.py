"""Packaging and environment: lazy registration, missing numba-cuda, no GPU, and the GPU check script.

Each case runs in a fresh interpreter, because whether numba.cuda simulates is fixed when it is first imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, *, sim: bool, timeout: float = 120,
            args: list[str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, *(args or ["-c", code])]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False)


def test_import_registers_cuda_without_importing_numba_cuda() -> None:
    out = _python("import sys, jitgraph\nfrom jitgraph.backends.base import _BACKENDS\n"
                  "print('cuda' in _BACKENDS, 'numba.cuda' in sys.modules)", sim=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]


def test_without_gpu_or_simulator_backend_cuda_raises_a_clear_error() -> None:
    code = ("from jitgraph.backends.base import get_backend\nfrom jitgraph.errors import BackendError\n"
            "try:\n    get_backend('cuda')\n    print('COMPILED')\n"
            "except BackendError as e:\n    print('ERROR', e)")
    out = _python(code, sim=False)
    assert out.returncode == 0, out.stderr
    if os.environ.get("JITGRAPH_CUDA_TESTS") == "device":
        assert out.stdout.startswith("COMPILED")
    else:
        assert out.stdout.startswith("ERROR backend='cuda'"), out.stdout
        assert "no CUDA GPU" in out.stdout or "driver" in out.stdout
        assert "NUMBA_ENABLE_CUDASIM=1" in out.stdout and "backend='cpu'" in out.stdout


def test_missing_numba_cuda_asks_for_the_extra() -> None:
    code = ("import sys\nsys.modules['numba.cuda'] = None\n"
            "from jitgraph.backends.base import get_backend\nfrom jitgraph.errors import BackendError\n"
            "try:\n    get_backend('cuda')\nexcept BackendError as e:\n    print('ERROR', e)")
    out = _python(code, sim=True)
    assert out.returncode == 0, out.stderr
    assert "needs numba-cuda" in out.stdout and "pip install 'jitgraph[cuda]'" in out.stdout


def test_gpu_check_script_runs_in_the_simulator() -> None:
    out = _python("", sim=True, timeout=300, args=["scripts/gpu_check.py", "--sim", "--skip-workloads"])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "kernel families all agree" in out.stdout
    assert out.stdout.count(" ok   ") == 11
