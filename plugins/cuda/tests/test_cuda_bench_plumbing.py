"""benchmarks/cuda_bench.py end to end on the fake driver: every module it times compiles with
the real CUDA compiler and goes through the runtime, events and the cuBLAS call path. The
kernels do nothing and the times are the fake's, so no number here means anything: this checks
that the prepared GPU script runs, not how fast anything is."""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

from hlort.runtime.client import Backend

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def load_bench():
    path = os.path.join(ROOT, "benchmarks", "cuda_bench.py")
    spec = importlib.util.spec_from_file_location("cuda_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_benchmark_runs_every_case_through_the_runtime(monkeypatch, tmp_path, capsys):
    from fake_gpu_client import FakeGpuClient

    import hlort
    from hlort_cuda.client import CudaCompiler

    class Client(CudaCompiler, FakeGpuClient):
        def gemm_library(self) -> bool:
            return True  # the fake client's library runner stands in for cuBLAS

    client = Client(None, {"memory": 256 << 20})
    client.driver.any_kernel = lambda driver, module, args: None
    backend = Backend(client)
    monkeypatch.setattr(hlort, "backend", lambda name=None: backend)
    bench = load_bench()
    out = tmp_path / "bench.json"
    assert bench.main(["--quick", "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    assert set(results) == {
        "copy_bandwidth_gb_s",
        "elementwise x+y*z 2^20",
        "reduce_sum(x+y*z) 2^20",
        "softmax [256,1024]",
        "layernorm [256,1024]",
        "matmul_f32_cublas_over_hlort",
        "matmul_bf16_cublas_over_hlort",
        "softmax_relu_matmul_over_matmul",
    }
    printed = capsys.readouterr().out
    assert "goal >= 0.85" in printed and "goal <= 1.15" in printed
    launched = {c[1] for c in client.driver.calls if c[0] == "launch"}
    assert launched  # the fused kernels were launched (as recorded calls)
    client.close()


@pytest.mark.parametrize(
    "name", ["elementwise", "reduce_sum", "softmax", "layernorm", "attention_like"]
)
def test_benchmark_modules_mean_what_they_say(name):
    """Each module, small, on the reference interpreter against NumPy."""
    from hlort.interpreter.evaluator import evaluate
    from hlort.text import parse_module

    bench = load_bench()
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(16, dtype=np.float32) for _ in range(3))
    m = rng.standard_normal((4, 8), dtype=np.float32)
    if name == "elementwise":
        got, want = evaluate(parse_module(bench.elementwise(16)), [x, y, z]), x + y * z
    elif name == "reduce_sum":
        got, want = evaluate(parse_module(bench.reduce_sum(16)), [x, y, z]), np.sum(x + y * z)
    elif name == "softmax":
        e = np.exp(m - m.max(1, keepdims=True))
        got, want = evaluate(parse_module(bench.softmax(4, 8)), [m]), e / e.sum(1, keepdims=True)
    elif name == "layernorm":
        c = m - m.mean(1, keepdims=True)
        want = c / np.sqrt((c * c).mean(1, keepdims=True) + 1e-5)
        got = evaluate(parse_module(bench.layernorm(4, 8)), [m])
    else:
        a, b, bias = (rng.standard_normal(s, dtype=np.float32) for s in ((8, 8), (8, 8), (8,)))
        r = np.maximum(a @ b + bias, 0)
        e = np.exp(r - r.max(1, keepdims=True))
        want = e / e.sum(1, keepdims=True)
        got = evaluate(parse_module(bench.attention_like(8)), [a, b, bias])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
