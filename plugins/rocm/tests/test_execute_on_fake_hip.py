"""Executing GpuPrograms through the HIP driver on the fake of hip-python: buffers, launches
with the slots' device pointers, host fallbacks whose data really moves through device memory,
and rocBLAS's column-major argument mapping checked numerically. Kernels cannot run without an
AMD GPU; these tests cover everything around them."""

import numpy as np
import pytest
from test_hip_driver import FakeRocmClient

from hlort.codegen.gpu.program import GemmSpec
from hlort.runtime.client import Backend
from hlort_rocm import RocmPlugin
from hlort_rocm.rocblas_gemm import OPERATION_TRANSPOSE, column_major_arguments

DOT = """
func.func @main(%a: tensor<5x7xf32>, %b: tensor<7x3xf32>) -> tensor<5x3xf32> {
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
      : (tensor<5x7xf32>, tensor<7x3xf32>) -> tensor<5x3xf32>
  return %d : tensor<5x3xf32>
}
"""
EXP = """
func.func @main(%a: tensor<1000xf32>) -> tensor<1000xf32> {
  %e = stablehlo.exponential %a : tensor<1000xf32>
  return %e : tensor<1000xf32>
}
"""


@pytest.fixture
def backend(llvm19_tools):
    client = FakeRocmClient(RocmPlugin())
    yield Backend(client, client.plugin)
    client.close()


SORT_BY_EXP = """
func.func @main(%a: tensor<5x16xf64>) -> tensor<5x16xf64> {
  %s = "stablehlo.sort"(%a) ({
  ^bb0(%x: tensor<f64>, %y: tensor<f64>):
    %ex = stablehlo.exponential %x : tensor<f64>
    %ey = stablehlo.exponential %y : tensor<f64>
    %c = stablehlo.compare LT, %ex, %ey : (tensor<f64>, tensor<f64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 1 : i64, is_stable = true} : (tensor<5x16xf64>) -> tensor<5x16xf64>
  return %s : tensor<5x16xf64>
}
"""


def test_a_host_fallback_moves_real_data_through_device_memory(backend, monkeypatch):
    """A sort whose comparator has a transcendental on f64 values (the compiled f64 exp could
    order neighbouring values differently from NumPy's: no GPU kernel) is a counted host
    fallback."""
    monkeypatch.setenv("HLORT_FALLBACK", "allow")
    exe = backend.compile(SORT_BY_EXP)
    assert [f.opcode for f in exe.raw.program.fallbacks] == ["sort"]
    a = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float64)
    np.testing.assert_array_equal(np.asarray(exe(a)), np.sort(a, axis=1))


def test_a_kernel_launch_gets_the_device_pointers_of_its_slots(backend):
    exe = backend.compile(EXP)
    hip = backend.client.driver._hip
    data = np.linspace(-1, 1, 1000, dtype=np.float32)
    arg = backend.client.buffer_from_host(data, backend.client.devices()[0])
    (out,) = exe.raw.execute([[arg]])[0]
    out.to_host().result(10)
    (kernel,) = exe.raw.program.kernels
    name, grid, block, shared, extra = hip.launches[-1]
    assert name == kernel.name and shared == 0 and block[0] % 64 == 0  # whole wavefronts
    assert [p.value for p in extra] == [arg.storage_now().pointer, out.storage_now().pointer]


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_rocblas_column_major_mapping_computes_the_row_major_gemm(transpose_a, transpose_b):
    m, n, k = 4, 3, 5
    rng = np.random.default_rng(1)
    a = rng.standard_normal((k, m) if transpose_a else (m, k))
    b = rng.standard_normal((n, k) if transpose_b else (k, n))
    spec = GemmSpec(m, n, k, 1, "f64", "f64", "f64", transpose_a, transpose_b)
    cm = column_major_arguments(spec)

    def column_major(flat, rows, cols, ld):  # what rocBLAS reads: element (i, j) at i + j * ld
        return np.array([[flat[i + j * ld] for j in range(cols)] for i in range(rows)])

    def op(matrix, trans):
        return matrix.T if trans == OPERATION_TRANSPOSE else matrix

    first_rows, first_cols = (
        (cm["k"], cm["m"]) if cm["trans_first"] == OPERATION_TRANSPOSE else (cm["m"], cm["k"])
    )
    second_rows, second_cols = (
        (cm["n"], cm["k"]) if cm["trans_second"] == OPERATION_TRANSPOSE else (cm["k"], cm["n"])
    )
    first = op(column_major(b.ravel(), first_rows, first_cols, cm["ld_first"]), cm["trans_first"])
    second = op(
        column_major(a.ravel(), second_rows, second_cols, cm["ld_second"]), cm["trans_second"]
    )
    c_column_major = first @ second  # m' x n' = n x m
    c = np.empty(m * n)
    for i in range(cm["m"]):
        for j in range(cm["n"]):
            c[i + j * cm["ld_out"]] = c_column_major[i, j]
    expected = (a.T if transpose_a else a) @ (b.T if transpose_b else b)
    np.testing.assert_allclose(c.reshape(m, n), expected, rtol=1e-12)
