"""hlort's tiled dot kernel for AMD GPUs (compiled as for a runtime without rocBLAS): for gfx90a
and gfx942 and each element type, the code object links with ld.lld-19 and validates with
llvm-readelf-19 (the kernel's ``.kd`` symbol, three global-buffer arguments, wavefront 64, the
two slabs in the group segment) with no private segment (stack) and no VGPR spills, for a short
K (one k-step) and a long one. What the kernel computes is checked on the host simulator with a
64-wide wavefront (tests/gpu/test_dot_kernel_simulated.py)."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.text.parser import parse_module
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.compiler import check_program_code_object

DTYPES = [("f32", "f32"), ("f16", "f16"), ("bf16", "f32"), ("f64", "f64"), ("s8", "s32")]
DTYPES += [("c64", "c64"), ("c128", "c128"), ("pred", "pred")]
# bytes per slab element: the accumulation type (pred x pred -> pred: OR of ANDs in i32)
SLAB_BYTES = {"f64": 8, "c64": 8, "c128": 16}


def dot_text(lt, ot, k):
    return f"""HloModule dot
ENTRY main {{
  a = {lt}[200,{k}] parameter(0)
  b = {lt}[{k},150] parameter(1)
  ROOT d = {ot}[200,150] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


@pytest.mark.parametrize("k", [16, 1000])
@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("lt,ot", DTYPES, ids=["x".join(t) for t in DTYPES])
def test_dot_kernel_code_object_links_and_validates(llvm19_tools, gfx, lt, ot, k):
    module = parse_module(dot_text(lt, ot, k))
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, AmdgpuTarget(gfx), gemm_library=False)
    (kernel,) = program.kernels
    assert kernel.schedule == "dot" and not program.fallbacks
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    assert report.target.startswith(f"amdgcn-amd-amdhsa--{gfx}")
    note = report.kernels[kernel.name]
    assert note.private_segment_size == 0 and not note.uses_dynamic_stack
    assert note.vgpr_spills == 0 and note.sgpr_spills == 0
    assert note.wavefront_size == 64
    width = SLAB_BYTES.get(lt, 4)
    assert note.group_segment_size == 2 * 16 * 64 * width
