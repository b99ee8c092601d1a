"""Kernels shaped by their root op (XLA's "hero"): reduce-window, scatter, select-and-scatter,
and channels-last convolutions (conv_kernel.py).

Their loops follow the hero rather than the output elements one by one: a reduce-window folds a
window per output element, a scatter copies its operand and then walks its updates, a
select-and-scatter searches windows and scatters into the positions it selects. Elementwise and
index-mapped producers of a reduce-window (the fusion pass makes such kInput fusions) are
evaluated per window position by the FusedEmitter. ``KernelModule`` asks :func:`classify_hero`
first and builds these with :func:`emit_hero_kernel`.
"""

from __future__ import annotations

import importlib

import llvmlite.ir as ir

from hlort.codegen.llvm.complex_values import is_element_dtype
from hlort.codegen.llvm.fused_emitter import supports_instruction, supports_scalar_computation
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort_cpu.codegen.hero_launch import HeroLaunch

HERO_KINDS = {
    Opcode.REDUCE_WINDOW: "reduce_window",
    Opcode.SCATTER: "scatter",
    Opcode.SELECT_AND_SCATTER: "select_and_scatter",
    Opcode.CONVOLUTION: "convolution",
}


def classify_hero(comp: Computation) -> str | None:
    """The hero kind when ``comp``'s root is a hero this emitter compiles, else None."""
    root = comp.root
    kind = HERO_KINDS.get(root.opcode)
    if kind is None:
        return None
    if kind == "convolution":  # channels-last f32/f64 only; the rest is the im2col thunk's
        from hlort_cpu.codegen.conv_kernel import plan_conv

        return kind if plan_conv(comp) is not None else None
    if not root.shape.leaf_shapes() or any(
        not is_element_dtype(s.dtype) for s in root.shape.leaf_shapes()
    ):
        return None
    if any(not o.shape.is_array or not is_element_dtype(o.shape.dtype) for o in root.operands):
        return None
    if not all(supports_scalar_computation(root.attrs[k]) for k in root.opcode.info.called):
        return None
    if root.opcode is Opcode.SCATTER:
        indices = root.operands[(len(root.operands) - 1) // 2]
        if not indices.shape.dtype.is_integer:
            return None
    if root.opcode in (Opcode.REDUCE_WINDOW, Opcode.SELECT_AND_SCATTER) and any(
        w.window_reversal for w in root.attrs["window"]
    ):
        return None
    producers = [i for i in comp.instructions if i is not root]
    return kind if all(_producer_ok(i) for i in producers) else None


def _producer_ok(instr: Instruction) -> bool:
    return instr.opcode not in HERO_KINDS and supports_instruction(instr)


def emit_hero_kernel(
    module: ir.Module, target: TargetSpec, name: str, comp: Computation, kind: str
) -> HeroLaunch:
    emitter_module, function = _EMITTERS[kind]
    emit = getattr(importlib.import_module(emitter_module), function)
    return emit(module, target, name, comp)


# kind -> (module, function): each emitter is imported when a kernel of its kind is emitted,
# not in every process's first compile
_EMITTERS: dict[str, tuple[str, str]] = {
    "reduce_window": ("hlort_cpu.codegen.reduce_window_kernel", "emit_reduce_window"),
    "convolution": ("hlort_cpu.codegen.conv_kernel", "emit_convolution"),
    "scatter": ("hlort_cpu.codegen.scatter_kernel", "emit_scatter"),
    "select_and_scatter": (
        "hlort_cpu.codegen.select_and_scatter_kernel",
        "emit_select_and_scatter",
    ),
}
