"""The timing model against hand-computed expectations (modelled cycles, never wall time)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlort import shape
from hlort.builder import Builder
from hlort.ir import DotDimensionNumbers
from hlort_tpusim.program import Loop
from hlort_tpusim.transfer_matrix_executors import round_to_bf16

MM = DotDimensionNumbers((1,), (0,))


def _matmul(m, k, n, dtype="bf16", out="f32", precision=None):
    b = Builder("matmul")
    x = b.parameter(shape.array(dtype, [m, k]))
    y = b.parameter(shape.array(dtype, [k, n]))
    return b.build(b.dot_general(x, y, MM, precision=precision, preferred=out))


def test_1024_cubed_bf16_matmul_keeps_the_matrix_unit_over_90_percent_busy(run, make_client, rng):
    client = make_client()
    a = rng.standard_normal((1024, 1024)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((1024, 1024)).astype(ml_dtypes.bfloat16)
    (out,), exe = run(client, _matmul(1024, 1024, 1024), a, w)
    profile = exe.last_profile
    # 1024^3 MACs on a 128x128 array is 65536 cycles of pure matrix work
    assert profile.mxu_macs == 1024**3
    assert profile.mxu_busy_cycles >= 65536
    assert profile.mxu_utilization >= 0.90, profile.summary()
    assert profile.cycles < 65536 / 0.90
    ref = a.astype(np.float32) @ w.astype(np.float32)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-3)


def test_memory_bound_elementwise_fusion_runs_at_hbm_bandwidth(rng):
    b = Builder("axpy_exp")
    dims = [1024, 2048]
    x = b.parameter(shape.array("f32", dims))
    y = b.parameter(shape.array("f32", dims))
    module = b.build(b.add(b.multiply(b.exp(x), y), x))
    import hlort

    be = hlort.backend("tpusim")  # through the core pipeline: the three ops become one fusion
    exe = be.compile(module)
    assert "fusion" in exe.as_text()
    xs = rng.random(dims, dtype=np.float32)
    ys = rng.random(dims, dtype=np.float32)
    out = exe(xs, ys)
    np.testing.assert_allclose(out, np.exp(xs) * ys + xs, rtol=1e-6)
    profile = exe.raw.last_profile
    nbytes = 3 * xs.nbytes
    assert profile.hbm_bytes == nbytes
    ideal = nbytes / exe.raw.config.hbm_bandwidth
    assert abs(profile.seconds - ideal) <= 0.10 * ideal, (profile.seconds, ideal)


def _loop_counts(nodes) -> list[int]:
    out = []
    for node in nodes:
        if isinstance(node, Loop):
            out += [node.count] + _loop_counts(node.body)
    return out


def test_matmul_larger_than_vmem_is_tiled_and_correct(run, make_client, rng):
    vmem = 256 * 1024
    m, k, n = 384, 640, 300
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    w = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    assert a.nbytes + w.nbytes > vmem
    ref = round_to_bf16(a).astype(np.float64) @ round_to_bf16(w).astype(np.float64)
    for bulk in (True, False):  # False: every tile instruction runs on its data
        client = make_client(vmem_bytes=vmem, bulk_simulation=bulk)
        (out,), exe = run(client, _matmul(m, k, n, "f32"), a, w)
        (kernel,) = [k_ for k_ in exe.program.kernels() if k_.name == "dot"]
        loops = _loop_counts(kernel.body)
        assert np.prod(loops) > 1 and all(d.nbytes <= vmem for d in kernel.vmem)
        assert sum(d.nbytes for d in kernel.vmem) <= vmem
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)
        # the padded K and N edges cost matrix-unit cycles but add no MACs
        assert exe.last_profile.mxu_macs == m * k * n


def test_default_precision_rounds_to_bf16_and_highest_is_f32(run, make_client, rng):
    client = make_client()
    a = rng.uniform(-1, 1, (64, 256)).astype(np.float32)
    w = rng.uniform(-1, 1, (256, 32)).astype(np.float32)
    exact = a.astype(np.float64) @ w.astype(np.float64)
    (default,), exe_d = run(client, _matmul(64, 256, 32, "f32"), a, w)
    (highest,), exe_h = run(client, _matmul(64, 256, 32, "f32", precision=["HIGHEST"] * 2), a, w)
    bf16_ref = round_to_bf16(a).astype(np.float64) @ round_to_bf16(w).astype(np.float64)
    np.testing.assert_allclose(default, bf16_ref, rtol=1e-5, atol=1e-5)
    assert np.abs(default - exact).max() > 1e-3  # bf16 inputs are visibly less accurate
    np.testing.assert_allclose(highest, exact, rtol=1e-5, atol=1e-5)
    # HIGHEST is six bf16 passes through the matrix unit
    assert exe_h.last_profile.mxu_busy_cycles == 6 * exe_d.last_profile.mxu_busy_cycles


def test_dma_and_compute_overlap_in_a_double_buffered_kernel(run, make_client, rng):
    client = make_client()
    m = k = n = 512
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    _, exe = run(client, _matmul(m, k, n), a, w)
    p = exe.last_profile
    dma_busy = p.by_class["DMA"]["busy_cycles"]
    # serial execution would take the sum of DMA and MXU time; overlap hides part of it
    assert p.cycles < dma_busy + p.mxu_busy_cycles
