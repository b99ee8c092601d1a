"""Dots through cuBLAS, as XLA does: ``gemm`` library calls of a GpuProgram run cublasGemmEx.

The library comes from NVIDIA's own wheel ``nvidia-cublas-cu12`` (``nvidia/cublas/lib``), or a
CUDA toolkit's ``libcublas.so.12`` on the loader's path, loaded with ctypes when the first
program is compiled (never at import or probe). Without it, the client compiles every dot to
hlort's own tiled dot kernel (hlort.codegen.gpu.dot_schedule) instead of gemm calls
(``cublas_available``), so nothing falls back to the host for want of cuBLAS.

The program's gemm is row-major: ``C = alpha * op(A) @ op(B) + beta * C``. cuBLAS is
column-major, and a row-major matrix read column-major is its transpose, so the call computes
``C^T = op(B)^T @ op(A)^T``: B and A swap places and each keeps its own transpose flag. f32 is
computed in full f32 (CUBLAS_COMPUTE_32F, no TF32), f16/bf16 accumulate in f32, f64 in f64;
c64 and c128 are cgemm / zgemm through the same calls (CUDA_C_32F / CUDA_C_64F data, the
32F / 64F compute types, complex alpha and beta: hlort.plugin.base.gemm_scalars). The transposes
are plain ones (never conjugating), as a dot's are.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import threading

from hlort.codegen.gpu.program import GemmSpec, LibraryCall
from hlort.errors import Internal, InvalidArgument, Unimplemented
from hlort.plugin.base.gemm_scalars import gemm_scalars
from hlort.plugin.base.gpu_allocator import DeviceBlock
from hlort.plugin.base.gpu_device import GpuDevice

CUBLAS_PACKAGE = "nvidia-cublas-cu12"
_DATA_TYPES = {"f32": 0, "f64": 1, "f16": 2, "bf16": 14, "c64": 4, "c128": 5}  # cudaDataType_t
# CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_64F (the complex gemms use them too)
_COMPUTE = {"f32": 68, "f64": 70, "c64": 68, "c128": 70}
_ITEM_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16}
_OP_N, _OP_T = 0, 1
_GEMM_DEFAULT = -1
_INT32_MAX = 2**31 - 1


def library_paths() -> list[str]:
    """Where libcublas may be: the NVIDIA wheel's lib directory first, then the loader path."""
    paths: list[str] = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    for root in (spec.submodule_search_locations or []) if spec else []:
        # nvidia-cublas-cu12: nvidia/cublas/lib; the CUDA 13 wheels: nvidia/cu13/lib
        paths += sorted(glob.glob(os.path.join(root, "*", "lib", "libcublas.so.*")))
    paths += ["libcublas.so.12", "libcublas.so.13"]
    paths += sorted(glob.glob("/usr/local/cuda*/lib64/libcublas.so.*"))
    return [p for p in dict.fromkeys(paths) if "Lt" not in os.path.basename(p)]


class Cublas:
    """A client's library runner over the loaded library: one handle per device, bound to that
    device's stream (created on the device's queue thread). A handle is the client's own: a
    later client's device with the same id has another stream, so it gets another handle;
    ``close`` destroys them when the client closes."""

    def __init__(self, lib: ctypes.CDLL, path: str):
        self.lib = lib
        self.path = path
        self._handles: dict[GpuDevice, ctypes.c_void_p] = {}
        self._lock = threading.Lock()
        self.lib.cublasGemmEx.restype = ctypes.c_int
        self.lib.cublasGemmStridedBatchedEx.restype = ctypes.c_int

    def _check(self, status: int, call: str) -> None:
        if status != 0:
            raise Internal(f"{call} failed with cuBLAS status {status} (library {self.path})")

    def handle(self, device: GpuDevice) -> ctypes.c_void_p:
        with self._lock:
            handle = self._handles.get(device)
            if handle is None:
                device.driver.make_current(device.ordinal)
                handle = ctypes.c_void_p()
                self._check(self.lib.cublasCreate_v2(ctypes.byref(handle)), "cublasCreate")
                stream = ctypes.c_void_p(device.driver.native_stream(device.stream))
                self._check(self.lib.cublasSetStream_v2(handle, stream), "cublasSetStream")
                self._handles[device] = handle
            return handle

    def close(self) -> None:
        """Destroy the handles (the client's work queues have drained); idempotent."""
        with self._lock:
            handles, self._handles = self._handles, {}
        for device, handle in handles.items():
            device.driver.make_current(device.ordinal)
            self.lib.cublasDestroy_v2(handle)

    def __call__(self, device: GpuDevice, call: LibraryCall, blocks: list[DeviceBlock]) -> None:
        """Enqueue one gemm on the device's stream (the runtime's LibraryRunner)."""
        if call.routine != "gemm" or call.gemm is None:
            raise Unimplemented(f"cuBLAS runs gemm calls, not {call.routine!r}")
        spec = call.gemm
        a, b, c = blocks
        check_gemm(spec, a.nbytes, b.nbytes, c.nbytes)
        device.driver.make_current(device.ordinal)
        handle = self.handle(device)
        compute = _COMPUTE[spec.compute_dtype]
        alpha, beta = gemm_scalars(spec)
        op_a, lda = (_OP_T, spec.m) if spec.transpose_a else (_OP_N, spec.k)
        op_b, ldb = (_OP_T, spec.k) if spec.transpose_b else (_OP_N, spec.n)
        types = [_DATA_TYPES[spec.dtype_b], _DATA_TYPES[spec.dtype_a], _DATA_TYPES[spec.dtype_c]]
        ptr = ctypes.c_void_p
        common = [handle, op_b, op_a, spec.n, spec.m, spec.k, ctypes.byref(alpha)]
        if spec.batch == 1:
            status = self.lib.cublasGemmEx(
                *common,
                ptr(b.pointer),
                types[0],
                ldb,
                ptr(a.pointer),
                types[1],
                lda,
                ctypes.byref(beta),
                ptr(c.pointer),
                types[2],
                spec.n,
                compute,
                _GEMM_DEFAULT,
            )
            self._check(status, "cublasGemmEx")
            return
        ll = ctypes.c_longlong
        status = self.lib.cublasGemmStridedBatchedEx(
            *common,
            ptr(b.pointer),
            types[0],
            ldb,
            ll(spec.k * spec.n),
            ptr(a.pointer),
            types[1],
            lda,
            ll(spec.m * spec.k),
            ctypes.byref(beta),
            ptr(c.pointer),
            types[2],
            spec.n,
            ll(spec.m * spec.n),
            spec.batch,
            compute,
            _GEMM_DEFAULT,
        )
        self._check(status, "cublasGemmStridedBatchedEx")


def check_gemm(spec: GemmSpec, a_bytes: int, b_bytes: int, c_bytes: int) -> None:
    """INVALID_ARGUMENT when a gemm's sizes do not fit cuBLAS's ints or its slots."""
    for name in ("dtype_a", "dtype_b", "dtype_c"):
        if getattr(spec, name) not in _DATA_TYPES:
            raise Unimplemented(f"cuBLAS gemm on {getattr(spec, name)} ({name})")
    if max(spec.m, spec.n, spec.k, spec.batch) > _INT32_MAX:
        raise InvalidArgument(
            f"gemm {spec.m}x{spec.n}x{spec.k} (batch {spec.batch}) exceeds "
            f"cuBLAS's 32-bit sizes; split the dot"
        )
    if spec.compute_dtype not in _COMPUTE:
        raise Unimplemented(f"cuBLAS gemm computing in {spec.compute_dtype}")
    need = (
        spec.batch * spec.m * spec.k * _ITEM_BYTES[spec.dtype_a],
        spec.batch * spec.k * spec.n * _ITEM_BYTES[spec.dtype_b],
        spec.batch * spec.m * spec.n * _ITEM_BYTES[spec.dtype_c],
    )
    if any(n > have for n, have in zip(need, (a_bytes, b_bytes, c_bytes), strict=True)):
        raise InvalidArgument(
            f"gemm {spec} needs {need} bytes, its slots have "
            f"{(a_bytes, b_bytes, c_bytes)}; recompile the program"
        )


_loaded: tuple[ctypes.CDLL, str] | None = None
_load_lock = threading.Lock()


def load_cublas() -> Cublas:
    """A new runner (handles of its own) over the library, which is loaded once per process;
    UNIMPLEMENTED naming the package when it is nowhere."""
    lib, path = _load_library()
    return Cublas(lib, path)


def cublas_available() -> bool:
    """Whether cuBLAS loads here (the client compiles gemm calls only then)."""
    try:
        _load_library()
    except Unimplemented:
        return False
    return True


def _load_library() -> tuple[ctypes.CDLL, str]:
    global _loaded
    with _load_lock:
        if _loaded is not None:
            return _loaded
        errors = []
        for path in library_paths():
            try:
                lt = path.replace("libcublas.so", "libcublasLt.so")
                if lt != path and os.path.exists(lt):
                    ctypes.CDLL(lt, mode=ctypes.RTLD_GLOBAL)  # libcublas needs it first
                _loaded = (ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), path)
                return _loaded
            except OSError as err:
                errors.append(f"{path}: {err}")
        raise Unimplemented(
            f"dots on cuda run through cuBLAS, which is not installed here (tried "
            f"{'; '.join(errors[:3])}); fix: pip install {CUBLAS_PACKAGE} (hlort-cuda depends "
            f"on it) or put a CUDA toolkit's libcublas.so.12 on LD_LIBRARY_PATH"
        )
