"""Compiling for AMD GPUs with no GPU: compile-only clients, validated code objects, dumps,
serialization keyed by the gfx target, options, and the CLI."""

import numpy as np
import pytest

import hlort
from hlort.cli import main
from hlort.errors import ErrorCode, HlortError
from hlort.plugin.options import CompileOptions
from hlort.runtime.client import Backend
from hlort_rocm import RocmPlugin
from hlort_rocm.compiler import check_program_code_object

PROGRAM = """
func.func @main(%a: tensor<64x300xf32>, %b: tensor<300x32xf32>)
    -> (tensor<64x300xf32>, tensor<64xf32>, tensor<300x64xf32>, tensor<64x32xf32>) {
  %0 = stablehlo.exponential %a : tensor<64x300xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%0 init: %z) applies stablehlo.add across dimensions = [1]
      : (tensor<64x300xf32>, tensor<f32>) -> tensor<64xf32>
  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<64x300xf32>) -> tensor<300x64xf32>
  %d = stablehlo.dot_general %0, %b, contracting_dims = [1] x [0]
      : (tensor<64x300xf32>, tensor<300x32xf32>) -> tensor<64x32xf32>
  return %0, %r, %t, %d : tensor<64x300xf32>, tensor<64xf32>, tensor<300x64xf32>, tensor<64x32xf32>
}
"""


def compile_for(target, **target_options):
    plugin = RocmPlugin()
    backend = Backend(plugin.create_compile_only_client(target), plugin)
    return backend.compile(PROGRAM, None, CompileOptions(target_options=target_options))


@pytest.mark.parametrize("target", ["gfx90a", "gfx942"])
def test_compile_only_links_a_validated_code_object(llvm19_tools, target):
    exe = compile_for(target, validate=True)
    program = exe.raw.program
    assert program.target == target and program.binary_format == "hsaco"
    assert {k.schedule for k in program.kernels} == {"row_reduce", "transpose"}
    assert program.stats()["library_calls"] == 1 and not program.fallbacks  # dot: rocBLAS
    report = check_program_code_object(program, 5)
    assert report.ok and report.target.startswith(f"amdgcn-amd-amdhsa--{target}")
    assert sorted(report.kernels) == sorted(k.name for k in program.kernels)
    assert all(n.private_segment_size == 0 for n in report.kernels.values())
    files = {name.rsplit(".", 1)[-1]: data for name, data in exe.raw.artifacts().items()}
    assert files["hsaco"] == program.binary and files["o"][:4] == b"\x7fELF"
    assert "amdgpu_kernel" in files["ll"] and "s_endpgm" in files["s"]
    # the row reduction's AMDGPU pieces: lane id from mbcnt, exchanges by ds_bpermute, barriers
    for instruction in ("v_mbcnt_lo_u32_b32", "v_mbcnt_hi_u32_b32", "ds_bpermute_b32", "s_barrier"):
        assert instruction in files["s"], instruction


def test_serialized_executables_are_keyed_by_the_gfx_target(llvm19_tools):
    blob = compile_for("gfx942").serialize()
    plugin = RocmPlugin()
    same = Backend(plugin.create_compile_only_client("gfx942"), plugin).deserialize(blob)
    assert same.raw.program.binary == compile_for("gfx942").raw.program.binary
    other = Backend(plugin.create_compile_only_client("gfx90a"), plugin)
    with pytest.raises(HlortError) as info:
        other.deserialize(blob)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "gfx942" in info.value.message and "gfx90a" in info.value.message


@pytest.mark.parametrize(
    "options, what",
    [
        ({"code_object_version": 3}, "code_object_version=3"),
        ({"opt_level": 7}, "opt_level=7"),
        ({"fast_math": True}, "fast_math"),
    ],
)
def test_bad_target_options_are_invalid_argument(llvm19_tools, options, what):
    with pytest.raises(HlortError) as info:
        compile_for("gfx942", **options)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and what in info.value.message


def test_unknown_target_and_buffers_on_a_compile_only_client():
    with pytest.raises(HlortError) as info:
        RocmPlugin().create_compile_only_client("gfx1100")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "gfx942" in info.value.message
    client = RocmPlugin().create_compile_only_client("gfx90a")
    with pytest.raises(HlortError) as info:
        client.buffer_from_host(np.zeros(3, np.float32), client.devices()[0])
    assert info.value.code is ErrorCode.UNAVAILABLE


def test_code_object_version_option_reaches_the_code_object(llvm19_tools):
    program = compile_for("gfx942", code_object_version=6).raw.program
    assert program.binary[8] == 4  # ELF ABI version 4 = code object v6
    assert check_program_code_object(program, 6).ok


def test_cli_compile_for_a_target_writes_ir_object_and_code_object(llvm19_tools, tmp_path, capsys):
    source = tmp_path / "m.mlir"
    source.write_text(PROGRAM)
    dump = tmp_path / "dump"
    assert (
        main(
            [
                "compile",
                str(source),
                "--platform",
                "rocm",
                "--target",
                "gfx942",
                "--dump-dir",
                str(dump),
            ]
        )
        == 0
    )
    assert "ENTRY" in capsys.readouterr().out
    names = {p.suffix for p in dump.iterdir()}
    assert {".ll", ".o", ".hsaco", ".s"} <= names


def test_devices_lists_rocm_as_unavailable_with_the_reason(capsys):
    from hlort_rocm.probe import hip_library_path

    if hip_library_path() is not None:
        pytest.skip("this machine has a HIP runtime")
    assert main(["devices"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("rocm "))
    assert "unavailable: no ROCm runtime (libamdhip64.so) found" in line
    assert "rocm" in hlort.backend_errors()


def test_without_rocblas_dots_run_the_tiled_dot_kernel(llvm19_tools, monkeypatch):
    from test_hip_driver import FakeRocmClient

    from hlort_rocm import rocblas_gemm

    monkeypatch.setattr(rocblas_gemm, "load_rocblas", lambda: None)
    client = FakeRocmClient(RocmPlugin())
    try:  # HLORT_FALLBACK=error in the tests: a dot on the host would be refused
        options = CompileOptions(target_options={"validate": True})
        program = Backend(client, client.plugin).compile(PROGRAM, None, options).raw.program
        assert not program.fallbacks and program.stats()["library_calls"] == 0
        assert "dot" in {k.schedule for k in program.kernels}
        report = check_program_code_object(program, 5)
        assert report.ok and all(n.private_segment_size == 0 for n in report.kernels.values())
    finally:
        client.close()


LOOP_DOT = """
func.func @main(%x: tensor<40x40xf32>, %w: tensor<40x40xf32>) -> tensor<40x40xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %v = %x) : tensor<i32>, tensor<40x40xf32>
    cond {
      %n = stablehlo.constant dense<3> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %d = stablehlo.dot_general %v, %w, contracting_dims = [1] x [0]
          : (tensor<40x40xf32>, tensor<40x40xf32>) -> tensor<40x40xf32>
      %t = stablehlo.tanh %d : tensor<40x40xf32>
      stablehlo.return %j, %t : tensor<i32>, tensor<40x40xf32>
    }
  return %r#1 : tensor<40x40xf32>
}
"""


def test_without_rocblas_loops_with_dots_run_on_the_host_with_device_bodies(
    llvm19_tools, monkeypatch
):
    """rocm used to keep such a loop one host fallback when rocBLAS was absent."""
    from test_hip_driver import FakeRocmClient

    from hlort.codegen.gpu.program import HostLoop, KernelLaunch, every_step
    from hlort_rocm import rocblas_gemm

    monkeypatch.setattr(rocblas_gemm, "load_rocblas", lambda: None)
    client = FakeRocmClient(RocmPlugin())
    try:
        options = CompileOptions(target_options={"validate": True})
        program = Backend(client, client.plugin).compile(LOOP_DOT, None, options).raw.program
        (loop,) = [s for s in program.steps if isinstance(s, HostLoop)]
        assert not program.fallbacks
        schedules = {k.name: k.schedule for k in program.kernels}
        body = [schedules[s.kernel] for s in every_step(loop.body) if isinstance(s, KernelLaunch)]
        assert "dot" in body
        assert check_program_code_object(program, 5).ok
    finally:
        client.close()


LOOP = """
func.func @main(%x: tensor<256xf32>) -> tensor<256xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %v = %x) : tensor<i32>, tensor<256xf32>
    cond {
      %n = stablehlo.constant dense<4> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %w = stablehlo.exponential %v : tensor<256xf32>
      stablehlo.return %j, %w : tensor<i32>, tensor<256xf32>
    }
  return %r#1 : tensor<256xf32>
}
"""


def test_while_loops_run_on_the_host_with_device_bodies(llvm19_tools):
    """As on cuda: the loop is a HostLoop step whose condition and body are kernels of the linked,
    validated code object, not one host fallback for the whole while."""
    from hlort.codegen.gpu.program import HostLoop, KernelLaunch, every_step

    plugin = RocmPlugin()
    backend = Backend(plugin.create_compile_only_client("gfx942"), plugin)
    program = backend.compile(LOOP, None, CompileOptions(target_options={"validate": True})).raw
    program = program.program
    (loop,) = [s for s in program.steps if isinstance(s, HostLoop)]
    assert not program.fallbacks
    launched = {
        s.kernel for s in every_step([*loop.condition, *loop.body]) if isinstance(s, KernelLaunch)
    }
    assert launched and launched <= {k.name for k in program.kernels}
    assert check_program_code_object(program, 5).ok


BRANCH = """
func.func @main(%i: tensor<i32>, %x: tensor<256xf32>) -> tensor<256xf32> {
  %r = "stablehlo.case"(%i) ({
    %e = stablehlo.exponential %x : tensor<256xf32>
    stablehlo.return %e : tensor<256xf32>
  }, {
    %n = stablehlo.negate %x : tensor<256xf32>
    stablehlo.return %n : tensor<256xf32>
  }) : (tensor<i32>) -> tensor<256xf32>
  return %r : tensor<256xf32>
}
"""


def test_conditionals_choose_on_the_host_and_run_their_branches_on_the_device(llvm19_tools):
    """As on cuda: a case is a HostBranch step whose branches are kernels of the linked,
    validated code object, not one host fallback."""
    from hlort.codegen.gpu.program import HostBranch, KernelLaunch, every_step

    plugin = RocmPlugin()
    backend = Backend(plugin.create_compile_only_client("gfx942"), plugin)
    program = backend.compile(BRANCH, None, CompileOptions(target_options={"validate": True}))
    program = program.raw.program
    (branch,) = [s for s in program.steps if isinstance(s, HostBranch)]
    assert not program.fallbacks and branch.selector_dtype == "s32"
    for steps in branch.branches:
        launched = {s.kernel for s in every_step(steps) if isinstance(s, KernelLaunch)}
        assert launched and launched <= {k.name for k in program.kernels}
    assert check_program_code_object(program, 5).ok
