"""The CUDA backend's kernel sources reach ``explain`` and the Compiled stage through the backend protocol
(``kernel_sources()``), not through attribute names. Runs in a fresh process under Numba's CUDA simulator, which
must be chosen before numba.cuda is first imported."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
import numpy as np
import jitgraph
from jitgraph.inspect.collect import graph_views

def f(a, b):
    return np.tanh(a * b + 1.0)

a, b = np.ones(64, np.float32), np.full(64, 0.5, np.float32)
compiled = jitgraph.compile(f, backend="cuda").trace(a, b).lower().compile()
assert np.allclose(compiled(a, b), f(a, b))
assert "def fused_multiply_add_tanh_0(" in str(compiled)
result = jitgraph.explain(f, backend="cuda")(a, b)
(view,) = graph_views(result)
assert [k.title for k in view.kernels] == ["CUDA kernel fused_multiply_add_tanh_0"], view.kernels
assert "math.tanh" in view.kernels[0].source
print("ok")
"""


def test_cuda_kernel_sources_show_in_explain_and_the_compiled_stage():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
