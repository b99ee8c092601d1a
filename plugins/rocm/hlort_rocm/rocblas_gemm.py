"""Dots on rocBLAS: a GpuProgram's ``gemm`` library calls as ``rocblas_gemm_strided_batched_ex``.

rocBLAS (``librocblas.so``, from ROCm; on gfx942 it dispatches many shapes to hipBLASLt itself)
is loaded through ctypes on first use, never at import. rocBLAS is column-major and a GemmSpec is
row-major: a row-major ``C = op(A) @ op(B)`` is the column-major ``C^T = op(B)^T @ op(A)^T``, so
the call swaps the operands (and m with n) and passes each matrix's row length as its leading
dimension. One handle per device, bound to the device's stream, so the gemm runs in stream order
with the kernels around it. c64 / c128 gemms pass the f32_c / f64_c types and complex scalars
(hlort.plugin.base.gemm_scalars); the transposes are plain, never conjugating. Without rocBLAS
the device client compiles every dot to hlort's tiled dot kernel instead (client.py), so no dot
falls back to the host for want of it.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Sequence
from functools import cache

from hlort.codegen.gpu.program import GemmSpec, LibraryCall
from hlort.errors import Internal, InvalidArgument
from hlort.plugin.base.gemm_scalars import gemm_scalars
from hlort.plugin.base.gpu_allocator import DeviceBlock
from hlort.plugin.base.gpu_device import GpuDevice

ROCBLAS_LIBRARY = "librocblas.so"
OPERATION_NONE, OPERATION_TRANSPOSE = 111, 112  # rocblas_operation
# rocblas_datatype_*_r, and f32_c / f64_c for the complex gemms
DATATYPE = {"f16": 150, "f32": 151, "f64": 152, "bf16": 168, "c64": 154, "c128": 155}
ITEM_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16}
ALGO_STANDARD = 0
_STATUS_SUCCESS = 0


@cache
def load_rocblas() -> ctypes.CDLL | None:
    """rocBLAS when it loads here (by soname, then under $ROCM_PATH), else None."""
    rocm = os.environ.get("ROCM_PATH", "/opt/rocm")
    for name in (ROCBLAS_LIBRARY, f"{rocm}/lib/{ROCBLAS_LIBRARY}"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def column_major_arguments(spec: GemmSpec) -> dict[str, int]:
    """The rocBLAS (column-major) operations, sizes, leading dimensions and strides of a
    row-major GemmSpec: operands swapped, ``m``/``n`` swapped."""
    return {
        "trans_first": OPERATION_TRANSPOSE if spec.transpose_b else OPERATION_NONE,
        "trans_second": OPERATION_TRANSPOSE if spec.transpose_a else OPERATION_NONE,
        "m": spec.n,
        "n": spec.m,
        "k": spec.k,
        "ld_first": spec.k if spec.transpose_b else spec.n,  # B's row length
        "ld_second": spec.m if spec.transpose_a else spec.k,  # A's row length
        "ld_out": spec.n,
        "stride_first": spec.k * spec.n,
        "stride_second": spec.m * spec.k,
        "stride_out": spec.m * spec.n,
    }


class RocblasGemm:
    """The client's library runner: one rocBLAS handle per device, on that device's stream."""

    def __init__(self, library: ctypes.CDLL, select_device):
        self._lib = library
        self._select = select_device  # HipDriver.select(ordinal): HIP's per-thread device
        self._handles: dict[int, ctypes.c_void_p] = {}
        self._lock = threading.Lock()

    def _handle(self, device: GpuDevice) -> ctypes.c_void_p:
        with self._lock:
            handle = self._handles.get(device.id)
            if handle is None:
                self._select(device.ordinal)
                handle = ctypes.c_void_p()
                self._check(self._lib.rocblas_create_handle(ctypes.byref(handle)), "create_handle")
                stream = ctypes.c_void_p(int(device.stream.raw))
                self._check(self._lib.rocblas_set_stream(handle, stream), "set_stream")
                self._handles[device.id] = handle
            return handle

    def __call__(self, device: GpuDevice, call: LibraryCall, blocks: Sequence[DeviceBlock]):
        spec = call.gemm
        if call.routine != "gemm" or spec is None or len(blocks) != 3:
            raise InvalidArgument(f"rocBLAS runs gemm calls of three buffers, not {call}")
        for dtype in (spec.dtype_a, spec.dtype_b, spec.dtype_c, spec.compute_dtype):
            if dtype not in DATATYPE:
                raise InvalidArgument(f"{call.label}: rocBLAS gemm has no {dtype} variant")
        a, b, c = blocks
        need = {
            "a": (a, spec.batch * spec.m * spec.k * ITEM_BYTES[spec.dtype_a]),
            "b": (b, spec.batch * spec.k * spec.n * ITEM_BYTES[spec.dtype_b]),
            "c": (c, spec.batch * spec.m * spec.n * ITEM_BYTES[spec.dtype_c]),
        }
        for name, (block, nbytes) in need.items():
            if block.nbytes < nbytes:
                raise InvalidArgument(
                    f"{call.label}: gemm operand {name} needs {nbytes} bytes, "
                    f"its buffer has {block.nbytes}"
                )
        alpha, beta = gemm_scalars(spec)
        cm = column_major_arguments(spec)
        pointer, i32, i64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
        handle = self._handle(device)
        self._select(device.ordinal)
        status = self._lib.rocblas_gemm_strided_batched_ex(
            handle,
            i32(cm["trans_first"]),
            i32(cm["trans_second"]),
            i32(cm["m"]),
            i32(cm["n"]),
            i32(cm["k"]),
            ctypes.byref(alpha),
            pointer(b.pointer),
            i32(DATATYPE[spec.dtype_b]),
            i32(cm["ld_first"]),
            i64(cm["stride_first"]),
            pointer(a.pointer),
            i32(DATATYPE[spec.dtype_a]),
            i32(cm["ld_second"]),
            i64(cm["stride_second"]),
            ctypes.byref(beta),
            pointer(c.pointer),
            i32(DATATYPE[spec.dtype_c]),
            i32(cm["ld_out"]),
            i64(cm["stride_out"]),
            pointer(c.pointer),
            i32(DATATYPE[spec.dtype_c]),
            i32(cm["ld_out"]),
            i64(cm["stride_out"]),
            i32(spec.batch),
            i32(DATATYPE[spec.compute_dtype]),
            i32(ALGO_STANDARD),
            i32(0),
            ctypes.c_uint32(0),
        )
        self._check(status, f"gemm_strided_batched_ex for {call.label}")

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status != _STATUS_SUCCESS:
            raise Internal(f"rocblas_{what} failed with rocblas_status {status}")

    def close(self) -> None:
        with self._lock:
            handles, self._handles = self._handles, {}
        for handle in handles.values():
            self._lib.rocblas_destroy_handle(handle)
