"""The GPU scatter kernels (hlort.codegen.gpu.scatter_schedule) as PTX: every mode assembles
with ptxas for sm_80 and sm_90 without spills or stack, and uses the atomics it should
(native add/min/max, a CAS loop for float max, the overwrite mode's max on winners). What the
kernels compute is checked on the host simulator (tests/gpu/test_scatter_*_simulated.py)."""

import re

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.testing.gpu_scatter_programs import SCATTER_MODES, scatter_program
from hlort.text.parser import parse_module
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())
ATOMICS = {
    ("add", "f32"): "atom.global.add.f32",
    ("add", "f64"): "atom.global.add.f64",
    ("add", "s32"): "atom.global.add.u32",
    ("min", "u32"): "atom.global.min.u32",
    ("max", "s64"): "atom.global.max.s64",
    ("max", "f32"): "atom.relaxed.gpu.global.cas.b32",
    ("set", "f32"): "atom.global.max.s32",
    ("max", "s8"): "atom.relaxed.gpu.global.cas.b32",  # on the 32-bit word holding the byte
    ("max", "f16"): "atom.relaxed.gpu.global.cas.b32",
}


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("comb,t,unique,mode", SCATTER_MODES)
def test_scatter_kernels_assemble_without_spills(comb, t, unique, mode, arch):
    module = parse_module(scatter_program(comb, t, unique))
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, NvptxTarget(arch))
    assert not program.fallbacks
    assert {k.schedule for k in program.kernels} == {f"scatter_{mode}"}
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    assert result.spilling() == []
    assert all(u.stack_bytes == 0 for u in result.kernels.values()), result.kernels
    want = ATOMICS.get((comb, t))
    if want is not None:
        assert any(want in a for a in re.findall(r"atom\.[\w.]+", program.binary.decode())), want
