"""Counted loops in LLVM IR, shaped so LLVM's loop vectorizer recognizes them.

A loop may carry an interleave hint (``llvm.loop.interleave.count`` metadata); how many a target
asks for is the target's schedule's choice (the CPU's: hlort_cpu.codegen.interleave).
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from hlort.codegen.llvm.llvm_types import I64


def emit_loop(
    b: ir.IRBuilder,
    start: ir.Value,
    stop: ir.Value,
    body: Callable[[ir.Value], None],
    name: str = "loop",
    interleave: int = 0,
) -> None:
    """``for i in range(start, stop): body(i)``; the builder ends after the loop.

    ``interleave`` > 1 asks the vectorizer for that many independent vector iterations.
    """
    fn = b.block.function
    pre = b.block
    loop = fn.append_basic_block(f"{name}.body")
    after = fn.append_basic_block(f"{name}.end")
    b.cbranch(b.icmp_signed("<", start, stop), loop, after)
    b.position_at_end(loop)
    i = b.phi(I64, name=f"{name}.i")
    i.add_incoming(start, pre)
    body(i)
    nxt = b.add(i, ir.Constant(I64, 1), name=f"{name}.next", flags=("nsw",))
    i.add_incoming(nxt, b.block)
    latch = b.cbranch(b.icmp_signed("<", nxt, stop), loop, after)
    if interleave > 1:
        latch.set_metadata("llvm.loop", _loop_id(b.module, interleave))
    b.position_at_end(after)


def _loop_id(module: ir.Module, interleave: int) -> ir.MDValue:
    """A fresh self-referencing loop ID carrying ``llvm.loop.interleave.count``."""
    hint = module.add_metadata(
        [
            ir.MetaDataString(module, "llvm.loop.interleave.count"),
            ir.Constant(ir.IntType(32), interleave),
        ]
    )
    count = getattr(module, "_hlort_loop_ids", 0)
    module._hlort_loop_ids = count + 1
    loop = module.add_metadata([hint, ir.MetaDataString(module, f"hlort.loop.{count}")])
    loop.operands = (loop, hint)  # the self reference makes each loop's ID distinct
    return loop


def emit_nest(
    b: ir.IRBuilder,
    extents: list[int],
    body: Callable[[list[ir.Value]], None],
    name: str = "nest",
    interleave: int = 0,
) -> None:
    """Nested loops over ``extents`` (outermost first); ``body`` gets the induction values;
    ``interleave`` applies to the innermost loop."""
    values: list[ir.Value] = []

    def level(k: int) -> None:
        if k == len(extents):
            body(list(values))
            return

        def inner(i: ir.Value) -> None:
            values.append(i)
            level(k + 1)
            values.pop()

        emit_loop(
            b,
            ir.Constant(I64, 0),
            ir.Constant(I64, extents[k]),
            inner,
            f"{name}{k}",
            interleave if k == len(extents) - 1 else 0,
        )

    level(0)
