"""FFTs on rocm: the Stockham passes (fft_schedule.py) link into gfx90a / gfx942 code objects
that validate, with no private segment and no spills: one-table and two-table twiddles, a
Hermitian first pass (IRFFT), a prime radix, and Bluestein axes (a prime factor above 16384:
fft_bluestein.py's chirped passes and the one reading the chirp's spectrum). What they compute
is checked on the host simulator (tests/gpu/test_fft_simulated.py, test_fft_bluestein_simulated).
"""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.text.parser import parse_module
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.compiler import check_program_code_object

FFTS = {
    "fft-2^20": "c64[1048576] parameter(0)\n  ROOT y = c64[1048576] fft(x), fft_type=FFT, "
    "fft_length={1048576}",
    "irfft-1000": "c128[3,501] parameter(0)\n  ROOT y = f64[3,1000] fft(x), fft_type=IRFFT, "
    "fft_length={1000}",
    "rfft-97": "f32[4,97] parameter(0)\n  ROOT y = c64[4,49] fft(x), fft_type=RFFT, "
    "fft_length={97}",
    "bluestein-ifft-16411": "c64[2,16411] parameter(0)\n  ROOT y = c64[2,16411] fft(x), "
    "fft_type=IFFT, fft_length={16411}",
    "bluestein-irfft-1000003": "c128[500002] parameter(0)\n  ROOT y = f64[1000003] fft(x), "
    "fft_type=IRFFT, fft_length={1000003}",
}


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("name", sorted(FFTS))
def test_fft_passes_link_and_validate(llvm19_tools, gfx, name):
    module = parse_module(f"HloModule f\nENTRY main {{\n  x = {FFTS[name]}\n}}\n")
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, AmdgpuTarget(gfx), host_loops=True)
    assert not program.fallbacks, program.fallback_summary()
    assert {k.schedule for k in program.kernels} == {"fft"}
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    for kernel in program.kernels:
        note = report.kernels[kernel.name]
        assert note.private_segment_size == 0 and not note.uses_dynamic_stack, note
        assert note.vgpr_spills == 0 and note.sgpr_spills == 0, note
