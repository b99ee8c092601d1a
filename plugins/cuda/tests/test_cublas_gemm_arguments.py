"""What the cuBLAS runner passes to cublasGemmEx / cublasGemmStridedBatchedEx for each gemm
type: the cudaDataType of the operands (CUDA_C_32F / CUDA_C_64F for the complex gemms), the
compute type, and alpha / beta in the call's scale type (a (real, imaginary) pair for complex,
where one float would leave cuBLAS reading the imaginary part from past the scalar). The
library is a stand-in recording the arguments; no GPU is needed."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest

from hlort.codegen.gpu.program import GemmSpec, LibraryCall
from hlort.errors import HlortError
from hlort.plugin.base.gemm_scalars import gemm_scalars
from hlort.plugin.base.gpu_allocator import DeviceBlock
from hlort_cuda.cublas import Cublas

ITEM = {"f32": 4, "f64": 8, "c64": 8, "c128": 16, "f16": 2}


class RecordingGemm:
    def __init__(self):
        self.calls: list[tuple[str, tuple]] = []
        self.cublasGemmEx = lambda *args: self.calls.append(("GemmEx", args)) or 0
        self.cublasGemmStridedBatchedEx = lambda *args: self.calls.append(("Batched", args)) or 0


def _run(spec: GemmSpec):
    lib = RecordingGemm()
    runner = Cublas(lib, "fake-libcublas")
    runner.handle = lambda device: ctypes.c_void_p(7)
    device = SimpleNamespace(ordinal=0, driver=SimpleNamespace(make_current=lambda ordinal: None))
    sizes = (spec.m * spec.k, spec.k * spec.n, spec.m * spec.n)
    blocks = [
        DeviceBlock(0x1000 * (i + 1), n * spec.batch * ITEM[spec.dtype_a], 0, 0)
        for i, n in enumerate(sizes)
    ]
    runner(device, LibraryCall("gemm", (0, 1, 2), spec, "dot"), blocks)
    ((name, args),) = lib.calls
    return name, args


def _scalar(ref) -> list[float]:
    obj = ref._obj
    return list(obj) if isinstance(obj, ctypes.Array) else [obj.value]


@pytest.mark.parametrize(
    "dtype,data,compute,pair",
    [("f32", 0, 68, False), ("f64", 1, 70, False), ("c64", 4, 68, True), ("c128", 5, 70, True)],
)
def test_gemm_ex_types_and_scalars(dtype, data, compute, pair):
    spec = GemmSpec(3, 4, 5, 1, dtype, dtype, dtype, compute_dtype=dtype)
    name, args = _run(spec)
    assert name == "GemmEx"
    # handle, op_b, op_a, n, m, k, alpha, B, Btype, ldb, A, Atype, lda, beta, C, Ctype, ldc, ...
    assert (args[8], args[11], args[15]) == (data, data, data)
    assert args[17] == compute
    assert _scalar(args[6]) == ([1.0, 0.0] if pair else [1.0])
    assert _scalar(args[13]) == ([0.0, 0.0] if pair else [0.0])
    part = ctypes.c_double if dtype in ("f64", "c128") else ctypes.c_float
    assert ctypes.sizeof(args[6]._obj) == ctypes.sizeof(part) * (2 if pair else 1)


def test_batched_complex_gemm_passes_complex_types_and_strides():
    spec = GemmSpec(3, 4, 5, 2, "c64", "c64", "c64", transpose_a=True, compute_dtype="c64")
    name, args = _run(spec)
    assert name == "Batched"
    assert (args[8], args[12], args[17]) == (4, 4, 4)  # CUDA_C_32F for B, A and C
    assert args[21] == 68 and _scalar(args[6]) == [1.0, 0.0]


def test_a_compute_type_no_library_has_is_refused_with_the_fix():
    with pytest.raises(HlortError, match="recompile"):
        gemm_scalars(GemmSpec(1, 1, 1, 1, "f32", "f32", "f32", compute_dtype="s32"))
