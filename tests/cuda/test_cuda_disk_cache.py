"""The CUDA kernels' disk cache: a kernel module file in the cache directory, compiled with cuda.jit(cache=True).

On a real GPU the second process loads the machine code Numba stored beside the file (checked by
``scripts/gpu_check.py`` runs on a GPU machine); here the module the cache writes is checked: it imports on its own,
binds the device functions, and its kernel computes the right thing in the simulator.
"""

from __future__ import annotations

import numpy as np

SOURCE = '''@cuda.jit(device=True)
def relu_twice_point(x):
    return jg_maximum(x, np.float32(0.0)) * np.float32(2.0)


def relu_twice(o, a, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        o[i] = relu_twice_point(a[i])
'''


def test_kernel_module_is_written_to_the_cache_and_runs(tmp_path, monkeypatch):
    from jitgraph.backends.cuda import compiler  # imports numba.cuda: only once conftest.py chose the simulator

    monkeypatch.setenv("JITGRAPH_CACHE_DIR", str(tmp_path))
    kernel = compiler._from_cache_file("relu_twice", SOURCE)
    assert kernel is not None
    (path,) = (tmp_path / "kernels").glob("cuda_relu_twice_*.py")
    text = path.read_text()
    assert "relu_twice = cuda.jit(cache=True)(relu_twice)" in text and SOURCE in text
    a = np.array([-1.0, 0.5, np.nan, 3.0, -0.0], np.float32)
    out = np.empty_like(a)
    kernel[1, 8](out, a, a.size)
    np.testing.assert_array_equal(out, np.maximum(a, 0) * 2)


def test_an_unusable_cache_directory_falls_back_to_memory(tmp_path, monkeypatch):
    from jitgraph.backends.cuda import compiler

    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("JITGRAPH_CACHE_DIR", str(blocked))
    assert compiler._from_cache_file("relu_twice", SOURCE) is None
    kernel = compiler.kernel_from_source("relu_twice", SOURCE, disk_cache=True)
    out = np.empty(3, np.float32)
    kernel[1, 4](out, np.array([1.0, -2.0, 0.25], np.float32), 3)
    np.testing.assert_array_equal(out, [2.0, 0.0, 0.5])


def test_cache_option_reaches_every_kernel_plan():
    from jitgraph.backends.cuda.backend import compile_graph
    from jitgraph.ir import GraphBuilder, TensorType
    from jitgraph.passes import run_pipeline

    b = GraphBuilder()
    x = b.input(TensorType((8,), np.dtype(np.float32)), "x")
    graph, _ = run_pipeline(b.build([b.op("exp", b.op("negative", x))]), {"passes": ("fuse", "plan_memory")})
    for cache in (True, False):
        compiled = compile_graph(graph, {"cache": cache})
        assert compiled.plans and all(plan.disk_cache is cache for plan in compiled.plans.values())
        (out,) = compiled([np.arange(8, dtype=np.float32)])
        np.testing.assert_allclose(np.asarray(out.copy_to_host() if hasattr(out, "copy_to_host") else out),
                                   np.exp(-np.arange(8, dtype=np.float32)), rtol=1e-6)
