"""The GPU scatter kernels (hlort.codegen.gpu.scatter_schedule) for AMD GPUs: every mode's code
object links with ld.lld-19 and validates with llvm-readelf-19 for gfx90a and gfx942, with no
private segment (stack) and no spills, and the agent-scope atomics on coarse-grained memory
come out as native global atomics (not compare-and-swap loops) where the ISA has them. What
the kernels compute is checked on the host simulator with 64-wide wavefronts
(tests/gpu/test_scatter_*_simulated.py)."""

import re
import subprocess

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.testing.gpu_scatter_programs import SCATTER_MODES, scatter_program
from hlort.text.parser import parse_module
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.compiler import check_program_code_object

NATIVE = {
    ("add", "s32"): "global_atomic_add",
    ("add", "u64"): "global_atomic_add_x2",
    ("min", "u32"): "global_atomic_umin",
    ("max", "s64"): "global_atomic_smax_x2",
    ("add", "f64"): "global_atomic_add_f64",
    ("set", "f32"): "global_atomic_smax",
}


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("comb,t,unique,mode", SCATTER_MODES)
def test_scatter_code_object_links_and_validates(llvm19_tools, gfx, comb, t, unique, mode):
    module = parse_module(scatter_program(comb, t, unique))
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, AmdgpuTarget(gfx))
    assert not program.fallbacks
    assert {k.schedule for k in program.kernels} == {f"scatter_{mode}"}
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    for kernel in program.kernels:
        note = report.kernels[kernel.name]
        assert note.private_segment_size == 0 and not note.uses_dynamic_stack
        assert note.vgpr_spills == 0 and note.sgpr_spills == 0
    want = NATIVE.get((comb, t))
    if want is not None:
        _linker, _readelf, objdump = llvm19_tools
        code = _disassemble(objdump.path, program.binary, gfx)
        assert want in set(re.findall(r"global_atomic_\w+", code)), want


def _disassemble(objdump: str, binary: bytes, gfx: str) -> str:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.o"
        path.write_bytes(binary)
        done = subprocess.run(
            [objdump, "-d", f"--mcpu={gfx}", str(path)], capture_output=True, text=True, check=True
        )
    return done.stdout
