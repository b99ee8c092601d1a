"""A CPU kernel's launch description, and the prologue every fused-computation kernel shares.

``buffers`` holds the fused computation's parameters in order, then its outputs (the leaves of
the root's shape), then the scratch its schedule asks for; ``[begin, end)`` is a range of outer
iterations out of ``KernelInfo.extent`` that the runtime splits across threads.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.kernel_abi import define_kernel
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort.ir.computation import Computation
from hlort.lazy_dataclass import dataclass
from hlort.shape import ArrayShape


@dataclass(frozen=True)
class KernelInfo:
    name: str
    kind: str  # "loop" | "row_reduce" | "column_reduce" | a hero kind (hero_kernels.py)
    num_inputs: int
    output_shapes: tuple[ArrayShape, ...]
    extent: int
    elements_per_iteration: int
    split: bool = False  # [0, extent) in parallel, then iteration extent alone (a scratch
    # buffer of ``extent`` elements follows the outputs: split reduces' partials)
    scratch_bytes: int = 0  # > 0: a scratch buffer this long, last, for each thread's range

    @property
    def parallel(self) -> bool:
        return self.extent > 1


def open_fusion_kernel(
    module: ir.Module,
    target: TargetSpec,
    name: str,
    comp: Computation,
    n_out: int,
    noalias: bool = False,
):
    """Declare kernel ``name`` for ``comp`` with ``n_out`` output buffers and open its body;
    returns (function, builder, ctx, parameter pointers, output pointers, begin, end).

    ``noalias``: the caller never lets an output overlap another buffer of the call (the entry's
    kernel thunks: outputs are fresh or arena bytes of no live value). The body is then an
    always-inlined function of (table, begin, end, each buffer as a ``noalias`` pointer), so the
    loop vectorizer needs no runtime overlap checks between the buffers: with many buffers those
    checks cost LLVM more than the kernel (the AdamW step's 19-buffer column kernel: 68 ms to
    optimize, 41 of them the SLP vectorizer on the checks)."""
    n_in = len(comp.parameters)
    k = define_kernel(module, target, name, n_in + n_out)
    if not noalias:
        return k.function, k.builder, k.ctx, k.buffers[:n_in], k.buffers[n_in:], k.begin, k.end
    table = k.function.args[0]
    types = [arg.type for arg in k.function.args] + [buffer.type for buffer in k.buffers]
    body = ir.Function(module, ir.FunctionType(ir.VoidType(), types), f"{name}.body")
    body.linkage = "internal"
    body.attributes.add("alwaysinline")
    body.attributes.add("nounwind")
    for arg in body.args[3:]:
        arg.add_attribute("noalias")
    k.builder.call(body, [table, k.begin, k.end, *k.buffers])
    k.builder.ret_void()
    b = ir.IRBuilder(body.append_basic_block("entry"))
    ptrs = list(body.args[3:])
    ctx = IrContext(module, b, target)
    return body, b, ctx, ptrs[:n_in], ptrs[n_in:], body.args[1], body.args[2]
