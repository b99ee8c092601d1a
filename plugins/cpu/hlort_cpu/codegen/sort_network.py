"""Batcher's odd-even merge sort, compare-exchange by compare-exchange, under any comparator.

This is the interpreter's general path (``network_perm`` in ``interpreter/ops/sort.py``) made
sequential: the network of the row length rounded up to a power of two, on a permutation of
positions; a pair swaps when ``cmp(high, low)``, or when neither is less than the other and
the high one came first originally. Pairs of one stage are disjoint, so running them one by
one equals the interpreter's vectorized stage. Pairs reaching past the row (the padding) are
skipped: padding never moves there, because a real low element never swaps with padding.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.fused_emitter import emit_scalar_computation
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import I64, load_element
from hlort.codegen.llvm.loops import emit_loop
from hlort.ir.computation import Computation


def network_levels(n: int) -> int:
    """log2 of the padded row length."""
    return max(0, (n - 1).bit_length())


def emit_network_sort(
    ctx: IrContext,
    comparator: Computation,
    dtypes_,
    inputs: list[ir.Value],
    element,
    perm: ir.Value,
    n: int,
) -> None:
    """Leave in ``perm[0:n]`` the interpreter's sorting permutation of one row.

    ``element(j)`` is the linear index of the row's element j in every input.
    """
    b = ctx.b

    def init(j: ir.Value) -> None:
        b.store(j, b.gep(perm, [j], inbounds=True, source_etype=I64))

    emit_loop(b, i64(0), i64(n), init, "perm")

    def values_at(position: ir.Value) -> list[ir.Value]:
        index = element(position)
        return [load_element(b, dt, x, index) for dt, x in zip(dtypes_, inputs, strict=True)]

    def compare_exchange(low: ir.Value, high: ir.Value) -> None:
        low_ptr = b.gep(perm, [low], inbounds=True, source_etype=I64)
        high_ptr = b.gep(perm, [high], inbounds=True, source_etype=I64)
        pl, ph = b.load(low_ptr, typ=I64), b.load(high_ptr, typ=I64)
        xl, xh = values_at(pl), values_at(ph)
        h_lt_l = emit_scalar_computation(ctx, comparator, _interleave(xh, xl))[0]
        l_lt_h = emit_scalar_computation(ctx, comparator, _interleave(xl, xh))[0]
        tie_out_of_order = b.and_(b.not_(l_lt_h), b.icmp_signed("<", ph, pl))
        swap = b.or_(h_lt_l, tie_out_of_order)
        b.store(b.select(swap, ph, pl), low_ptr)
        b.store(b.select(swap, pl, ph), high_ptr)

    def level(lp: ir.Value) -> None:
        p = b.shl(i64(1), lp)
        block_shift = b.add(lp, i64(1))  # pairs stay inside blocks of 2p

        def sublevel(lk: ir.Value) -> None:
            k = b.lshr(p, lk)
            first = b.select(b.icmp_signed("==", k, p), i64(0), k)  # k % p for powers of two
            span = b.shl(k, i64(1))
            # runs start at first + t * 2k while first + t * 2k + k < n
            room = b.sub(i64(n), b.add(first, k))
            runs = b.select(
                b.icmp_signed(">", room, i64(0)),
                b.sdiv(b.add(room, b.sub(span, i64(1))), span),
                i64(0),
            )

            def run(t: ir.Value) -> None:
                j = b.add(first, b.mul(t, span))
                left = b.sub(i64(n), b.add(j, k))
                count = b.select(b.icmp_signed("<", left, k), left, k)

                def pair(i: ir.Value) -> None:
                    a = b.add(j, i)
                    partner = b.add(a, k)
                    same = b.icmp_unsigned(
                        "==", b.lshr(a, block_shift), b.lshr(partner, block_shift)
                    )
                    with b.if_then(same):
                        compare_exchange(a, partner)

                emit_loop(b, i64(0), count, pair, "net_pair")

            emit_loop(b, i64(0), runs, run, "net_run")

        emit_loop(b, i64(0), b.add(lp, i64(1)), sublevel, "net_sub")

    emit_loop(b, i64(0), i64(network_levels(n)), level, "net_level")


def _interleave(lhs: list[ir.Value], rhs: list[ir.Value]) -> list[ir.Value]:
    return [v for pair in zip(lhs, rhs, strict=True) for v in pair]
