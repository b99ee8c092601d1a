"""The state every emitter function shares: the IR builder, the module, its target and its
declarations.

Kept tiny on purpose: elemental, math and loop emitters all take an :class:`IrContext` so they
can declare intrinsics once per module, build constants of the right type and ask the
:class:`TargetSpec` what the target allows (address spaces, math policy).
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.llvm_types import F32, F64, I1, I32, I64
from hlort.codegen.llvm.target_spec import TargetSpec


def _suffix(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_suffix(t.element)}"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.HalfType):
        return "f16"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    raise TypeError(t)


class _LocalAlloca(ir.instructions.AllocaInstr):
    """``alloca T, addrspace(N)``."""

    def __init__(self, block: ir.Block, t: ir.Type, space: int, name: str):
        super().__init__(block, t, None, name)
        self.type = ir.PointerType(addrspace=space)
        self.space = space

    def descr(self, buf: list[str]) -> None:
        buf.append(f"alloca {self.allocated_type}, addrspace({self.space})")
        if self.align is not None:
            buf.append(f", align {self.align}")


class IrContext:
    def __init__(self, module: ir.Module, builder: ir.IRBuilder, target: TargetSpec):
        self.module = module
        self.b = builder
        self.target = target

    # -- declarations --------------------------------------------------------------------------
    def function(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, ir.FunctionType(ret, args), name)

    def intrinsic(
        self,
        name: str,
        value: ir.Value,
        *more: ir.Value,
        ret: ir.Type | None = None,
        extra_types: tuple[ir.Type, ...] = (),
    ) -> ir.Value:
        """Call ``llvm.<name>.<type>`` on same-typed operands (plus ``extra_types`` args)."""
        t = value.type
        args = [value, *more]
        types = [t] * (1 + len(more) - len(extra_types)) + list(extra_types)
        fn = self.function(f"llvm.{name}.{_suffix(t)}", ret or t, types)
        return self.b.call(fn, args)

    def overloaded(
        self, name: str, ret: ir.Type, *args: ir.Value, types: tuple[ir.Type, ...]
    ) -> ir.Value:
        """Call ``llvm.<name>`` mangled by ``types``, the overloaded types in the intrinsic's
        order (``lrint``: result and operand, ``llvm.lrint.i32.f32``)."""
        mangled = ".".join(_suffix(t) for t in types)
        fn = self.function(f"llvm.{name}.{mangled}", ret, [a.type for a in args])
        return self.b.call(fn, list(args))

    def constant_table(self, name: str, t: ir.Type, values) -> ir.GlobalVariable:
        """An internal, 64-byte aligned constant array ``name`` of ``t`` (defined once per
        module): the lookup tables of the f64 math functions."""
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        values = list(values)
        ty = ir.ArrayType(t, len(values))
        table = ir.GlobalVariable(
            self.module, ty, name, addrspace=self.target.address_spaces.constant
        )
        table.global_constant = True
        table.linkage = "internal"
        table.align = 64
        table.initializer = ir.Constant(ty, [ir.Constant(t, v) for v in values])
        return table

    def alloca(self, t: ir.Type, name: str = "") -> ir.Value:
        """A stack slot of ``t`` in the target's local address space, as a generic pointer
        (AMDGPU keeps allocas in address space 5; a CPU's are plain allocas)."""
        spaces = self.target.address_spaces
        if spaces.local == spaces.generic:
            return self.b.alloca(t, name=name)
        slot = _LocalAlloca(self.b.block, t, spaces.local, name)
        self.b._insert(slot)  # what IRBuilder.alloca does; llvmlite has no address-space form
        return self.b.addrspacecast(slot, self.target.pointer())

    # -- constants and small helpers ------------------------------------------------------------
    @staticmethod
    def const(t: ir.Type, value) -> ir.Constant:
        """A scalar constant, or a splat for a vector type (vector-typed function bodies)."""
        if isinstance(t, ir.VectorType):
            return ir.Constant(t, [IrContext.const(t.element, value)] * t.count)
        if isinstance(t, ir.IntType):
            return ir.Constant(t, int(value) & ((1 << t.width) - 1))
        return ir.Constant(t, float(value))

    def f(self, t: ir.Type, value: float) -> ir.Constant:
        return self.const(t, float(value))

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        return self.intrinsic("fma", a, b, c)

    def horner(self, x: ir.Value, coefficients) -> ir.Value:
        """Polynomial, highest degree first, by fused multiply-adds."""
        acc = self.f(x.type, coefficients[0])
        for c in coefficients[1:]:
            acc = self.fma(acc, x, self.f(x.type, c))
        return acc

    def fabs(self, x: ir.Value) -> ir.Value:
        return self.intrinsic("fabs", x)

    def copysign(self, mag: ir.Value, sign: ir.Value) -> ir.Value:
        return self.intrinsic("copysign", mag, sign)

    def is_nan(self, x: ir.Value) -> ir.Value:
        return self.b.fcmp_unordered("uno", x, x)

    def select(self, cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(cond, a, b)

    def int_type_of(self, t: ir.Type) -> ir.Type:
        if isinstance(t, ir.VectorType):
            return ir.VectorType(self.int_type_of(t.element), t.count)
        return I64 if isinstance(t, ir.DoubleType) else I32

    def bits(self, x: ir.Value) -> ir.Value:
        return self.b.bitcast(x, self.int_type_of(x.type))

    def from_bits(self, x: ir.Value, t: ir.Type) -> ir.Value:
        return self.b.bitcast(x, t)


__all__ = ["IrContext", "TargetSpec", "F32", "F64", "I1", "I32", "I64"]
