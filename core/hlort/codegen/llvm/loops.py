"""Counted loops in LLVM IR, shaped so LLVM's loop vectorizer recognizes them."""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from hlort.codegen.llvm.llvm_types import I64


def emit_loop(b: ir.IRBuilder, start: ir.Value, stop: ir.Value,
              body: Callable[[ir.Value], None], name: str = "loop") -> None:  # fmt: skip
    """``for i in range(start, stop): body(i)``; the builder ends after the loop."""
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
    b.cbranch(b.icmp_signed("<", nxt, stop), loop, after)
    b.position_at_end(after)


def emit_nest(b: ir.IRBuilder, extents: list[int], body: Callable[[list[ir.Value]], None],
              name: str = "nest") -> None:  # fmt: skip
    """Nested loops over ``extents`` (outermost first); ``body`` gets the induction values."""
    values: list[ir.Value] = []

    def level(k: int) -> None:
        if k == len(extents):
            body(list(values))
            return

        def inner(i: ir.Value) -> None:
            values.append(i)
            level(k + 1)
            values.pop()

        emit_loop(b, ir.Constant(I64, 0), ir.Constant(I64, extents[k]), inner, f"{name}{k}")

    level(0)
