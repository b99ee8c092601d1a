"""A CPU kernel's launch description, and the prologue every fused-computation kernel shares.

``buffers`` holds the fused computation's parameters in order, then its outputs (the leaves of
the root's shape), then the scratch its schedule asks for; ``[begin, end)`` is a range of outer
iterations out of ``KernelInfo.extent`` that the runtime splits across threads.
"""

from __future__ import annotations

import llvmlite.ir as ir

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
    module: ir.Module, target: TargetSpec, name: str, comp: Computation, n_out: int
):
    """Declare kernel ``name`` for ``comp`` with ``n_out`` output buffers and open its body;
    returns (function, builder, ctx, parameter pointers, output pointers, begin, end)."""
    n_in = len(comp.parameters)
    k = define_kernel(module, target, name, n_in + n_out)
    return k.function, k.builder, k.ctx, k.buffers[:n_in], k.buffers[n_in:], k.begin, k.end
