"""FFTs on cuda: one Stockham kernel per radix of each transformed axis (no host fallback), PTX
that ptxas accepts for sm_80 and sm_90 with no spills and no stack, the twiddle tables in global
memory (constant memory is 64 KiB; a 2^20-point axis reads two tables of 1024 roots), and
Bluestein axes (fft_bluestein.py) likewise, their one three-argument pass reading the chirp's
spectrum from a constant slot.
What the kernels compute is checked on the host simulator (tests/gpu/test_fft_simulated.py).
Skipped with the reason when no ptxas is installed."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.codegen.gpu.fft_bluestein import convolution_length
from hlort.codegen.gpu.fft_schedule import radices
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.text.parser import parse_module
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

FFTS = {
    "rfft-2d": "f32[4,64,4096] parameter(0)\n  ROOT y = c64[4,64,2049] fft(x), fft_type=RFFT, "
    "fft_length={64,4096}",
    "ifft": "c128[8,1000] parameter(0)\n  ROOT y = c128[8,1000] fft(x), fft_type=IFFT, "
    "fft_length={1000}",
    "fft-2^20": "c64[1048576] parameter(0)\n  ROOT y = c64[1048576] fft(x), fft_type=FFT, "
    "fft_length={1048576}",
    "irfft-3d": "c64[2,4,6,5] parameter(0)\n  ROOT y = f32[2,4,6,8] fft(x), fft_type=IRFFT, "
    "fft_length={4,6,8}",
    # Bluestein axes (a prime factor above 16384): chirped first pass, the table's pass
    "bluestein-fft": "c64[4,16411] parameter(0)\n  ROOT y = c64[4,16411] fft(x), fft_type=FFT, "
    "fft_length={16411}",
    "bluestein-irfft": "c128[2,3,8206] parameter(0)\n  ROOT y = f64[2,3,16411] fft(x), "
    "fft_type=IRFFT, fft_length={3,16411}",
    "bluestein-rfft-1000003": "f32[1000003] parameter(0)\n  ROOT y = c64[500002] fft(x), "
    "fft_type=RFFT, fft_length={1000003}",
}


@pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(FFTS))
def test_fft_passes_assemble_without_spills(arch, name):
    module = parse_module(f"HloModule f\nENTRY main {{\n  x = {FFTS[name]}\n}}\n")
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, NvptxTarget(arch), host_loops=True)
    assert not program.fallbacks, program.fallback_summary()
    assert {k.schedule for k in program.kernels} == {"fft"}
    ptx = program.binary.decode()
    assert ".global .align 64 .b8 hlort_fft_twiddles" in ptx
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    for kernel in program.kernels:
        usage = result.kernels[kernel.name]
        assert not usage.spills and usage.stack_bytes == 0, usage
    if name.startswith("bluestein"):  # the chirp's spectrum: a constant slot, not PTX text
        n = 16411 if "16411" in FFTS[name] else 1000003
        m = convolution_length(n, radices)
        assert [k.num_args for k in program.kernels].count(3) == 1
        assert [s.size for s in program.slots if s.kind == "constant"] == [16 * m]
        assert len(ptx) < 1 << 20
