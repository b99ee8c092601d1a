"""Whole-op kernels: instructions compiled as one dedicated kernel rather than an element loop.

sort and top-k (``sort_kernel.py``) and rng-bit-generator (``rng_kernel.py``) do not produce
elements independently, so the fused emitter cannot generate them; a wrapped instruction of
these ops (a computation whose root is the op on parameters) gets its own kernel here.
``kernel_builder.classify`` and ``KernelModule.add`` consult this table first.
"""

from __future__ import annotations

from hlort.codegen.llvm.target_spec import TargetSpec
from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode

_SORTS = (Opcode.SORT, Opcode.TOPK)


def classify_op_kernel(comp: Computation) -> str | None:
    """ "sort" or "rng" when ``comp`` is one such op this module compiles, else None."""
    root = comp.root
    if root is None:
        return None
    if root.opcode in _SORTS:
        from hlort.codegen.llvm.sort_plan import plan_sort  # imported for a sort only

        return "sort" if plan_sort(root) is not None else None
    if root.opcode is Opcode.RNG_BIT_GENERATOR:
        from hlort_cpu.codegen.rng_kernel import supports_rng

        return "rng" if supports_rng(root) else None
    return None


def emit_op_kernel(module, target: TargetSpec, name: str, comp: Computation, kind: str):
    """Emit the kernel of ``kind`` (from :func:`classify_op_kernel`); returns its KernelInfo."""
    if kind == "sort":
        from hlort_cpu.codegen.sort_kernel import emit_sort_kernel

        return emit_sort_kernel(module, target, name, comp)
    from hlort_cpu.codegen.rng_kernel import emit_rng_kernel

    return emit_rng_kernel(module, target, name, comp)
