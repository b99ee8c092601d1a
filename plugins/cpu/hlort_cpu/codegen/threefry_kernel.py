"""The elementwise Threefry-2x32 kernel behind JAX's ``cu_threefry2x32`` custom call.

``(out0, out1)[i] = threefry2x32(key0[i], key1[i], count0[i], count1[i])`` on u32 arrays of one
shape, with the rounds of :func:`hlort.codegen.llvm.rng_bits.threefry2x32` (the rng-bit-generator
kernel's, bit-exact with ``hlort.interpreter.prng``). Shape-generic: the element count is the
iteration range, so one compiled kernel serves every shape.

``void k(ptr* buffers, i64 begin, i64 end)``: buffers = key0, key1, count0, count1, out0, out1.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.kernel_abi import define_kernel
from hlort.codegen.llvm.llvm_types import I32
from hlort.codegen.llvm.loops import emit_loop
from hlort.codegen.llvm.rng_bits import threefry2x32
from hlort.codegen.llvm.target_spec import TargetSpec


def emit_threefry_elementwise(module: ir.Module, target: TargetSpec, name: str) -> None:
    """Add kernel ``name`` (see the module docstring) to ``module``."""
    kernel = define_kernel(module, target, name, 6)
    b, ptrs, begin, end = kernel.builder, kernel.buffers, kernel.begin, kernel.end

    def element(i: ir.Value) -> None:
        words = [b.load(b.gep(p, [i], inbounds=True, source_etype=I32), typ=I32) for p in ptrs[:4]]
        for out, value in zip(ptrs[4:], threefry2x32(b, *words), strict=True):
            b.store(value, b.gep(out, [i], inbounds=True, source_etype=I32))

    emit_loop(b, begin, end, element, "element")
    b.ret_void()
