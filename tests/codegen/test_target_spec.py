"""The neutral emitter obeys its TargetSpec: kernel signature, calling convention, address
spaces and math policy, checked on the IR (LLVM's own parser verifies it); no JIT, no CPU."""

from __future__ import annotations

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np

from hlort import Builder, shape
from hlort.codegen.llvm.fused_emitter import FusedEmitter
from hlort.codegen.llvm.index import Index
from hlort.codegen.llvm.kernel_abi import define_kernel
from hlort.codegen.llvm.llvm_types import I64, store_element
from hlort.codegen.llvm.target_spec import (
    NEUTRAL_TARGET,
    AddressSpaces,
    KernelSignature,
    MathPolicy,
    TargetSpec,
)
from hlort.ir.opcodes import Opcode

GPU_LIKE = TargetSpec(
    "gpu-like",
    triple="nvptx64-nvidia-cuda",
    kernel_signature=KernelSignature.POINTER_ARGS,
    kernel_calling_convention="ptx_kernel",
    address_spaces=AddressSpaces(global_memory=1, shared=3, constant=4, local=5),
    math=MathPolicy(libm=False, vector_variant_lanes=()),
    threads_per_warp=32,
)


def _computation(build, dtype="f32", n=16):
    b = Builder("t")
    xs = [b.parameter(shape.array(dtype, [n])) for _ in range(2)]
    b.build(build(b, *xs))
    return b.module.entry


def _emit(target: TargetSpec, comp) -> str:
    """One element per call: element ``i`` of ``comp``'s root (i from the range or 0)."""
    module = target.new_module("m")
    n_in = len(comp.parameters)
    k = define_kernel(module, target, "k", n_in + 1)
    i = k.begin if k.begin is not None else ir.Constant(I64, 0)
    em = FusedEmitter(k.ctx, comp, k.buffers[:n_in])
    value = em.value(comp.root, Index(k.builder, comp.root.shape.dims, linear=i))
    store_element(k.builder, comp.root.shape.dtype, value, k.buffers[n_in], i)
    k.builder.ret_void()
    text = str(module)
    llvm.parse_assembly(text).verify()
    return text


def test_buffer_table_kernels_take_a_table_and_a_range():
    text = _emit(NEUTRAL_TARGET, _computation(lambda b, x, y: b.add(x, y)))
    assert 'define void @"k"(ptr %".1", i64 %".2", i64 %".3") nounwind' in text


def test_pointer_args_kernels_use_the_targets_convention_and_global_space():
    text = _emit(GPU_LIKE, _computation(lambda b, x, y: b.add(x, y)))
    assert (
        'define ptx_kernel void @"k"(ptr addrspace(1) %".1", ptr addrspace(1) %".2", '
        'ptr addrspace(1) %".3")'
    ) in text
    assert 'target triple = "nvptx64-nvidia-cuda"' in text


def test_constant_arrays_live_in_the_constant_space():
    def build(b, x, y):
        return b.add(x, b.constant(np.arange(16, dtype=np.float32)))

    assert "addrspace(4) constant" in _emit(GPU_LIKE, _computation(build))
    neutral = _emit(NEUTRAL_TARGET, _computation(build))
    assert "addrspace" not in neutral and "internal constant [16 x float]" in neutral


def test_outlined_math_has_vector_copies_only_where_the_target_asks():
    def build(b, x, y):
        return b.power(x, y)

    cpu_like = _emit(NEUTRAL_TARGET, _computation(build, "f64"))
    assert "vector-function-abi-variant" in cpu_like and "<8 x double>" in cpu_like
    gpu = _emit(GPU_LIKE, _computation(build, "f64"))
    assert "vector-function-abi-variant" not in gpu and "x double>" not in gpu


def test_allocas_go_to_the_local_space_behind_a_generic_pointer():
    module = GPU_LIKE.new_module("m")
    k = define_kernel(module, GPU_LIKE, "k", 1)
    slot = k.ctx.alloca(ir.FloatType())
    k.builder.store(ir.Constant(ir.FloatType(), 1.0), slot)
    k.builder.ret_void()
    text = str(module)
    llvm.parse_assembly(text).verify()
    assert "alloca float, addrspace(5)" in text and "addrspacecast ptr addrspace(5)" in text


def test_a_policy_without_f64_keeps_f32_functions_in_f32():
    no_f64 = TargetSpec("no-f64", math=MathPolicy(f32_via_f64=False))
    ops = [
        lambda b, x, y: b.sine(x),
        lambda b, x, y: b.op(Opcode.ERF, (x,)),
        lambda b, x, y: b.power(x, y),
        lambda b, x, y: b.op(Opcode.ATAN2, (x, y)),
        lambda b, x, y: b.op(Opcode.EXPM1, (x,)),
        lambda b, x, y: b.op(Opcode.LOG1P, (x,)),
        lambda b, x, y: b.op(Opcode.CBRT, (x,)),
        lambda b, x, y: b.op(Opcode.RSQRT, (x,)),
        lambda b, x, y: b.op(Opcode.TAN, (x,)),
    ]
    for build in ops:
        assert "double" not in _emit(no_f64, _computation(build))
        assert "fpext" in _emit(NEUTRAL_TARGET, _computation(build))  # the CPU's f64 route
    assert "double" in _emit(no_f64, _computation(lambda b, x, y: b.sine(x), "f64"))
