"""AMDGPU emission, HSACO linking and validation of hand-written seed kernels, for both targets
and every code object version; and that emitting twice never aborts the process."""

import subprocess
import sys
import textwrap

import pytest
import seed_kernels

from hlort.errors import ErrorCode, HlortError
from hlort_rocm.amdgpu_target import GFX_TARGETS, gfx_target
from hlort_rocm.code_object import compile_ir, emit_assembly, with_code_object_version
from hlort_rocm.code_object_check import (
    CodeObjectToCheck,
    explicit_args,
    validate_code_object,
    validate_code_objects,
)
from hlort_rocm.lld_linker import find_linker, link_code_object

POINTERS3 = explicit_args([8, 8, 8], ["global_buffer"] * 3)


@pytest.mark.parametrize("version", [4, 5, 6])
@pytest.mark.parametrize("target", sorted(GFX_TARGETS))
def test_seed_kernel_links_and_validates(llvm19_tools, target, version):
    gfx = gfx_target(target)
    compiled = compile_ir(seed_kernels.ADD_F32, gfx, version=version)
    assert compiled.object_code[:4] == b"\x7fELF"
    hsaco = link_code_object(find_linker(version), compiled.object_code)
    report = validate_code_object(hsaco, gfx, version, {"add_f32": POINTERS3})
    assert report.ok, report.problems
    assert report.target.startswith(f"amdgcn-amd-amdhsa--{target}")
    note = report.kernels["add_f32"]
    assert note.symbol == "add_f32.kd" and note.wavefront_size == 64
    assert note.private_segment_size == 0 and note.instructions > 5
    assert "v_add_f32" in emit_assembly(compiled)


def test_validation_reports_a_wrong_layout_a_missing_kernel_and_stack_use(llvm19_tools):
    gfx = gfx_target("gfx942")
    hsaco = link_code_object(
        find_linker(5), compile_ir(seed_kernels.ADD_F32, gfx, version=5).object_code
    )
    report = validate_code_object(hsaco, gfx, 5, {"add_f32": POINTERS3[:2], "other": None})
    assert any("add_f32: arguments" in p for p in report.problems)
    assert any("kernel other is not in the metadata" in p for p in report.problems)
    assert validate_code_object(hsaco, gfx_target("gfx90a"), 5, {"add_f32": None}).problems
    assert validate_code_object(hsaco, gfx, 6, {"add_f32": None}).problems  # a v5 object
    stack = compile_ir(seed_kernels.STACK_USER, gfx, version=5)
    report = validate_code_object(
        link_code_object(find_linker(5), stack.object_code), gfx, 5, {"uses_stack": None}
    )
    assert report.kernels["uses_stack"].private_segment_size > 0
    assert any("private segment" in p for p in report.problems)
    with pytest.raises(HlortError) as info:
        report.raise_problems("uses_stack")
    assert info.value.code is ErrorCode.INTERNAL and "private segment" in info.value.message


def test_emitting_the_same_kernels_again_never_aborts():
    """A second emit_object on one AMDGPU llvmlite module aborts the process in LLVM: hlort
    emits every object and assembly from a fresh parse. Run in a child so an abort fails the
    test instead of killing pytest."""
    code = textwrap.dedent(f"""
        from hlort_rocm.amdgpu_target import gfx_target
        from hlort_rocm.code_object import compile_ir, emit_assembly
        ir = {seed_kernels.ADD_F32!r}
        first = compile_ir(ir, gfx_target("gfx942"), version=5)
        again = compile_ir(first.llvm_ir, gfx_target("gfx942"), version=5)
        for _ in range(2):
            emit_assembly(first)
            emit_assembly(again)
        assert first.object_code and again.object_code
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


def test_code_object_version_flag_is_added_once_and_merged_into_existing_flags():
    plain = with_code_object_version("define void @f() { ret void }", 5)
    assert plain.count('!"amdhsa_code_object_version", i32 500') == 1
    assert with_code_object_version(plain, 4) == plain  # an explicit flag is kept
    flagged = (
        "define void @f() { ret void }\n!llvm.module.flags = !{!0}\n"
        '!0 = !{i32 7, !"PIC Level", i32 2}\n'
    )
    merged = with_code_object_version(flagged, 6)
    assert "!llvm.module.flags = !{!0, !1}" in merged
    assert '!1 = !{i32 1, !"amdhsa_code_object_version", i32 600}' in merged


def test_bad_ir_is_internal_and_names_the_problem():
    with pytest.raises(HlortError) as info:
        compile_ir("define void @f( {", gfx_target("gfx942"), version=5)
    assert info.value.code is ErrorCode.INTERNAL and "LLVM IR" in info.value.message


def test_a_batch_validates_each_code_object_on_its_own(llvm19_tools):
    """One readelf and one objdump per target for many files: each report is its own file's."""
    items = []
    for target in ("gfx90a", "gfx942", "gfx90a"):
        gfx = gfx_target(target)
        hsaco = link_code_object(
            find_linker(5), compile_ir(seed_kernels.ADD_F32, gfx, version=5).object_code
        )
        items.append(CodeObjectToCheck(hsaco, gfx, 5, {"add_f32": POINTERS3}))
    stack = compile_ir(seed_kernels.STACK_USER, gfx_target("gfx942"), version=5).object_code
    items.insert(
        1,
        CodeObjectToCheck(
            link_code_object(find_linker(5), stack), gfx_target("gfx942"), 5, {"uses_stack": None}
        ),
    )
    reports = validate_code_objects(items)
    assert [r.ok for r in reports] == [True, False, True, True]
    assert [r.target.split(":")[0][-6:] for r in reports] == [
        "gfx90a",
        "gfx942",
        "gfx942",
        "gfx90a",
    ]
    assert all(r.kernels["add_f32"].instructions > 5 for r in reports if r.ok)


def test_ir_legalized_for_amdgpu_before_parsing():
    from hlort_rocm.amdgpu_kernel_target import with_flat_workgroup_size
    from hlort_rocm.code_object import with_private_allocas, without_vector_variants

    flat = '  %".8" = alloca float, align 4\n  store float 0.0, ptr %".8"\n'
    private = with_private_allocas(flat)
    assert "alloca float, align 4, addrspace(5)" in private
    assert 'addrspacecast ptr addrspace(5) %"hlort.private.1" to ptr' in private
    assert with_private_allocas(private) == private  # already private: kept
    attrs = 'attributes #0 = { nounwind "vector-function-abi-variant"="_ZGV_LLVM_N2v_f(f_v2)" }'
    assert without_vector_variants(attrs) == "attributes #0 = { nounwind }"
    kernel = 'define amdgpu_kernel void @"k"(ptr addrspace(1) %".1")\n{\n  ret void\n}\n'
    marked = with_flat_workgroup_size(kernel, 512)
    assert '@"k"(ptr addrspace(1) %".1") "amdgpu-flat-work-group-size"="1,512"\n{' in marked
    assert with_flat_workgroup_size(marked, 256) == marked
