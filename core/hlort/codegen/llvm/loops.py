"""Counted loops in LLVM IR, shaped so LLVM's loop vectorizer recognizes them.

A loop may carry an interleave hint (``llvm.loop.interleave.count`` metadata); how many a target
asks for is the target's schedule's choice (the CPU's: hlort_cpu.codegen.interleave). It may
also carry other ``llvm.loop`` hints by name (``NO_VECTORIZE``, ``NO_UNROLL``), for schedules
that know which of two nested loops the vectorizer should take.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import llvmlite.ir as ir

from hlort.codegen.llvm.llvm_types import I64


def emit_loop(
    b: ir.IRBuilder,
    start: ir.Value,
    stop: ir.Value,
    body: Callable[[ir.Value], None],
    name: str = "loop",
    interleave: int = 0,
    hints: Sequence[str] = (),
) -> None:
    """``for i in range(start, stop): body(i)``; the builder ends after the loop.

    ``interleave`` > 1 asks the vectorizer for that many independent vector iterations;
    ``hints`` are more ``llvm.loop`` hints (``NO_VECTORIZE``, ``NO_UNROLL``).
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
    if interleave > 1 or hints:
        latch.set_metadata("llvm.loop", _loop_id(b.module, interleave, hints))
    b.position_at_end(after)


NO_VECTORIZE = "llvm.loop.vectorize.enable"  # (false): the loop vectorizer leaves this loop
NO_UNROLL = "llvm.loop.unroll.disable"  # no full or partial unrolling (vectorizing still runs)


def _loop_id(module: ir.Module, interleave: int, hints: Sequence[str] = ()) -> ir.MDValue:
    """A fresh self-referencing loop ID carrying ``llvm.loop.interleave.count`` and ``hints``."""
    nodes = []
    if interleave > 1:
        nodes.append(
            module.add_metadata(
                [
                    ir.MetaDataString(module, "llvm.loop.interleave.count"),
                    ir.Constant(ir.IntType(32), interleave),
                ]
            )
        )
    for hint in hints:
        value = [ir.Constant(ir.IntType(1), 0)] if hint == NO_VECTORIZE else []
        nodes.append(module.add_metadata([ir.MetaDataString(module, hint), *value]))
    count = getattr(module, "_hlort_loop_ids", 0)
    module._hlort_loop_ids = count + 1
    loop = module.add_metadata([*nodes, ir.MetaDataString(module, f"hlort.loop.{count}")])
    loop.operands = (loop, *nodes)  # the self reference makes each loop's ID distinct
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
