"""Sort and top-k kernels: one outer iteration per row, so threads sort disjoint rows.

``void k(ptr* buffers, i64 begin, i64 end)``: buffers are the operands, the outputs, then a
scratch region of ``KernelInfo.scratch_bytes`` that the runtime gives each thread (reused row
after row, so rows of millions of elements need no stack and memory stays one row per thread).

Radix plans (see ``sort_plan.py``, ``sort_records.py``): a row's records are built in scratch
with one histogram per key byte counted on the way; each byte then takes one stable scatter
pass (skipped when every record has the same digit, as small integers in wide types do), and
outputs are gathered from the operands by the positions in the sorted records. Short rows use
insertion sort on the records instead, and top-k with a small k keeps the k best records in a
sorted buffer while scanning. Network plans run ``sort_network.py`` on a permutation.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import define_kernel
from hlort.codegen.llvm.llvm_types import I32, I64, PTR
from hlort.codegen.llvm.loops import emit_loop
from hlort.codegen.llvm.sort_plan import SortPlan, plan_sort
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort.dtypes import S32
from hlort.errors import Unimplemented
from hlort.ir.computation import Computation
from hlort.shape import ArrayShape
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.fusion_kernel import KernelInfo
from hlort_cpu.codegen.sort_network import emit_network_sort
from hlort_cpu.codegen.sort_records import (
    BUCKETS,
    RecordLayout,
    digit,
    keys_greater,
    load_record,
    pack_record,
    radix_key,
    record_field,
    record_position,
    store_record,
)

SELECT_MAX_K = 16  # top-k keeps a sorted buffer of the k best up to this k, else sorts the row
code_settings.declare(__name__, "SELECT_MAX_K")


def _uses_insertion_sort(n: int, passes: int) -> bool:
    """Short rows: insertion sort beats clearing and scanning 256-bucket histograms."""
    return n * n <= 1024 * max(passes, 1)


def scratch_bytes(plan: SortPlan) -> int:
    n = plan.n
    if plan.strategy == "network":
        return 8 * n
    layout = record_layout(plan)
    if plan.top_k is not None and plan.top_k <= SELECT_MAX_K:
        return 8 * layout.words * max(plan.top_k, 1)
    passes = len(layout.digit_passes())
    if _uses_insertion_sort(n, passes):
        return 8 * layout.words * n
    return 8 * (passes * BUCKETS + 2 * layout.words * n)


def record_layout(plan: SortPlan) -> RecordLayout:
    return RecordLayout.for_row(plan.keys, plan.n, plan.dtypes, position=plan.top_k is not None)


def output_shapes(plan: SortPlan) -> tuple[ArrayShape, ...]:
    if plan.top_k is None:
        return tuple(ArrayShape(dt, plan.dims) for dt in plan.dtypes)
    dims = plan.dims[:-1] + (plan.top_k,)
    return ArrayShape(plan.dtypes[0], dims), ArrayShape(S32, dims)


class SortKernel:
    """Emits one sort or top-k kernel function into a module."""

    def __init__(self, module: ir.Module, target: TargetSpec, name: str, plan: SortPlan):
        self.plan = plan
        n_in, n_out = len(plan.dtypes), len(output_shapes(plan))
        kernel = define_kernel(module, target, name, n_in + n_out + 1)
        self.fn, self.begin, self.end = kernel.function, kernel.begin, kernel.end
        self.b, self.ctx = kernel.builder, kernel.ctx
        ptrs = kernel.buffers
        self.inputs, self.outputs, self.scratch = ptrs[:n_in], ptrs[n_in:-1], ptrs[-1]
        self.row: ir.Value = i64(0)  # the current row, and its first element's linear index
        self.row_base: ir.Value = i64(0)

    # -- addressing -------------------------------------------------------------------------------
    def element(self, j: ir.Value) -> ir.Value:
        """Linear index of the current row's element j (inputs and full-size outputs)."""
        inner = self.plan.inner
        return self.b.add(self.row_base, self.b.mul(j, i64(inner)) if inner != 1 else j)

    def _set_row(self, r: ir.Value) -> None:
        b, plan = self.b, self.plan
        inner, n = plan.inner, plan.n
        if inner == 1:
            self.row_base = b.mul(r, i64(n))
        else:
            outer = b.udiv(r, i64(inner))
            self.row_base = b.add(b.mul(outer, i64(n * inner)), b.urem(r, i64(inner)))

    def _copy_raw(
        self, dt, src: ir.Value, src_index: ir.Value, dst: ir.Value, dst_index: ir.Value
    ) -> None:
        """Copy one element's bits; elements wider than 8 bytes (c128) as 8-byte words."""
        b = self.b
        words = max(1, dt.itemsize // 8)
        t = ir.IntType(dt.itemsize * 8 // words)
        for w in range(words):
            s, d = src_index, dst_index
            if words > 1:
                s = b.add(b.mul(s, i64(words)), i64(w))
                d = b.add(b.mul(d, i64(words)), i64(w))
            value = b.load(b.gep(src, [s], inbounds=True, source_etype=t), typ=t)
            b.store(value, b.gep(dst, [d], inbounds=True, source_etype=t))

    def _gather(self, count: int, position_of) -> None:
        """Output element j of the row = operand element ``position_of(j)``, bits copied."""
        b, plan = self.b, self.plan

        def body(j: ir.Value) -> None:
            pos = position_of(j)
            src = self.element(pos)
            if plan.top_k is None:
                dst = self.element(j)
                for dt, x, out in zip(plan.dtypes, self.inputs, self.outputs, strict=True):
                    self._copy_raw(dt, x, src, out, dst)
                return
            dst = b.add(b.mul(self.row, i64(plan.top_k)), j)
            self._copy_raw(plan.dtypes[0], self.inputs[0], src, self.outputs[0], dst)
            index_ptr = b.gep(self.outputs[1], [dst], inbounds=True, source_etype=I32)
            b.store(b.trunc(pos, I32), index_ptr)

        emit_loop(b, i64(0), i64(count), body, "gather")

    # -- records -----------------------------------------------------------------------------------
    def _record(self, layout: RecordLayout, j: ir.Value) -> list[ir.Value]:
        b = self.b
        index = self.element(j)
        raw: dict[int, ir.Value] = {}
        for operand in {k.operand for k in layout.keys} | {v for v, _ in layout.values}:
            t = ir.IntType(self.plan.dtypes[operand].itemsize * 8)
            src = self.inputs[operand]
            raw[operand] = b.load(b.gep(src, [index], inbounds=True, source_etype=t), typ=t)
        keys = [radix_key(b, key, raw[key.operand]) for key in layout.keys]
        return pack_record(b, layout, keys, j, raw)

    def _unpack(self, layout: RecordLayout, records: ir.Value) -> None:
        """Outputs straight from records with a values payload."""
        b = self.b

        def body(j: ir.Value) -> None:
            words = load_record(b, records, j, layout.words)
            dst = self.element(j)
            for (operand, bits), low in zip(layout.values, layout.value_offsets(), strict=True):
                t = ir.IntType(self.plan.dtypes[operand].itemsize * 8)
                value = record_field(b, layout, words, low, bits)
                b.store(value, b.gep(self.outputs[operand], [dst], inbounds=True, source_etype=t))

        emit_loop(b, i64(0), i64(self.plan.n), body, "unpack")

    def _insert(
        self, layout: RecordLayout, base: ir.Value, start: ir.Value, rec: list[ir.Value]
    ) -> None:
        """Shift records of ``base[:start]`` with keys greater than ``rec``'s up one; put ``rec``
        in the gap (equal keys stay in front: stable)."""
        b = self.b
        words = len(rec)
        pre = b.block
        cond = self.fn.append_basic_block("ins.cond")
        check = self.fn.append_basic_block("ins.check")
        move = self.fn.append_basic_block("ins.move")
        done = self.fn.append_basic_block("ins.done")
        b.branch(cond)
        b.position_at_end(cond)
        j = b.phi(I64, name="ins.j")
        j.add_incoming(start, pre)
        b.cbranch(b.icmp_signed(">", j, i64(0)), check, done)
        b.position_at_end(check)
        prev_index = b.sub(j, i64(1))
        prev = load_record(b, base, prev_index, words)
        b.cbranch(keys_greater(b, layout, prev, rec), move, done)
        b.position_at_end(move)
        store_record(b, base, j, prev)
        j.add_incoming(prev_index, move)
        b.branch(cond)
        b.position_at_end(done)
        store_record(b, base, j, rec)

    # -- strategies --------------------------------------------------------------------------------
    def _radix_row(
        self, layout: RecordLayout, cur: ir.Value, other: ir.Value, sum_slot: ir.Value
    ) -> None:
        b, n, words = self.b, self.plan.n, layout.words
        passes = layout.digit_passes()
        hist = self.scratch
        first = b.gep(
            self.scratch,
            [i64(8 * len(passes) * BUCKETS)],
            inbounds=True,
            source_etype=ir.IntType(8),
        )
        second = b.gep(first, [i64(8 * words * n)], inbounds=True, source_etype=ir.IntType(8))
        b.store(first, cur)
        b.store(second, other)

        def count_at(p: int, d: ir.Value) -> ir.Value:
            return b.gep(hist, [b.add(d, i64(p * BUCKETS))], inbounds=True, source_etype=I64)

        emit_loop(
            b,
            i64(0),
            i64(len(passes) * BUCKETS),
            lambda i: b.store(i64(0), b.gep(hist, [i], inbounds=True, source_etype=I64)),
            "hist_clear",
        )

        def fill(j: ir.Value) -> None:
            rec = self._record(layout, j)
            store_record(b, first, j, rec)
            for p, (slot, shift) in enumerate(passes):
                ptr = count_at(p, digit(b, rec, slot, shift))
                b.store(b.add(b.load(ptr, typ=I64), i64(1)), ptr)

        emit_loop(b, i64(0), i64(n), fill, "fill")
        for p, (slot, shift) in enumerate(passes):
            src = b.load(cur, typ=PTR)
            dst = b.load(other, typ=PTR)
            head = load_record(b, src, i64(0), words)
            trivial = b.icmp_signed(
                "==", b.load(count_at(p, digit(b, head, slot, shift)), typ=I64), i64(n)
            )
            with b.if_then(b.not_(trivial)):
                b.store(i64(0), sum_slot)

                def prefix(d: ir.Value, p=p) -> None:
                    ptr = count_at(p, d)
                    count = b.load(ptr, typ=I64)
                    total = b.load(sum_slot, typ=I64)
                    b.store(total, ptr)
                    b.store(b.add(total, count), sum_slot)

                emit_loop(b, i64(0), i64(BUCKETS), prefix, "prefix")

                def scatter(i: ir.Value, p=p, slot=slot, shift=shift, src=src, dst=dst) -> None:
                    rec = load_record(b, src, i, words)
                    ptr = count_at(p, digit(b, rec, slot, shift))
                    offset = b.load(ptr, typ=I64)
                    b.store(b.add(offset, i64(1)), ptr)
                    store_record(b, dst, offset, rec)

                emit_loop(b, i64(0), i64(n), scatter, "scatter")
                b.store(dst, cur)
                b.store(src, other)

    def _insertion_row(self, layout: RecordLayout) -> None:
        b = self.b

        def step(j: ir.Value) -> None:
            self._insert(layout, self.scratch, j, self._record(layout, j))

        emit_loop(b, i64(0), i64(self.plan.n), step, "insertion")

    def _select_row(self, layout: RecordLayout, k: int) -> None:
        """Keep the k smallest records seen so far, sorted, in scratch."""
        b, words = self.b, layout.words

        def step(j: ir.Value) -> None:
            rec = self._record(layout, j)
            filling = b.icmp_signed("<", j, i64(k))
            with b.if_else(filling) as (then, otherwise):
                with then:
                    self._insert(layout, self.scratch, j, rec)
                with otherwise:
                    worst = load_record(b, self.scratch, i64(k - 1), words)
                    with b.if_then(keys_greater(b, layout, worst, rec)):
                        self._insert(layout, self.scratch, i64(k - 1), rec)

        emit_loop(b, i64(0), i64(self.plan.n), step, "select")

    # -- the kernel --------------------------------------------------------------------------------
    def _radix_plan_row(self, layout: RecordLayout, slots: tuple[ir.Value, ...]) -> None:
        """Order the current row's records by the cheapest method, then write the outputs."""
        b, plan, n, words = self.b, self.plan, self.plan.n, layout.words
        if plan.top_k is not None and plan.top_k <= SELECT_MAX_K:
            self._select_row(layout, plan.top_k)
            records = self.scratch
        elif _uses_insertion_sort(n, len(layout.digit_passes())):
            self._insertion_row(layout)
            records = self.scratch
        else:
            self._radix_row(layout, *slots)
            records = b.load(slots[0], typ=PTR)
        if layout.values:
            self._unpack(layout, records)
            return

        def position(j: ir.Value) -> ir.Value:
            last = b.add(b.mul(j, i64(words)), i64(words - 1)) if words != 1 else j
            word = b.load(b.gep(records, [last], inbounds=True, source_etype=I64), typ=I64)
            return record_position(b, layout, [word])

        self._gather(n if plan.top_k is None else plan.top_k, position)

    def _network_plan_row(self) -> None:
        b, plan = self.b, self.plan
        emit_network_sort(
            self.ctx, plan.comparator, plan.dtypes, self.inputs, self.element, self.scratch, plan.n
        )
        self._gather(
            plan.n,
            lambda j: b.load(b.gep(self.scratch, [j], inbounds=True, source_etype=I64), typ=I64),
        )

    def emit(self) -> None:
        b, plan = self.b, self.plan
        slots = (
            b.alloca(PTR, name="cur"),
            b.alloca(PTR, name="other"),
            b.alloca(I64, name="prefix_sum"),
        )
        layout = record_layout(plan) if plan.strategy == "radix" else None

        def row(r: ir.Value) -> None:
            self.row = r
            self._set_row(r)
            if layout is None:
                self._network_plan_row()
            else:
                self._radix_plan_row(layout, slots)

        emit_loop(b, self.begin, self.end, row, "rows")
        b.ret_void()


def emit_sort_kernel(module: ir.Module, target: TargetSpec, name: str, comp: Computation):
    """The kernel of a wrapped sort or top-k; returns its KernelInfo."""
    plan = plan_sort(comp.root)
    if plan is None:
        raise Unimplemented(f"{comp.root.name}: no compiled sort for this comparator or type")
    SortKernel(module, target, name, plan).emit()
    count = plan.n if plan.top_k is None else plan.top_k
    extent = plan.rows if count else 0
    return KernelInfo(
        name,
        "sort",
        len(plan.dtypes),
        output_shapes(plan),
        extent,
        max(plan.n, 1),
        scratch_bytes=max(scratch_bytes(plan), 8),
    )
