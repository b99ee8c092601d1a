"""Softmax's last step, ``e / sum(e)``, by one reciprocal per row instead of a division each.

A vdivps is some 5 cycles a vector on the development host (AVX-512), a quarter of what a
softmax row costs. With r = 1 / s once per row, quotient_by_reciprocal (float_math.py: one
product, two fma) gives the division's bits whenever nothing underflows: s < 2**100, every
numerator 0 or >= 2**-100 and every quotient >= 2**-100. The row loop checks that once per
row, after the sum: the sum's loop also keeps the row's smallest numerator (an unsigned
minimum of the bits, one vpminud a vector: the numerators are >= 0 or NaN, whose bits sort
above every number's), and a row that fails (zero-sum, NaN or infinite sums, rows with a
numerator below 2**-100 or an exact 0: masked scores, whose quotient would be exact too but
is not worth a second fold per vector) runs the element loop with true divisions, as before.
So the results are bit-identical on every row.

Taken for an f32 ``divide(x, broadcast(s))`` where s is the row's add-reduce of that very x
from a zero init, and x is an exp (so >= 0 or NaN, and every x <= s: a quotient is <= 1).
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from hlort import dtypes
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, I1, I32
from hlort.codegen.llvm.row_fusion import RowEmitter, RowPlan, row_source
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import variadic_reducer_opcodes
from hlort_cpu.codegen import code_settings

BY_RECIPROCAL = True  # False: every row divides (tests compare the two)
code_settings.declare(__name__, "BY_RECIPROCAL")
_LIMIT = 2.0**100
_ALL_ONES = ir.Constant(I32, -1)


def _zero_constant(x: Instruction) -> bool:
    if x.opcode is Opcode.BROADCAST:
        x = x.operands[0]
    if x.opcode is not Opcode.CONSTANT:
        return False
    literal = np.asarray(x.literal)
    return literal.size == 1 and literal.dtype.kind == "f" and float(literal.flat[0]) == 0.0


def sum_quotients(plan: RowPlan) -> dict[Instruction, Instruction]:
    """{divide: the add-reduce of its numerator} for the divides this file answers."""
    found = {}
    users = set()
    for out in plan.outputs:
        users.update(_element_divides(out, plan))
    for d in users:
        x, bc = d.operands
        r = row_source(bc.operands[0])
        if (
            r in plan.reduces
            and len(r.operands) == 2
            and r.operands[0] is x
            and x.opcode is Opcode.EXP
            and variadic_reducer_opcodes(r.attrs["to_apply"]) == (Opcode.ADD,)
            and _zero_constant(r.operands[1])
        ):
            found[d] = r
    return found


def _element_divides(out: Instruction, plan: RowPlan) -> list[Instruction]:
    """The f32 divides by a broadcast row value among the element-level values ``out`` reads."""
    seen, stack, divides = set(), [out], []
    while stack:
        i = stack.pop()
        if i in seen or i in plan.row_level or i.opcode is Opcode.REDUCE:
            continue
        seen.add(i)
        if (
            i.opcode is Opcode.DIVIDE
            and i.shape.dtype is dtypes.F32
            and i.shape.dims == plan.in_dims
            and i.operands[1].opcode is Opcode.BROADCAST
        ):
            divides.append(i)
        stack.extend(i.operands)
    return divides


class RowQuotients:
    """The smallest-numerator folds and the per-row check; allocate before the loops."""

    def __init__(self, b: ir.IRBuilder, plan: RowPlan):
        self.divides = sum_quotients(plan)
        self.least = {r: b.alloca(I32) for r in set(self.divides.values())}

    def __bool__(self) -> bool:
        return bool(self.divides)

    def start_row(self, b: ir.IRBuilder) -> None:
        for slot in self.least.values():
            b.store(_ALL_ONES, slot)

    def keep(self, ctx: IrContext, r: Instruction, values: list[ir.Value]) -> None:
        """In reduce ``r``'s loop: fold the element's numerator into the row's smallest."""
        slot = self.least.get(r)
        if slot is None:
            return
        b = ctx.b
        fn = ctx.function("llvm.umin.i32", I32, [I32, I32])
        b.store(b.call(fn, [b.load(slot, typ=I32), b.bitcast(values[0], I32)]), slot)

    def exact(self, ctx: IrContext, em: RowEmitter) -> ir.Value:
        """After the reduces: sets ``em``'s reciprocals (one division per divisor) and returns
        the i1 "every quotient of this row is exact from them"."""
        b = ctx.b
        ok = ir.Constant(I1, 1)
        for d, r in self.divides.items():
            row_value = d.operands[1].operands[0]
            s = em.value(row_value, em.row_index(row_value.shape.dims))
            low = b.bitcast(b.load(self.least[r], typ=I32), F32)
            ok = b.and_(ok, b.fcmp_ordered("<", s, ctx.f(F32, _LIMIT)))
            ok = b.and_(ok, b.fcmp_ordered(">=", low, ctx.f(F32, 1.0 / _LIMIT)))
            ok = b.and_(ok, b.fcmp_ordered(">=", b.fmul(low, ctx.f(F32, _LIMIT)), s))
            em.reciprocals[d] = b.fdiv(ctx.f(F32, 1.0), s)
        return ok
