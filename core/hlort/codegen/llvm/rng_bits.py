"""rng-bit-generator arithmetic: XLA's Threefry-2x32 and Philox-4x32 expansions, bit exact.

The same arithmetic as ``interpreter/prng.py`` (which documents XLA's counter layout, word
splitting and new state), emitted as LLVM IR on i32/i64 registers, where it wraps exactly like
the uint32/uint64 NumPy arrays there. Both generators are counter based, so the output is
filled in independent blocks of counters (:class:`RngBits`); a target's schedule decides which
thread runs which blocks (the CPU plugin's rng_kernel.py, the GPU's rng_schedule.py). Block 0
also writes the new state. Outputs are raw bits of the result's width (narrower types keep the
low bits of 32-bit words), stored as integers of that width whatever the element type.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.llvm_types import I32, I64
from hlort.codegen.llvm.loops import emit_loop
from hlort.ir.attributes import RngAlgorithm
from hlort.ir.instruction import Instruction

RNG_BLOCK = 4096  # counters per block, unless a schedule asks for another size
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_THREEFRY_PARITY = 0x1BD11BDA
_PHILOX_W32A, _PHILOX_W32B = 0x9E3779B9, 0xBB67AE85
_PHILOX_M4X32A, _PHILOX_M4X32B = 0xD2511F53, 0xCD9E8D57


def split_into_halves(dims: tuple[int, ...]) -> tuple[int, int]:
    """XLA's SplitShapeIntoHalves (as prng.py): the halved dimension and its half size."""
    for i, d in enumerate(dims):
        if d % 2 == 0:
            return i, (d + 1) // 2
    split = max(range(len(dims)), key=lambda i: (dims[i], -i))
    return split, (dims[split] + 1) // 2


def _c32(value: int) -> ir.Constant:
    return ir.Constant(I32, value & 0xFFFFFFFF)


def _rotl(b: ir.IRBuilder, x: ir.Value, r: int) -> ir.Value:
    return b.or_(b.shl(x, _c32(r)), b.lshr(x, _c32(32 - r)))


def threefry2x32(b: ir.IRBuilder, k0, k1, x0, x1) -> tuple[ir.Value, ir.Value]:
    """Threefry-2x32 with 20 rounds on i32 values."""
    ks = (k0, k1, b.xor(b.xor(k0, k1), _c32(_THREEFRY_PARITY)))
    a = b.add(x0, ks[0])
    c = b.add(x1, ks[1])
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            a = b.add(a, c)
            c = b.xor(a, _rotl(b, c, r))
        a = b.add(a, ks[(block + 1) % 3])
        c = b.add(b.add(c, ks[(block + 2) % 3]), _c32(block + 1))
    return a, c


def philox4x32(b: ir.IRBuilder, counter: list[ir.Value], k0, k1) -> list[ir.Value]:
    """Philox-4x32 with 10 rounds on i32 values; ``counter`` least significant word first."""
    c0, c1, c2, c3 = counter
    for _ in range(10):
        p0 = b.mul(b.zext(c0, I64), i64(_PHILOX_M4X32A))
        p1 = b.mul(b.zext(c2, I64), i64(_PHILOX_M4X32B))
        c0, c1, c2, c3 = (
            b.xor(b.xor(_hi(b, p1), c1), k0),
            _lo(b, p1),
            b.xor(b.xor(_hi(b, p0), c3), k1),
            _lo(b, p0),
        )
        k0 = b.add(k0, _c32(_PHILOX_W32A))
        k1 = b.add(k1, _c32(_PHILOX_W32B))
    return [c0, c1, c2, c3]


def _lo(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.trunc(x, I32)


def _hi(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.trunc(b.lshr(x, i64(32)), I32)


def _join(b: ir.IRBuilder, lo: ir.Value, hi: ir.Value) -> ir.Value:
    return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), i64(32)))


class RngBits:
    """The generator of one rng-bit-generator on buffers ``state``, ``new_state``, ``bits``:
    ``block(o)`` fills block ``o`` of ``extent`` (each of at most ``block_size`` counters,
    block 0 also writes the new state); a target's schedule runs the blocks on its threads."""

    def __init__(
        self,
        b: ir.IRBuilder,
        buffers: list[ir.Value],
        instr: Instruction,
        block_size: int = RNG_BLOCK,
    ):
        self.algorithm = instr.attrs.get("algorithm", RngAlgorithm.DEFAULT)
        self.state_size = instr.operands[0].shape.dims[0]
        bits_shape = instr.shape.elements[1]
        self.dims = bits_shape.dims
        self.width = bits_shape.dtype.bits
        self.out_type = ir.IntType(self.width)
        self.block_size = block_size
        self.b = b
        self.state, self.new_state, self.out = buffers[:3]
        self.words = [
            b.load(b.gep(self.state, [i64(k)], inbounds=True, source_etype=I64), typ=I64)
            for k in range(self.state_size)
        ]

    @property
    def threefry(self) -> bool:
        return self.algorithm is RngAlgorithm.THREE_FRY

    def counters(self) -> int:
        """How many generator calls the output takes (the counter advances by this much)."""
        n = math.prod(self.dims)
        if self.threefry:
            if self.width == 64 or not self.dims:
                return n if self.dims else 1
            split, half = split_into_halves(self.dims)
            return math.prod(self.dims[:split] + (half,) + self.dims[split + 1 :])
        return -(-(2 * n if self.width == 64 else n) // 4)

    def _store(self, position: ir.Value, value: ir.Value) -> None:
        b = self.b
        if value.type.width != self.width:
            value = b.trunc(value, self.out_type)
        b.store(value, b.gep(self.out, [position], inbounds=True, source_etype=self.out_type))

    def _store_word(self, index: int, value: ir.Value) -> None:
        b = self.b
        b.store(value, b.gep(self.new_state, [i64(index)], inbounds=True, source_etype=I64))

    def _write_new_state(self, counters: int) -> None:
        b = self.b
        key = self.words[0]
        if self.threefry:
            self._store_word(0, key)
            self._store_word(1, b.add(self.words[1], i64(counters)))
            return
        lo, hi = self._counter_words(i64(counters))
        self._store_word(0, key)
        self._store_word(1, lo)
        if self.state_size >= 3:
            self._store_word(2, hi)

    def _counter_words(self, delta: ir.Value) -> tuple[ir.Value, ir.Value]:
        """Philox's 128-bit counter (lo, hi) + delta, carrying into hi (Uint128AddUint64)."""
        b = self.b
        lo = self.words[1]
        hi = self.words[2] if self.state_size >= 3 else self.words[0]
        new_lo = b.add(lo, delta)
        carry = b.zext(b.icmp_unsigned("<", new_lo, lo), I64)
        return new_lo, b.add(hi, carry)

    # -- generators ------------------------------------------------------------------------------
    def _threefry_counter(self, c: ir.Value) -> tuple[ir.Value, ir.Value]:
        b = self.b
        key = self.words[0]
        ctr = b.add(self.words[1], c)
        return threefry2x32(b, _lo(b, key), _hi(b, key), _lo(b, ctr), _hi(b, ctr))

    def _threefry_flat(self, c: ir.Value) -> None:
        """64-bit outputs (one per counter) or a scalar (the first word of counter 0)."""
        b = self.b
        x0, x1 = self._threefry_counter(c)
        self._store(c, _join(b, x0, x1) if self.width == 64 else x0)

    def _halves(self) -> tuple[int, int, int, int, int]:
        """32-bit Threefry: counters over (A, H, I) = (dims before the halved one, its half,
        dims after); counter (a, h, q) fills positions 2h and 2h + 1 of the halved dimension.
        Returns (A, H, I, halved size, blocks per contiguous run)."""
        split, half = split_into_halves(self.dims)
        before = math.prod(self.dims[:split])
        inner = math.prod(self.dims[split + 1 :])
        run = inner if inner > 1 else half
        return before, half, inner, self.dims[split], -(-run // self.block_size)

    def _threefry_halves(self, u: ir.Value) -> None:
        """One block: a contiguous run along the dims after the halved one (stores of one row
        each), or along the halved dimension itself when nothing follows it (interleaved)."""
        b = self.b
        before, half, inner, size, blocks = self._halves()
        run, blk = b.udiv(u, i64(blocks)), b.urem(u, i64(blocks))
        start = b.mul(blk, i64(self.block_size))
        if inner > 1:
            a, h = b.udiv(run, i64(half)), b.urem(run, i64(half))
            stop = _min(b, b.add(start, i64(self.block_size)), inner)
            row0 = b.mul(b.add(b.mul(a, i64(size)), b.shl(h, i64(1))), i64(inner))
            counter0 = b.mul(run, i64(inner))

            def element(q: ir.Value, both: bool) -> None:
                x0, x1 = self._threefry_counter(b.add(counter0, q))
                first = b.add(row0, q)
                self._store(first, x0)
                if both:
                    self._store(b.add(first, i64(inner)), x1)

            if size % 2 == 0:
                emit_loop(b, start, stop, lambda q: element(q, True), "threefry")
                return
            last = b.icmp_signed("==", h, i64(half - 1))
            with b.if_else(last) as (then, otherwise):
                with then:
                    emit_loop(b, start, stop, lambda q: element(q, False), "threefry_last")
                with otherwise:
                    emit_loop(b, start, stop, lambda q: element(q, True), "threefry")
            return
        stop = _min(b, b.add(start, i64(self.block_size)), size // 2)
        base = b.mul(run, i64(size))
        counter0 = b.mul(run, i64(half))

        def pair(h: ir.Value) -> None:
            x0, x1 = self._threefry_counter(b.add(counter0, h))
            first = b.add(base, b.shl(h, i64(1)))
            self._store(first, x0)
            self._store(b.add(first, i64(1)), x1)

        emit_loop(b, start, stop, pair, "threefry")
        if size % 2:  # the last counter of the run fills only position size - 1
            with b.if_then(b.icmp_signed("==", blk, i64(blocks - 1))):
                x0, _ = self._threefry_counter(b.add(counter0, i64(half - 1)))
                self._store(b.add(base, i64(size - 1)), x0)

    def _philox_body(self, v: ir.Value, outputs: int) -> None:
        """Counter v; ``outputs`` of its numbers lie inside the result (4, 2 or fewer at the
        end)."""
        b = self.b
        lo, hi = self._counter_words(v)
        key = self.words[0]
        words = philox4x32(
            b, [_lo(b, lo), _hi(b, lo), _lo(b, hi), _hi(b, hi)], _lo(b, key), _hi(b, key)
        )
        if self.width == 64:
            numbers = [_join(b, words[0], words[1]), _join(b, words[2], words[3])]
        else:
            numbers = words
        base = b.mul(v, i64(len(numbers)))
        for w in range(outputs):
            self._store(b.add(base, i64(w)) if w else base, numbers[w])

    @property
    def _halved(self) -> bool:
        return self.threefry and self.width < 64 and bool(self.dims)

    @property
    def extent(self) -> int:
        """How many blocks fill the output (at least 1: block 0 writes the new state)."""
        counters = self.counters()
        if self._halved:
            before, half, inner, _, blocks = self._halves()
            extent = before * (half if inner > 1 else 1) * blocks if counters else 0
        else:
            extent = -(-counters // self.block_size)
        return max(extent, 1)

    @property
    def counters_per_block(self) -> int:
        return self.block_size * (2 if self._halved else 1)

    def block(self, o: ir.Value) -> None:
        """Fill block ``o`` (for ``o`` in [0, extent))."""
        b = self.b
        counters = self.counters()
        with b.if_then(b.icmp_signed("==", o, i64(0))):
            self._write_new_state(counters)
        if not counters:
            return
        if self._halved:
            self._threefry_halves(o)
            return
        start = b.mul(o, i64(self.block_size))
        stop = _min(b, b.add(start, i64(self.block_size)), counters)
        if self.threefry:
            emit_loop(b, start, stop, self._threefry_flat, "threefry")
            return
        n = math.prod(self.dims)
        per = 2 if self.width == 64 else 4
        full = n // per
        emit_loop(b, start, _min(b, stop, full), lambda v: self._philox_body(v, per), "philox")
        if n % per:
            with b.if_then(b.icmp_signed("<", i64(full), stop)):
                self._philox_body(i64(full), n % per)


def _min(b: ir.IRBuilder, v: ir.Value, n: int) -> ir.Value:
    return b.select(b.icmp_signed("<", v, i64(n)), v, i64(n))


__all__ = ["RNG_BLOCK", "RngBits", "philox4x32", "split_into_halves", "threefry2x32"]
