"""The GPU compiler: an optimized module -> a GpuProgram for one GpuTarget.

The entry computation is walked in its schedule. Fusions, and elementwise, data-movement and
reduce instructions on their own, become kernels (kernel_module.py picks the schedule); dots that
fit a gemm become ``gemm`` library calls when the runtime has a BLAS library (``gemm_library``;
their epilogue is the fused kernel after them, as the fusion pass leaves it), and every other
real dot (integer dots, several contracting dimensions, batch dimensions anywhere, or any dot
without the library) runs hlort's own tiled dot kernel (dot_schedule.py);
parameters, constants, tuples and get-tuple-elements are buffer slots; replica-id and
partition-id are LaunchId steps (the runtime sets the launch's number in the slot).
While loops and conditionals are HostLoop and HostBranch steps (host_loop.py, host_branch.py)
when the runtime drives them. Everything else (custom calls, a fusion no schedule covers,
...) is a HostFallback step: the instruction runs on the reference interpreter between the
kernels, and every one is listed with its reason in the program (``GpuProgram.fallbacks``); the
GPU executable (hlort.plugin.base, above codegen) reports them and applies HLORT_FALLBACK, for a
fresh compile and a deserialized blob alike. Nothing falls back silently. Compiling needs no
GPU: the target lowers the kernels to PTX or an object offline.
"""

from __future__ import annotations

from hlort.codegen.gpu.cholesky_schedule import plan_cholesky
from hlort.codegen.gpu.conv_schedule import plan_convolution
from hlort.codegen.gpu.custom_call_steps import (
    as_topk,
    as_triangular_solve,
    custom_call_kind,
    host_call_reason,
    potrf_plan,
    zeros_computation,
)
from hlort.codegen.gpu.dot_plan import plan_dot
from hlort.codegen.gpu.fft_schedule import plan_fft
from hlort.codegen.gpu.gemm_step import gemm_spec
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.host_step import host_fallback_module
from hlort.codegen.gpu.im2col_schedule import plan_im2col
from hlort.codegen.gpu.kernel_module import GpuKernelModule, choose_schedule
from hlort.codegen.gpu.program import (
    Copy,
    GpuProgram,
    HostFallback,
    KernelInfo,
    KernelLaunch,
    LaunchId,
    LibraryCall,
)
from hlort.codegen.gpu.rng_schedule import plan_rng
from hlort.codegen.gpu.scatter_schedule import plan_scatter
from hlort.codegen.gpu.select_scatter_schedule import (
    plan_select_and_scatter,
    with_flat_computations,
)
from hlort.codegen.gpu.slot_table import SLOT_ALIGNMENT, SlotTable
from hlort.codegen.gpu.sort_schedule import plan_gpu_sort, sorted_instruction
from hlort.codegen.gpu.triangular_schedule import plan_triangular_solve
from hlort.errors import HlortError
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.passes.buffer_assignment import BufferAssignment, assign_buffers
from hlort.passes.fusion_policy import FusionPolicy
from hlort.passes.pass_options import PassOptions

# No step of their own: buffer slots (or, after-all, a token: no data, and the steps run in the
# schedule's order, which is every order a token asks for).
_STRUCTURAL = {
    Opcode.PARAMETER,
    Opcode.CONSTANT,
    Opcode.TUPLE,
    Opcode.GET_TUPLE_ELEMENT,
    Opcode.AFTER_ALL,
}
# Set by the runtime from the launch (LaunchId steps): which copy of the program this is.
_LAUNCH_IDS = {Opcode.REPLICA_ID: "replica", Opcode.PARTITION_ID: "partition"}
KERNEL_OPS = frozenset(
    {
        Opcode.BROADCAST,
        Opcode.RESHAPE,
        Opcode.TRANSPOSE,
        Opcode.SLICE,
        Opcode.PAD,
        Opcode.CONCATENATE,
        Opcode.REVERSE,
        Opcode.IOTA,
        Opcode.DYNAMIC_SLICE,
        Opcode.DYNAMIC_UPDATE_SLICE,
        Opcode.REDUCE,
        Opcode.BITCAST_CONVERT,
        Opcode.GATHER,
        Opcode.COPY,
        Opcode.REDUCE_WINDOW,
    }
)


# Ops that have no GPU kernel yet and run as host fallbacks (docs/gpu-kernels.md). Some cases of
# PARTLY_NATIVE_OPS fall back too, each with its reason: e.g. FFT axes of 2^31 points or
# more, sorts whose comparator has a transcendental on f64 values, custom calls other than the
# identity annotations, TopK, JAX's threefry, potrf and trsm (custom_call_steps.py).
HOST_FALLBACK_OPS = frozenset(
    {
        "conditional",
        "while",
        # collectives: host steps that meet the other GPUs through the launch's rendezvous
        "all-gather",
        "all-gather-done",
        "all-gather-start",
        "all-reduce",
        "all-reduce-done",
        "all-reduce-start",
        "all-to-all",
        "collective-broadcast",
        "collective-permute",
        "collective-permute-done",
        "collective-permute-start",
        "reduce-scatter",
    }
)
PARTLY_NATIVE_OPS = frozenset(
    {
        "bitcast-convert",
        "cholesky",
        "convolution",
        "custom-call",
        "dot",
        "fft",
        "reduce",
        "reduce-window",
        "rng-bit-generator",
        "scatter",
        "select-and-scatter",
        "sort",
        "topk",
        "triangular-solve",
    }
)


def is_byte_view(instr: Instruction) -> bool:
    """A bitcast-convert that changes the element width or has a complex side, between types
    that are neither pred nor sub-byte (s4/u4, one element per byte): its result is its
    operand's bytes as they lie (the narrower type's extra minor dimension is the bytes' order,
    as XLA's bitcast and the interpreter's little-endian view have it), so a device copy
    computes it. Equal-width real bitcasts stay elementwise kernels (they fuse)."""
    if instr.opcode is not Opcode.BITCAST_CONVERT:
        return False
    src, dst = instr.operands[0].shape.dtype, instr.shape.dtype
    whole_bytes = all(t.bits == 8 * t.itemsize and not t.is_pred for t in (src, dst))
    return whole_bytes and (src.itemsize != dst.itemsize or src.is_complex or dst.is_complex)


def wrap_instruction(instr: Instruction) -> Computation:
    """A computation holding just ``instr`` on fresh parameters (a one-op "fusion")."""
    comp = Computation(f"wrapped_{instr.name}")
    params = [
        comp.add_instruction(
            Instruction(Opcode.PARAMETER, o.shape, (), name=f"p{i}", parameter_number=i)
        )
        for i, o in enumerate(instr.operands)
    ]
    clone = comp.add_instruction(instr.clone_with(operands=params))
    if clone.shape.is_tuple:  # a variadic reduce(-window): its leaves, as a fusion root's
        leaves = [
            comp.add_instruction(Instruction(Opcode.GET_TUPLE_ELEMENT, e, [clone], {"index": k}))
            for k, e in enumerate(clone.shape.elements)
        ]
        clone = comp.add_instruction(Instruction(Opcode.TUPLE, clone.shape, leaves))
    comp.set_root(clone)
    return comp


def kernel_computation(instr: Instruction) -> tuple[Computation | None, str]:
    """The computation ``instr``'s kernel computes, or None and why it has none."""
    if instr.opcode is Opcode.FUSION:
        comp = instr.attrs["calls"]
    elif instr.is_elementwise or instr.opcode in KERNEL_OPS:
        variadic = instr.opcode in (Opcode.REDUCE, Opcode.REDUCE_WINDOW)
        arrays = instr.shape.is_array or (
            variadic and all(e.is_array for e in instr.shape.elements)
        )
        if not all(o.shape.is_array for o in instr.operands) or not arrays:
            return None, "its operands or result are not all arrays"
        comp = wrap_instruction(instr)
    else:
        return None, f"no GPU kernel schedule for {instr.opcode.value} yet"
    try:
        schedule, why = choose_schedule(comp)
    except HlortError as err:
        return None, err.message
    return (comp, "") if schedule is not None else (None, why)


def emits_one_kernel(comp: Computation) -> bool:
    """Whether a fused computation would become one GPU kernel (the fusion passes ask)."""
    try:
        return choose_schedule(comp)[0] is not None
    except HlortError:
        return False


def gpu_pass_options() -> PassOptions:
    """The pipeline a GPU plugin asks for: row epilogues join their reductions (softmax is one
    kernel), and only fusions that one kernel schedule covers are made."""
    return PassOptions(policy=FusionPolicy(row_epilogue_fusion=True, can_emit=emits_one_kernel))


def compile_gpu_program(
    module: Module,
    target: GpuTarget,
    donated=(),
    kernel_prefix: str = "",
    host_loops: bool = False,
    gemm_library: bool = True,
) -> GpuProgram:
    """Compile the optimized, scheduled ``module`` for ``target``. Every host fallback is a
    step of the program, with its reason (``GpuProgram.fallbacks``); ``kernel_prefix`` starts
    every kernel's name (programs whose PTX is assembled together need distinct names);
    ``host_loops`` compiles while loops and conditionals as HostLoop and HostBranch steps
    (condition, body and branches on the device) instead of host fallbacks, for runtimes that
    run them; ``gemm_library`` False (the runtime
    has no cuBLAS / rocBLAS) computes every dot with the tiled dot kernel instead of gemm calls,
    in loop bodies too."""
    entry = module.entry
    assignment = assign_buffers(module, donated=donated, alignment=SLOT_ALIGNMENT, in_place=False)
    slots = SlotTable(assignment)
    parameters = [
        s for p in sorted(entry.parameters, key=lambda p: p.parameter_number) for s in slots.of(p)
    ]
    walker = _Walker(module, target, kernel_prefix, host_loops, gemm_library)
    steps = walker.steps(assignment, slots)
    outputs, donation = _outputs(entry, assignment, slots, steps)
    binary = walker.kernels.compile() if walker.infos else b""
    program = GpuProgram(
        module.name,
        target.name,
        target.triple,
        target.binary_format,
        walker.kernels.ir_text(),
        binary,
        walker.infos,
        slots.slots,
        steps,
        parameters,
        outputs,
        entry.root.shape.is_tuple,
        slots.pool.arena_end,
        donation,
    )
    program.check()
    return program


class _Walker:
    """Turns the instructions of a computation, in schedule order, into steps."""

    def __init__(
        self,
        module: Module,
        target: GpuTarget,
        kernel_prefix: str,
        host_loops: bool,
        gemm_library: bool = True,
    ):
        self.module = module
        self.kernels = GpuKernelModule(target, f"{module.name}_gpu")
        self.infos: list[KernelInfo] = []
        self.kernel_prefix, self.host_loops = kernel_prefix, host_loops
        self.gemm_library = gemm_library

    def steps(self, assignment: BufferAssignment, slots: SlotTable) -> list:
        steps: list = []
        for instr in assignment.schedule:
            if instr.opcode not in _STRUCTURAL:
                step = self.step(instr, slots)
                steps.extend(step if isinstance(step, list) else [step])
        return steps

    def step(self, instr: Instruction, slots: SlotTable):
        if instr.opcode is Opcode.DOT:
            spec, why = gemm_spec(instr)
            args = tuple(
                slots.of(instr.operands[0]) + slots.of(instr.operands[1]) + slots.of(instr)
            )
            if spec is not None and self.gemm_library:
                return LibraryCall("gemm", args, spec, instr.name)
            plan, why = plan_dot(instr)
            if plan is not None:
                return self._dot_launch(instr, plan, args)
        elif instr.opcode is Opcode.SCATTER:
            plan, why = plan_scatter(instr)
            if plan is not None:
                return self._scatter_steps(instr, plan, slots)
        elif instr.opcode is Opcode.CONVOLUTION:
            plan, why = plan_convolution(instr)
            if plan is not None:
                patches, _ = plan_im2col(plan)  # large float layers: im2col + gemm
                if patches is not None:
                    return self._im2col_steps(instr, patches, slots)
                return self._simple_launch(instr, "convolution", slots, plan)
        elif instr.opcode is Opcode.CUSTOM_CALL:
            step, why = self._custom_call(instr, slots)
            if step is not None:
                return step
        elif instr.opcode in _LAUNCH_IDS:
            (dst,) = slots.of(instr)
            return LaunchId(_LAUNCH_IDS[instr.opcode], dst, instr.name)
        elif instr.opcode is Opcode.OPTIMIZATION_BARRIER or is_byte_view(instr):
            return self._byte_copies(instr, slots)
        elif instr.opcode is Opcode.RNG_BIT_GENERATOR:
            why = plan_rng(instr)
            if not why:
                kernel = self.kernels.add_rng(self._kernel_name(instr), instr)
                return self._operands_then_outputs(instr, kernel, slots)
        elif instr.opcode is Opcode.FFT:
            plan, why = plan_fft(instr)
            if plan is not None:
                return self._fft_steps(instr, plan, slots)
        elif instr.opcode is Opcode.CHOLESKY:
            plan, why = plan_cholesky(instr)
            if plan is not None:
                kernel = self.kernels.add_cholesky(self._kernel_name(instr), plan)
                return self._operands_then_outputs(instr, kernel, slots)
        elif instr.opcode is Opcode.TRIANGULAR_SOLVE:
            plan, why = plan_triangular_solve(instr)
            if plan is not None:
                return self._triangular_launch(instr, plan, slots)
        elif instr.opcode is Opcode.SELECT_AND_SCATTER:
            why = plan_select_and_scatter(instr)
            if not why:
                return self._simple_launch(instr, "select_and_scatter", slots)
        elif instr.opcode in (Opcode.SORT, Opcode.TOPK):
            comp = wrap_instruction(instr)
            plan, why = plan_gpu_sort(self.kernels.target, sorted_instruction(comp))
            if plan is not None:
                return self._sort_launch(instr, plan, slots)
        elif instr.opcode is Opcode.WHILE and self.host_loops:
            from hlort.codegen.gpu.host_loop import compile_host_loop

            loop, why = compile_host_loop(self, instr, slots)
            if loop is not None:
                return loop
        elif instr.opcode is Opcode.CONDITIONAL and self.host_loops:
            from hlort.codegen.gpu.host_branch import compile_host_branch

            branch, why = compile_host_branch(self, instr, slots)
            if branch is not None:
                return branch
        else:
            comp, why = kernel_computation(instr)
            if comp is not None:
                return self._launch(instr, comp, slots)
        inputs = tuple(s for o in instr.operands for s in slots.of(o))
        kind = instr.opcode.value
        if instr.opcode is Opcode.FUSION:
            kind = f"fusion({instr.attrs.get('kind', '')})".replace("FusionKind.", "")
        return HostFallback(
            instr.name,
            kind,
            why,
            host_fallback_module(self.module, instr),
            inputs,
            tuple(slots.of(instr)),
        )

    def _custom_call(self, instr: Instruction, slots: SlotTable):
        """(steps, "") for a custom call custom_call_steps recognizes, or (None, why not)."""
        kind = custom_call_kind(instr)
        if not kind:
            return None, host_call_reason(instr)
        if kind == "identity":
            return self._byte_copies(instr, slots), ""
        if kind == "zeros":
            return self._launch(instr, zeros_computation(instr), slots), ""
        if kind == "threefry":
            count = instr.operands[0].shape.size
            kernel = self.kernels.add_threefry(self._kernel_name(instr), count)
            return self._operands_then_outputs(instr, kernel, slots), ""
        if kind == "potrf":
            plan, why = potrf_plan(instr)
            if plan is None:
                return None, why
            kernel = self.kernels.add_cholesky(self._kernel_name(instr), plan)
            return self._operands_then_outputs(instr, kernel, slots), ""
        if kind == "trsm":
            solve, why = as_triangular_solve(instr)
            plan, why = plan_triangular_solve(solve) if solve is not None else (None, why)
            return (
                (None, why) if plan is None else (self._triangular_launch(instr, plan, slots), "")
            )
        topk = as_topk(instr)
        plan, why = plan_gpu_sort(self.kernels.target, sorted_instruction(wrap_instruction(topk)))
        if plan is None:
            return None, why
        kernel = self.kernels.add_sort(self._kernel_name(instr), 1, plan)
        return self._operands_then_outputs(instr, kernel, slots), ""

    def _scatter_steps(self, instr: Instruction, plan, slots: SlotTable) -> list:
        """Copies of the operands into the outputs, then the scatter's kernels."""
        n = (len(instr.operands) - 1) // 2
        outs = slots.of(instr)
        operands = [s for o in instr.operands[:n] for s in slots.of(o)]
        steps: list = [
            Copy(src, dst, slots.slots[dst].size, label=f"{instr.name} operand {k}")
            for k, (src, dst) in enumerate(zip(operands, outs, strict=True))
        ]
        flat = {**instr.attrs, "to_apply": plan.combiner or instr.attrs["to_apply"]}
        comp = wrap_instruction(instr.clone_with(attrs=flat))
        args = tuple(s for o in instr.operands for s in slots.of(o)) + tuple(outs)
        for phase in plan.phases:
            name = self._kernel_name(instr)
            kernel = self.kernels.add_scatter(name, comp, plan, phase)
            if kernel.scratch:  # the overwrite mode's winners, shared by its three kernels
                args += slots.scratch(kernel)
            self.infos.append(KernelInfo(name, kernel.schedule, len(args), instr.name))
            launch = kernel.launch
            steps.append(
                KernelLaunch(
                    name, launch.grid3(), launch.block3(), launch.shared_bytes, args, instr.name
                )
            )
        return steps

    def _im2col_steps(self, instr: Instruction, plan, slots: SlotTable) -> list:
        """The patch matrix into a temp, then the gemm (the library's, else the dot kernel)
        from it and the kernel into the result (im2col_schedule.py)."""
        (source,), (kernel,), (result,) = (slots.of(i) for i in (*instr.operands, instr))
        (col,) = slots.temps([plan.col_bytes], f"{instr.name} im2col")
        patches = self.kernels.add_im2col(self._kernel_name(instr), plan)
        steps = [self._launch_of(instr, patches, (source, col))]
        if self.gemm_library:
            steps.append(LibraryCall("gemm", (col, kernel, result), plan.gemm(), instr.name))
        else:
            dot, _ = plan_dot(plan.dot())
            steps.append(self._dot_launch(instr, dot, (col, kernel, result)))
        return steps

    def _byte_copies(self, instr: Instruction, slots: SlotTable) -> list:
        """An instruction whose result is its operands' bytes (an optimization barrier, a
        width-changing bitcast-convert): a device copy per array leaf whose result slot is not
        the operand's (no reordering crosses a barrier: the steps run in order; a token leaf
        has no slot and nothing to copy)."""
        sources = [s for o in instr.operands for s in slots.of(o)]
        return [
            Copy(src, dst, slots.slots[dst].size, label=f"{instr.name} {k}")
            for k, (src, dst) in enumerate(zip(sources, slots.of(instr), strict=True))
            if src != dst
        ]

    def _fft_steps(self, instr: Instruction, plan, slots: SlotTable) -> list:
        """One kernel per pass: operand -> scratch -> ... -> result, two scratches in turn."""
        (source,) = slots.of(instr.operands[0])
        (result,) = slots.of(instr)
        scratch = slots.temps(plan.scratch_bytes, f"{instr.name} fft scratch")
        steps, last = [], len(plan.passes) - 1
        for k, step in enumerate(plan.passes):
            src = source if k == 0 else scratch[(k - 1) % 2]
            dst = result if k == last else scratch[k % 2]
            kernel = self.kernels.add_fft_pass(self._kernel_name(instr), step)
            table = () if step.table is None else (slots.constant(step.table, kernel.name),)
            steps.append(self._launch_of(instr, kernel, (src, dst) + table))
        return steps

    def _simple_launch(self, instr: Instruction, kind: str, slots: SlotTable, plan=None):
        """A one-kernel op whose arguments are its operands, then its result."""
        name = self._kernel_name(instr)
        if kind == "convolution":
            kernel = self.kernels.add_conv(name, plan)
        else:
            flat = with_flat_computations(instr)
            kernel = self.kernels.add_select_and_scatter(name, wrap_instruction(flat))
        return self._operands_then_outputs(instr, kernel, slots)

    def _kernel_name(self, instr: Instruction) -> str:
        return f"{self.kernel_prefix}k{len(self.infos)}_{_symbol(instr.name)}"

    def _launch_of(self, instr: Instruction, kernel, args: tuple[int, ...]) -> KernelLaunch:
        """Record ``kernel`` and launch it on ``args``."""
        self.infos.append(KernelInfo(kernel.name, kernel.schedule, kernel.num_args, instr.name))
        launch = kernel.launch
        return KernelLaunch(
            kernel.name, launch.grid3(), launch.block3(), launch.shared_bytes, args, instr.name
        )

    def _operands_then_outputs(self, instr: Instruction, kernel, slots: SlotTable):
        """The launch of a kernel taking ``instr``'s operands, its outputs, then its scratch."""
        args = (
            tuple(s for o in instr.operands for s in slots.of(o))
            + tuple(slots.of(instr))
            + slots.scratch(kernel)
        )
        return self._launch_of(instr, kernel, args)

    def _triangular_launch(self, instr: Instruction, plan, slots: SlotTable) -> KernelLaunch:
        kernel = self.kernels.add_triangular_solve(self._kernel_name(instr), plan)
        return self._operands_then_outputs(instr, kernel, slots)

    def _sort_launch(self, instr: Instruction, plan, slots: SlotTable) -> KernelLaunch:
        kernel = self.kernels.add_sort(self._kernel_name(instr), len(instr.operands), plan)
        return self._operands_then_outputs(instr, kernel, slots)

    def _dot_launch(self, instr: Instruction, plan, args: tuple[int, ...]) -> KernelLaunch:
        return self._launch_of(instr, self.kernels.add_dot(self._kernel_name(instr), plan), args)

    def _launch(self, instr: Instruction, comp: Computation, slots: SlotTable) -> KernelLaunch:
        kernel = self.kernels.add(self._kernel_name(instr), comp)
        return self._operands_then_outputs(instr, kernel, slots)


def _outputs(
    entry: Computation, assignment: BufferAssignment, slots: SlotTable, steps: list
) -> tuple[list[int], dict[int, int]]:
    """The output slots (copies added where an output is a parameter, a constant or a repeat)
    and the donation map from buffer assignment's output aliases."""
    leaf_numbers = {index: k for k, (index, _) in enumerate(_leaf_indices(entry.root.shape))}
    aliases = {leaf_numbers[i]: p for i, p in assignment.output_aliases.items()}
    outputs, seen = [], set()
    for k, sid in enumerate(slots.of(entry.root)):
        slot = slots.slots[sid]
        aliased = k in aliases and slot.kind == "parameter"
        if (slot.kind in ("parameter", "constant") and not aliased) or sid in seen:
            new = slots.fresh(slot, "output", f"{slot.label} (output copy)")
            steps.append(Copy(sid, new, slot.size, label=f"output {k}"))
            sid = new
        seen.add(sid)
        outputs.append(sid)
    donation = {p: k for k, p in aliases.items()}
    return outputs, donation


def _leaf_indices(shape, prefix=()):
    if shape.is_tuple:
        out = []
        for k, e in enumerate(shape.elements):
            out.extend(_leaf_indices(e, prefix + (k,)))
        return out
    return [(prefix, shape)] if shape.is_array else []


def _symbol(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


__all__ = [
    "HOST_FALLBACK_OPS",
    "PARTLY_NATIVE_OPS",
    "compile_gpu_program",
    "emits_one_kernel",
    "gpu_pass_options",
    "kernel_computation",
    "wrap_instruction",
]
