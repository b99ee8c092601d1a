"""Why :func:`classify` found no kernel for a computation, in words a user can act on.

The cpu plugin reports every instruction it runs on the reference interpreter with a reason
(HLORT_FALLBACK, hlort.plugin.base.fallback_policy). ``classify`` answers only yes or no, so
this module looks again, in the same order of checks, for the first thing in the way.
"""

from __future__ import annotations

from hlort.codegen.llvm.complex_values import is_element_dtype
from hlort.codegen.llvm.fused_emitter import supports_instruction, supports_scalar_computation
from hlort.codegen.llvm.llvm_types import NARROW
from hlort.codegen.llvm.row_fusion import folds_in_tree
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort_cpu.codegen.column_reduce import plan_column
from hlort_cpu.codegen.hero_kernels import HERO_KINDS

_SCALAR_CALLS = {*HERO_KINDS, Opcode.REDUCE}
"""Heroes whose called computations (the op table's ``called``) the emitter compiles inline."""
_OWN_KERNEL = {*_SCALAR_CALLS, Opcode.SORT, Opcode.TOPK, Opcode.RNG_BIT_GENERATOR}


def _describe(instr: Instruction) -> str:
    """As the instruction reads in HLO text, without operands: ``name = shape opcode``."""
    return f"{instr.name} = {instr.shape} {instr.opcode.value}"


def _bad_type(instr: Instruction) -> str | None:
    for value in (instr, *instr.operands):
        for leaf in value.shape.leaf_shapes():
            dtype = getattr(leaf, "dtype", None)
            if dtype is None or not is_element_dtype(dtype):
                return f"{_describe(instr)} has a {leaf} value, which the emitter has no type for"
    return None


def why_not_compiled(comp: Computation) -> str:
    """A one-line reason ``comp`` (a fusion, or one instruction wrapped as one) is no kernel."""
    root = comp.root
    body = [i for i in comp.instructions if not (i is root and i.opcode is Opcode.TUPLE)]
    for instr in body:
        bad = _bad_type(instr)
        if bad is not None:
            return bad
    heroes = [i for i in body if i.opcode in _OWN_KERNEL]
    for instr in heroes:
        keys = instr.opcode.info.called if instr.opcode in _SCALAR_CALLS else ()
        for key in keys:
            called = instr.attrs.get(key)
            if isinstance(called, Computation) and not supports_scalar_computation(called):
                return (
                    f"the {key} computation of {_describe(instr)} is not a scalar computation "
                    "the emitter compiles"
                )
    others = [i for i in body if i not in heroes]
    for instr in others:
        if not supports_instruction(instr):
            return f"the fused loop emitter does not generate {_describe(instr)}"
    reduces = [i for i in body if i.opcode is Opcode.REDUCE]
    column = plan_column(comp, list(root.operands) if root.opcode is Opcode.TUPLE else [root])
    for r in reduces:
        if folds_in_tree(r) and column is not None and column.epilogue:
            narrow = next(o.shape.dtype for o in r.operands if o.shape.dtype in NARROW)
            return (
                f"{_describe(r)} reduces {narrow} over leading dimensions with a reducer the "
                "interpreter folds in a tree, and elementwise code follows it in the fusion: "
                "the tree-order column kernel writes the reductions only"
            )
    if reduces:
        listed = ", ".join(_describe(r) for r in reduces)
        return (
            f"no row, column or split reduction kernel takes {listed} with the "
            "instructions around it"
        )
    for instr in heroes:
        if instr.opcode in (Opcode.SORT, Opcode.TOPK):
            return (
                f"the sort kernel has no plan for {_describe(instr)}: its comparator has an "
                "op whose compiled rounding could differ from the interpreter's (exp, log, "
                "...), which could change the order, or its operands are of no compiled type"
            )
    if heroes:
        return f"{_describe(heroes[0])} is not in a form its kernel takes"
    if root.opcode is Opcode.TUPLE:
        return "a multi-output loop fusion whose outputs differ in shape"
    return "no cpu kernel form (loop, reduction, transpose, hero) matches it"
