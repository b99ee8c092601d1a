"""What the rocBLAS runner passes to rocblas_gemm_strided_batched_ex per gemm type: the
rocblas_datatype of A, B, C, D and the compute type (f32_c / f64_c for the complex gemms), and
alpha / beta in the compute type (a (real, imaginary) pair for complex). The library is a
stand-in recording the arguments; no GPU is needed."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest

from hlort.codegen.gpu.program import GemmSpec, LibraryCall
from hlort.errors import HlortError
from hlort.plugin.base.gpu_allocator import DeviceBlock
from hlort_rocm.rocblas_gemm import ITEM_BYTES, RocblasGemm


class RecordingRocblas:
    def __init__(self):
        self.calls: list[tuple] = []

    def rocblas_create_handle(self, ref):
        ctypes.cast(ctypes.addressof(ref._obj), ctypes.POINTER(ctypes.c_void_p))[0] = 9
        return 0

    def rocblas_set_stream(self, handle, stream):
        return 0

    def rocblas_gemm_strided_batched_ex(self, *args):
        self.calls.append(args)
        return 0


def _run(spec: GemmSpec) -> tuple:
    lib = RecordingRocblas()
    runner = RocblasGemm(lib, lambda ordinal: None)
    device = SimpleNamespace(id=0, ordinal=0, stream=SimpleNamespace(raw=5))
    sizes = (spec.m * spec.k, spec.k * spec.n, spec.m * spec.n)
    item = ITEM_BYTES[spec.dtype_a]
    blocks = [
        DeviceBlock(0x1000 * (i + 1), n * spec.batch * item, 0, 0) for i, n in enumerate(sizes)
    ]
    runner(device, LibraryCall("gemm", (0, 1, 2), spec, "dot"), blocks)
    (args,) = lib.calls
    return args


def _scalar(ref) -> list[float]:
    obj = ref._obj
    return list(obj) if isinstance(obj, ctypes.Array) else [obj.value]


@pytest.mark.parametrize(
    "dtype,code,pair",
    [("f32", 151, False), ("f64", 152, False), ("c64", 154, True), ("c128", 155, True)],
)
def test_types_and_scalars(dtype, code, pair):
    args = _run(GemmSpec(3, 4, 5, 2, dtype, dtype, dtype, compute_dtype=dtype))
    # handle, trans x2, m, n, k, alpha, B, Btype, ldb, strideB, A, Atype, lda, strideA, beta,
    # C, Ctype, ldc, strideC, D, Dtype, ldd, strideD, batch, compute, algo, index, flags
    types = [args[i].value for i in (8, 12, 17, 21, 25)]
    assert types == [code] * 5
    assert _scalar(args[6]) == ([1.0, 0.0] if pair else [1.0])
    assert _scalar(args[15]) == ([0.0, 0.0] if pair else [0.0])
    part = ctypes.c_double if dtype in ("f64", "c128") else ctypes.c_float
    assert ctypes.sizeof(args[6]._obj) == ctypes.sizeof(part) * (2 if pair else 1)


def test_a_complex_gemm_needs_complex_sized_buffers():
    spec = GemmSpec(3, 4, 5, 1, "c128", "c128", "c128", compute_dtype="c128")
    small = [DeviceBlock(0x1000, 3 * 5 * 8, 0, 0)] * 3  # f64-sized: half of what c128 needs
    runner = RocblasGemm(RecordingRocblas(), lambda ordinal: None)
    device = SimpleNamespace(id=0, ordinal=0, stream=SimpleNamespace(raw=5))
    with pytest.raises(HlortError, match="needs"):
        runner(device, LibraryCall("gemm", (0, 1, 2), spec, "dot"), small)
