"""Long math functions emitted once per module, with vector copies the loop vectorizer calls.

Inlining a long body (f64 pow: ~150 instructions of double-double arithmetic) into every fused
loop costs LLVM time at each use, and when its operands are loop-invariant (a broadcast scalar)
LLVM 22's VPlan unroller checks uniformity by an unmemoized walk over operands
(``vputils::isUniformAcrossVFsAndUFs``) that is exponential in the depth of add/select chains:
minutes for one pow (the old inline double-double form). Instead the body is emitted once per
module, generic over its type: an
internal ``noinline`` scalar function plus ``<2|4|8 x double>`` copies (the target's
``MathPolicy.vector_variant_lanes``; none on a target without them), named by the
``vector-function-abi-variant`` attribute (VFABI ``_LLVM_`` mangling, as ``#pragma omp declare
simd`` does). The loop vectorizer then replaces the scalar call by one call per vector at the
width it picks; scalar code calls the scalar function. ``llvm.compiler.used`` keeps the copies
alive until the vectorizer runs.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir
from llvmlite.ir.values import FunctionAttributes

from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import PTR
from hlort.codegen.llvm.target_spec import TargetSpec

_USED = "llvm.compiler.used"

Body = Callable[..., ir.Value]  # (ctx, *operands) -> result


class _Attributes(FunctionAttributes):
    """llvmlite's function attributes plus LLVM string attributes (``"key"="value"``)."""

    def add(self, name: str) -> None:
        if name.startswith('"'):
            set.add(self, name)
        else:
            super().add(name)


def call_outlined(ctx: IrContext, name: str, body: Body, *args: ir.Value) -> ir.Value:
    """``body(args)`` as a call to ``name``, defined (with its vector copies) on first use.

    ``body`` must emit IR generic over the operand type (scalar or vector); it may add blocks
    and returns its result in the block the builder is left at.
    """
    fn = ctx.module.globals.get(name)
    if fn is None:
        fn = _define(ctx.module, ctx.target, name, body, args[0].type, len(args))
    return ctx.b.call(fn, list(args))


def _define(
    module: ir.Module, target: TargetSpec, name: str, body: Body, t: ir.Type, arity: int
) -> ir.Function:
    lanes_list = target.math.vector_variant_lanes
    variants = []
    for lanes in lanes_list:
        vt = ir.VectorType(t, lanes)
        variants.append(
            _function(module, target, f"{name}_v{lanes}", body, vt, arity, ["noinline"])
        )
    if not variants:
        return _function(module, target, name, body, t, arity, ["noinline", "readnone"])
    mangled = [
        f"_ZGV_LLVM_N{lanes}{'v' * arity}_{name}({v.name})"
        for lanes, v in zip(lanes_list, variants, strict=True)
    ]
    attribute = f'"vector-function-abi-variant"="{",".join(mangled)}"'
    fn = _function(module, target, name, body, t, arity, ["noinline", "readnone", attribute])
    _keep_alive(module, variants)
    return fn


def _function(
    module: ir.Module,
    target: TargetSpec,
    name: str,
    body: Body,
    t: ir.Type,
    arity: int,
    attributes: list[str],
) -> ir.Function:
    """An internal function of ``arity`` operands of type t. ``readnone`` goes on the scalar one
    only: LLVM infers it there even through table loads, but not through masked gathers."""
    fn = ir.Function(module, ir.FunctionType(t, [t] * arity), name)
    fn.linkage = "internal"
    fn.attributes = _Attributes(["nounwind", *attributes])
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(body(IrContext(module, b, target), *fn.args))
    return fn


def _keep_alive(module: ir.Module, fns: list[ir.Function]) -> None:
    """Add ``fns`` to ``llvm.compiler.used`` (one per module, so it grows in place)."""
    refs = [ir.FormattedConstant(PTR, fn.get_reference()) for fn in fns]
    used = module.globals.get(_USED)
    if used is None:
        used = ir.GlobalVariable(module, ir.ArrayType(PTR, 0), _USED)
        used.linkage = "appending"
        used.section = "llvm.metadata"
        used.initializer = ir.Constant(used.value_type, [])
    refs = list(used.initializer.constant) + refs
    used.value_type = ir.ArrayType(PTR, len(refs))
    used.initializer = ir.Constant(used.value_type, refs)
