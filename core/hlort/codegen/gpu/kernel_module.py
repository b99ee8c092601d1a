"""All GPU kernels of one module in one LLVM module, each made by the schedule that fits it.

``choose_schedule(comp)`` picks, for a fused computation (or one instruction wrapped as one):
"transpose" (a tiled shared-memory transpose, transpose_schedule.py), "split_row_reduce" (several
blocks per row, the last one finishing it: split_row_schedule.py) for few long rows such as a
full reduction, "row_reduce" (one block per row, row_schedule.py) for row fusions whose rows are
long enough, "loop" (a grid-stride loop over
the outputs, loop_schedule.py; reduces inside it, column reductions included, run one output
element per thread) for everything else the element generators support, or None with the
reason. Dots that no library call runs get the tiled dot kernel (``add_dot``,
dot_schedule.py); convolutions, sorts, scatters, select-and-scatters, FFTs, rng-bit-generators,
JAX's threefry calls, Cholesky and triangular solves get kernels of their own (``add_conv``,
...). A kernel takes the computation's parameters, then its outputs (the root's leaves), each
as one global pointer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hlort.codegen.gpu.cholesky_schedule import CholeskyPlan, emit_cholesky_kernel
from hlort.codegen.gpu.conv_schedule import ConvPlan, emit_conv_kernel
from hlort.codegen.gpu.dot_plan import DotPlan
from hlort.codegen.gpu.dot_schedule import emit_dot_kernel
from hlort.codegen.gpu.fft_schedule import FftPass, emit_fft_pass
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.im2col_schedule import Im2colPlan, emit_im2col_kernel
from hlort.codegen.gpu.launch import LaunchShape
from hlort.codegen.gpu.loop_schedule import emit_loop_kernel, root_outputs
from hlort.codegen.gpu.reduce_emitter import supports_loop_body
from hlort.codegen.gpu.rng_schedule import emit_rng_kernel, emit_threefry_kernel
from hlort.codegen.gpu.row_schedule import MIN_BLOCK_ROW, emit_row_kernel
from hlort.codegen.gpu.scatter_schedule import ScatterPlan, emit_scatter_kernel
from hlort.codegen.gpu.select_scatter_schedule import emit_select_and_scatter_kernel
from hlort.codegen.gpu.sort_schedule import GpuSortPlan, emit_sort_kernel, sort_output_count
from hlort.codegen.gpu.split_row_schedule import emit_split_row_kernel, plan_split_rows
from hlort.codegen.gpu.transpose_schedule import emit_transpose_kernel, plan_tiled_transpose
from hlort.codegen.gpu.triangular_schedule import TriangularPlan, emit_triangular_kernel
from hlort.codegen.llvm.row_fusion import plan_row_fusion
from hlort.errors import Unimplemented
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode


@dataclass(frozen=True)
class GpuKernel:
    """``scratch``: bytes of each temp buffer the kernel takes after its outputs; then, when
    ``counter_bytes``, a buffer of that many zero bytes that the kernel leaves zero again."""

    name: str
    schedule: str
    launch: LaunchShape
    num_args: int
    scratch: tuple[int, ...] = ()
    counter_bytes: int = 0


def choose_schedule(comp: Computation) -> tuple[str | None, str]:
    """(schedule, "") or (None, why no GPU kernel can compute ``comp``)."""
    outputs = root_outputs(comp)
    if any(not o.shape.is_array for o in outputs):
        return None, "an output is not an array"
    if any(p.shape.is_tuple or not p.shape.is_array for p in comp.parameters):
        return None, "a parameter is not an array"
    if plan_tiled_transpose(comp) is not None:
        return "transpose", ""
    if any(i.opcode is Opcode.REDUCE for i in comp.instructions):
        plan = plan_row_fusion(comp)
        if plan is not None:
            row = math.prod(plan.in_dims[d] for d in plan.reduced)
            if plan_split_rows(plan) is not None:
                return "split_row_reduce", ""
            if row >= MIN_BLOCK_ROW:
                return "row_reduce", ""
    if len({o.shape.dims for o in outputs}) != 1:
        return None, "its outputs have different shapes (no loop over one index space)"
    if not supports_loop_body(comp):
        bad = sorted(
            {
                i.opcode.value
                for i in comp.instructions
                if i.opcode not in (Opcode.PARAMETER, Opcode.TUPLE)
            }
        )
        return None, f"the GPU element generators do not cover it ({', '.join(bad)})"
    return "loop", ""


class GpuKernelModule:
    """Collects kernels into one LLVM module for ``target``."""

    def __init__(self, target: GpuTarget, name: str):
        self.target = target
        self.module = target.new_module(name)
        self.kernels: list[GpuKernel] = []

    def add(self, name: str, comp: Computation) -> GpuKernel:
        schedule, why = choose_schedule(comp)
        if schedule is None:
            raise Unimplemented(f"{comp.name}: {why}")
        nargs = len(comp.parameters) + len(root_outputs(comp))
        scratch, counter = (), 0
        if schedule == "split_row_reduce":
            split = plan_split_rows(plan_row_fusion(comp))
            scratch, counter = tuple(split.scratch_bytes), split.counter_bytes
            nargs += len(scratch) + 1
        fn = self.target.define_kernel(self.module, name, nargs)
        if schedule == "split_row_reduce":
            launch = emit_split_row_kernel(self.target, fn, comp, plan_row_fusion(comp), split)
        elif schedule == "row_reduce":
            launch = emit_row_kernel(self.target, fn, comp, plan_row_fusion(comp))
        elif schedule == "transpose":
            launch = emit_transpose_kernel(self.target, fn, comp, plan_tiled_transpose(comp))
        else:
            launch = emit_loop_kernel(self.target, fn, comp)
        kernel = GpuKernel(name, schedule, launch, nargs, scratch, counter)
        self.kernels.append(kernel)
        return kernel

    def add_dot(self, name: str, plan: DotPlan) -> GpuKernel:
        """The tiled dot kernel (dot_schedule.py): arguments lhs, rhs, result."""
        fn = self.target.define_kernel(self.module, name, 3)
        launch = emit_dot_kernel(self.target, fn, plan)
        kernel = GpuKernel(name, "dot", launch, 3)
        self.kernels.append(kernel)
        return kernel

    def add_scatter(self, name: str, comp: Computation, plan: ScatterPlan, phase: str) -> GpuKernel:
        """One of a scatter's kernels (scatter_schedule.py): arguments the wrapped scatter's
        parameters, then its outputs (which the program first fills with the operands), then
        the overwrite mode's winner scratch."""
        nargs = len(comp.parameters) + len(root_outputs(comp)) + (plan.mode == "overwrite")
        fn = self.target.define_kernel(self.module, name, nargs)
        launch = emit_scatter_kernel(self.target, fn, comp, plan, phase)
        scratch = (plan.scratch_bytes,) if plan.scratch_bytes and phase == "clear" else ()
        kernel = GpuKernel(name, f"scatter_{plan.mode}", launch, nargs, scratch)
        self.kernels.append(kernel)
        return kernel

    def add_conv(self, name: str, plan: ConvPlan) -> GpuKernel:
        """The direct convolution kernel (conv_schedule.py): arguments input, kernel, result."""
        fn = self.target.define_kernel(self.module, name, 3)
        launch = emit_conv_kernel(self.target, fn, plan)
        kernel = GpuKernel(name, "convolution", launch, 3)
        self.kernels.append(kernel)
        return kernel

    def add_im2col(self, name: str, plan: Im2colPlan) -> GpuKernel:
        """A large convolution's patch matrix (im2col_schedule.py): arguments input, col."""
        fn = self.target.define_kernel(self.module, name, 2)
        launch = emit_im2col_kernel(self.target, fn, plan)
        kernel = GpuKernel(name, "im2col", launch, 2)
        self.kernels.append(kernel)
        return kernel

    def add_cholesky(self, name: str, plan: CholeskyPlan) -> GpuKernel:
        """Cholesky (cholesky_schedule.py): arguments a, result, (potrf) info, then the f64
        factor scratch unless the result holds the factor."""
        scratch = (plan.scratch_bytes,) if plan.scratch_bytes else ()
        nargs = 2 + plan.lapack + len(scratch)
        fn = self.target.define_kernel(self.module, name, nargs)
        launch = emit_cholesky_kernel(self.target, fn, plan)
        kernel = GpuKernel(name, "cholesky", launch, nargs, scratch)
        self.kernels.append(kernel)
        return kernel

    def add_fft_pass(self, name: str, step: FftPass) -> GpuKernel:
        """One pass of an FFT (fft_schedule.py): arguments the pass's source, destination, and
        for a Bluestein axis's multiplying pass its table (a constant)."""
        count = 2 if step.table is None else 3
        fn = self.target.define_kernel(self.module, name, count)
        launch = emit_fft_pass(self.target, fn, step, *fn.buffers[:count])
        kernel = GpuKernel(name, "fft", launch, count)
        self.kernels.append(kernel)
        return kernel

    def add_rng(self, name: str, instr: Instruction) -> GpuKernel:
        """rng-bit-generator (rng_schedule.py): arguments state, new state, bits."""
        fn = self.target.define_kernel(self.module, name, 3)
        launch = emit_rng_kernel(self.target, fn, instr)
        kernel = GpuKernel(name, "rng", launch, 3)
        self.kernels.append(kernel)
        return kernel

    def add_threefry(self, name: str, count: int) -> GpuKernel:
        """JAX's threefry custom call on ``count`` elements (rng_schedule.py): arguments key0,
        key1, count0, count1, then the two output words."""
        fn = self.target.define_kernel(self.module, name, 6)
        launch = emit_threefry_kernel(self.target, fn, count)
        kernel = GpuKernel(name, "threefry", launch, 6)
        self.kernels.append(kernel)
        return kernel

    def add_triangular_solve(self, name: str, plan: TriangularPlan) -> GpuKernel:
        """Substitution (triangular_schedule.py): arguments a, b, result, then the f64
        solution scratch when the result is not f64."""
        scratch = (plan.scratch_bytes,) if plan.scratch_bytes else ()
        fn = self.target.define_kernel(self.module, name, 3 + len(scratch))
        launch = emit_triangular_kernel(self.target, fn, plan)
        kernel = GpuKernel(name, "triangular_solve", launch, 3 + len(scratch), scratch)
        self.kernels.append(kernel)
        return kernel

    def add_select_and_scatter(self, name: str, comp: Computation) -> GpuKernel:
        """Select-and-scatter (select_scatter_schedule.py): operand, source, init, result."""
        fn = self.target.define_kernel(self.module, name, 4)
        launch = emit_select_and_scatter_kernel(self.target, fn, comp)
        kernel = GpuKernel(name, "select_and_scatter", launch, 4)
        self.kernels.append(kernel)
        return kernel

    def add_sort(self, name: str, nparams: int, plan: GpuSortPlan) -> GpuKernel:
        """A sort or top-k kernel (sort_schedule.py): arguments the operands, the outputs, then
        the permutation scratch when the rows do not fit in shared memory."""
        scratch = (plan.scratch_bytes,) if plan.scratch_bytes else ()
        nargs = nparams + sort_output_count(plan) + len(scratch)
        fn = self.target.define_kernel(self.module, name, nargs)
        launch = emit_sort_kernel(self.target, fn, nparams, plan)
        kernel = GpuKernel(name, plan.schedule, launch, nargs, scratch)
        self.kernels.append(kernel)
        return kernel

    def ir_text(self) -> str:
        return str(self.module)

    def compile(self) -> bytes:
        return self.target.compile(self.ir_text())


__all__ = ["GpuKernel", "GpuKernelModule", "choose_schedule"]
