"""The cuda plugin without a GPU: the no-driver path, compile-only targets, blobs keyed by the
compute capability, and the real compiler's programs driven on the fake driver (as recorded
launches: no PTX runs here), plus the pieces of the driver bindings that need no driver."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.plugin.options import CompileOptions
from hlort.text import parse_module
from hlort_cuda import probe as cuda_probe
from hlort_cuda.plugin import CudaPlugin

SEED = """HloModule seed
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[8,256] parameter(0)
  y = f32[8,256] parameter(1)
  z = f32[8,256] parameter(2)
  m = f32[8,256] multiply(y, z)
  s = f32[8,256] add(x, m)
  zero = f32[] constant(0)
  ROOT r = f32[8] reduce(s, zero), dimensions={1}, to_apply=add
}
"""


def optimized(text: str, client):
    from hlort.runtime.compile import run_core_passes

    return run_core_passes(parse_module(text), CompileOptions(), client)


def libcuda_present() -> bool:
    try:
        cuda_probe.load_libcuda()
        return True
    except OSError:
        return False


needs_no_driver = pytest.mark.skipif(libcuda_present(), reason="libcuda is present here")


@needs_no_driver
def test_probe_without_a_driver_is_unavailable_with_the_reason_and_fix(monkeypatch):
    monkeypatch.delenv("HLORT_CUDA_DRIVER", raising=False)
    result = CudaPlugin().probe()
    assert not result.available
    if cuda_probe.binding_installed("cuda-bindings"):
        assert "libcuda.so.1" in result.reason and "NVIDIA driver" in result.fix
    else:
        assert "cuda-bindings" in result.reason and "pip install" in result.fix


def test_probe_names_an_unknown_driver_binding(monkeypatch):
    monkeypatch.setenv("HLORT_CUDA_DRIVER", "opencl")
    result = CudaPlugin().probe()
    assert not result.available and "opencl" in result.reason and "pycuda" in result.fix


def test_probe_with_a_missing_binding_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(cuda_probe, "binding_installed", lambda name: False)
    monkeypatch.setenv("HLORT_CUDA_DRIVER", "pycuda")
    result = CudaPlugin().probe()
    assert not result.available and "hlort-cuda[pycuda]" in result.fix


def test_probe_reports_no_device_from_cuinit(monkeypatch):
    class FakeLib:
        def cuInit(self, flags):
            return cuda_probe.CUDA_ERROR_NO_DEVICE

    monkeypatch.setattr(cuda_probe, "binding_installed", lambda name: True)
    monkeypatch.setattr(cuda_probe, "load_libcuda", FakeLib)
    result = CudaPlugin().probe()
    assert not result.available and "no GPU" in result.reason and "nvidia-smi" in result.fix


def test_probe_ok_when_the_driver_counts_a_device(monkeypatch):
    class FakeLib:
        def cuInit(self, flags):
            return 0

        def cuDeviceGetCount(self, out):
            ctypes.cast(out, ctypes.POINTER(ctypes.c_int))[0] = 2
            return 0

    monkeypatch.setattr(cuda_probe, "binding_installed", lambda name: True)
    monkeypatch.setattr(cuda_probe, "load_libcuda", FakeLib)
    assert CudaPlugin().probe().available


@needs_no_driver
def test_creating_a_client_without_a_driver_is_unavailable_with_the_fix():
    with pytest.raises(HlortError) as err:
        CudaPlugin().create_client()
    assert err.value.code is ErrorCode.UNAVAILABLE and "fix:" in err.value.message
    if cuda_probe.binding_installed("cuda-bindings"):
        assert "libcuda.so.1" in err.value.message and "NVIDIA driver" in err.value.message
    else:
        assert "pip install" in err.value.message


@needs_no_driver
def test_hlort_devices_lists_cuda_as_unavailable_and_exits_0():
    out = subprocess.run(
        [sys.executable, "-m", "hlort.cli", "devices"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("cuda "))
    assert "unavailable" in line and "fix:" in line


def test_compile_only_client_writes_ptx_for_the_named_target():
    client = CudaPlugin().create_compile_only_client("9.0")
    assert client.target == "sm_90"
    exe = client.compile(optimized(SEED, client), CompileOptions())
    ptx = exe.artifacts()["kernels.ptx"]
    assert ".target sm_90" in ptx and ".entry" in ptx
    assert exe.program.stats()["host_fallbacks"] == 0
    client.close()


def test_compile_only_dot_is_a_gemm_call_and_needs_no_cublas_to_compile():
    client = CudaPlugin().create_compile_only_client("sm_90")
    dot = """HloModule mm
ENTRY main {
  a = f32[64,32] parameter(0)
  b = f32[32,16] parameter(1)
  ROOT d = f32[64,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    exe = client.compile(optimized(dot, client), CompileOptions())
    assert exe.program.stats()["library_calls"] == 1
    client.close()


def test_compile_only_client_rejects_a_bad_target():
    with pytest.raises(HlortError) as err:
        CudaPlugin().create_compile_only_client("gfx942")
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and "sm_90" in err.value.message


def test_blob_for_another_compute_capability_is_refused_naming_both():
    sm80 = CudaPlugin().create_compile_only_client("sm_80")
    blob = sm80.compile(optimized(SEED, sm80), CompileOptions()).serialize()
    sm90 = CudaPlugin().create_compile_only_client("sm_90")
    with pytest.raises(HlortError) as err:
        sm90.deserialize_executable(blob)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert "sm_80" in err.value.message and "sm_90" in err.value.message
    again = CudaPlugin().create_compile_only_client("sm_80").deserialize_executable(blob)
    assert (
        again.program.binary == sm80.compile(optimized(SEED, sm80), CompileOptions()).program.binary
    )


def test_cli_compile_with_target_dumps_ptx_without_a_gpu(tmp_path):
    module = tmp_path / "seed.hlo"
    module.write_text(SEED)
    dump = tmp_path / "dump"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "hlort.cli",
            "compile",
            str(module),
            "--platform",
            "cuda",
            "--target",
            "sm_90",
            "--dump-dir",
            str(dump),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    ptx = (dump / "seed.cuda.kernels.ptx").read_text()
    assert ".target sm_90" in ptx
    assert (dump / "seed.cuda.kernels.ll").exists()


def test_cli_target_on_a_platform_without_compile_only_is_unsupported(tmp_path):
    module = tmp_path / "seed.hlo"
    module.write_text(SEED)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "hlort.cli",
            "compile",
            str(module),
            "--platform",
            "interpreter",
            "--target",
            "sm_90",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 3 and "ahead of time" in out.stderr


def test_real_compiler_program_on_the_fake_driver_launches_its_kernels(make_client):
    from fake_gpu_client import FakeGpuClient

    from hlort_cuda.client import CudaCompiler

    class Client(CudaCompiler, FakeGpuClient):
        pass

    client = Client(None, {})
    launched = []
    client.driver.kernels["k0_fusion"] = lambda driver, module, args: launched.append(args)
    exe = client.compile(optimized(SEED, client), CompileOptions())
    args = [
        client.buffer_from_host(np.zeros((8, 256), np.float32), client.devices()[0])
        for _ in range(3)
    ]
    (out,) = exe.execute([args])[0]
    out.ready_event().wait(timeout=10)
    loads = [c for c in client.driver.calls if c[0] == "module_load"]
    assert len(loads) == 1 and loads[0][2] == len(exe.program.binary)
    (call,) = [c for c in client.driver.calls if c[0] == "launch"]
    step = exe.program.steps[0]
    assert call[1:5] == ("k0_fusion", step.grid, step.block, 0)
    assert call[5] == tuple(b.storage_now().pointer for b in [*args, out])
    assert launched == [list(call[5])]
    client.close()


def test_cuda_errors_map_to_pjrt_codes():
    from hlort_cuda.cuda_errors import cuda_error

    assert (
        cuda_error("cuMemAlloc", 2, "CUDA_ERROR_OUT_OF_MEMORY").code is ErrorCode.RESOURCE_EXHAUSTED
    )
    assert cuda_error("cuInit", 100, "CUDA_ERROR_NO_DEVICE").code is ErrorCode.UNAVAILABLE
    bad_ptx = cuda_error("cuModuleLoadData", 222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION")
    assert (
        bad_ptx.code is ErrorCode.INVALID_ARGUMENT and "update the NVIDIA driver" in bad_ptx.message
    )
    fault = cuda_error("cuEventSynchronize", 700, "CUDA_ERROR_ILLEGAL_ADDRESS")
    assert fault.code is ErrorCode.INTERNAL and "restart the process" in fault.message


def test_kernel_arguments_become_ctypes_values():
    from hlort_cuda.driver_bindings import _as_ctype

    assert isinstance(_as_ctype(0x7F0000001000), ctypes.c_uint64)
    assert _as_ctype(np.int32(-3)).value == -3
    assert isinstance(_as_ctype(np.float32(1.5)), ctypes.c_float)
    with pytest.raises(HlortError):
        _as_ctype("x")


def test_gemm_sizes_are_checked_against_their_slots():
    from hlort.codegen.gpu.program import GemmSpec
    from hlort_cuda.cublas import check_gemm

    spec = GemmSpec(4, 5, 3, 2, "f32", "f32", "f32")
    check_gemm(spec, 2 * 4 * 3 * 4, 2 * 3 * 5 * 4, 2 * 4 * 5 * 4)
    with pytest.raises(HlortError, match="recompile"):
        check_gemm(spec, 4, 2 * 3 * 5 * 4, 2 * 4 * 5 * 4)


def test_conformance_profile_matches_the_suite():
    from hlort.plugin.conformance_profile import ConformanceProfile

    profile = CudaPlugin().conformance_profile()
    assert isinstance(profile, ConformanceProfile) and profile.problems() == []
