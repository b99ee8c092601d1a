"""Sort records: an element's radix keys and a payload packed into one unsigned big integer.

A record is ``R`` u64 words, most significant first; read as one integer it is the keys (each
mapped to an unsigned integer that orders like the interpreter's key, most significant key
highest) followed by the payload in the low bits: the element's position in its row, or the
raw bits of every operand when they fit in as few words (then the sorted records are the
outputs, no gather needed). Records with equal keys differ only in the payload; a stable sort
keeps them in position order, which is what the interpreter's stable sort does. An LSD radix
sort only needs the key bytes (records start in position order and every pass is stable);
insertion sort and top-k selection compare keys only and move a record only past strictly
greater keys, which is stable too.
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from hlort.codegen.llvm.float8 import float8_nan_bits
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.llvm_types import I1, I8, I64
from hlort.codegen.llvm.sort_plan import KeyField

RADIX_BITS = 8
BUCKETS = 1 << RADIX_BITS


@dataclass(frozen=True)
class RecordLayout:
    """Keys, then the payload: the element's position (``index_bits``) or, when that takes no
    more words, the raw bits of every operand (``values``: (operand, bits), most significant
    first), which saves gathering the outputs from the operands afterwards."""

    keys: tuple[KeyField, ...]
    index_bits: int  # 32 (64 for rows of 2**32 elements or more); 0 with a values payload
    values: tuple[tuple[int, int], ...] = ()

    @classmethod
    def for_row(
        cls, keys: tuple[KeyField, ...], n: int, dtypes_=(), position: bool = True
    ) -> RecordLayout:
        """The layout for rows of ``n``; ``position`` forces a position payload (top-k, and
        operands wider than one word: c128)."""
        index_bits = 32 if n <= 1 << 32 else 64
        values = tuple((k, max(8, dt.bits)) for k, dt in enumerate(dtypes_))
        key_bits = sum(k.bits for k in keys)
        value_bits = sum(bits for _, bits in values)
        position = position or any(bits > 64 for _, bits in values)
        if not position and _words(key_bits + value_bits) <= _words(key_bits + index_bits):
            return cls(keys, 0, values)
        return cls(keys, index_bits)

    @property
    def key_bits(self) -> int:
        return sum(k.bits for k in self.keys)

    @property
    def payload_bits(self) -> int:
        return self.index_bits + sum(bits for _, bits in self.values)

    @property
    def words(self) -> int:
        return _words(self.key_bits + self.payload_bits)

    def key_offsets(self) -> list[int]:
        """Lowest bit of each key in the record integer."""
        offsets, low = [], self.payload_bits + self.key_bits
        for k in self.keys:
            low -= k.bits
            offsets.append(low)
        return offsets

    def value_offsets(self) -> list[int]:
        offsets, low = [], self.payload_bits
        for _, bits in self.values:
            low -= bits
            offsets.append(low)
        return offsets

    def digit_passes(self) -> list[tuple[int, int]]:
        """(word slot, shift) of each key byte, least significant first (LSD order)."""
        passes = []
        for bit in range(self.payload_bits, self.payload_bits + self.key_bits, RADIX_BITS):
            passes.append((self.words - 1 - bit // 64, bit % 64))
        return passes


def _words(bits: int) -> int:
    return -(-bits // 64)


def radix_key(b: ir.IRBuilder, key: KeyField, raw: ir.Value) -> ir.Value:
    """The unsigned key (iN, N = key.bits) of an element from its raw storage bits.

    Floats: canonicalized if asked (zeros -> +0.0, NaNs -> one positive NaN), then sign-magnitude
    bits made unsigned-ordered (negative: all bits flipped; positive: sign bit set), which is
    the interpreter's TOTALORDER key shifted by the sign bit. Signed integers: sign bit flipped.
    Pred: 0 or 1. Descending keys are complemented, as the interpreter complements its keys.
    """
    dt = key.dtype
    t = ir.IntType(key.bits)
    sign = ir.Constant(t, 1 << (key.bits - 1))
    if dt.is_pred:
        value = b.zext(b.icmp_unsigned("!=", raw, ir.Constant(I8, 0)), I8)
    elif dt.is_float:
        value = raw
        if key.canonical:
            value = _canonical_float_bits(b, dt, value)
        negative = b.icmp_signed("<", value, ir.Constant(t, 0))
        value = b.select(negative, b.not_(value), b.or_(value, sign))
    elif dt.is_signed_integer:  # s4: its sign is bit 3 of the byte (the high nibble is zero)
        value = b.xor(raw, ir.Constant(t, 1 << (dt.bits - 1)) if dt.bits < 8 else sign)
    else:
        value = raw
    return b.not_(value) if key.descending else value


def _canonical_float_bits(b: ir.IRBuilder, dt, bits: ir.Value) -> ir.Value:
    t = bits.type
    width = t.width
    magnitude = b.and_(bits, ir.Constant(t, (1 << (width - 1)) - 1))
    if width == 8:
        infinity, quiet_nan = float8_nan_bits(dt)
    else:
        mantissa = {16: 10 if dt.name == "f16" else 7, 32: 23, 64: 52}[width]
        infinity = ((1 << (width - 1 - mantissa)) - 1) << mantissa
        quiet_nan = infinity | (1 << (mantissa - 1))
    is_zero = b.icmp_unsigned("==", magnitude, ir.Constant(t, 0))
    is_nan = b.icmp_unsigned(">", magnitude, ir.Constant(t, infinity))
    bits = b.select(is_zero, ir.Constant(t, 0), bits)
    return b.select(is_nan, ir.Constant(t, quiet_nan), bits)


def pack_record(
    b: ir.IRBuilder,
    layout: RecordLayout,
    keys: list[ir.Value],
    position: ir.Value,
    raw: dict[int, ir.Value],
) -> list[ir.Value]:
    """The record words (most significant first) of keys (unsigned iN values) and the payload:
    ``position``, or the raw storage bits ``raw[operand]`` of the operands."""
    words: list[ir.Value | None] = [None] * layout.words
    pieces: list[tuple[ir.Value, int, int]] = []
    if layout.index_bits:
        pieces.append((position, 0, layout.index_bits))
    for (operand, bits), low in zip(layout.values, layout.value_offsets(), strict=True):
        pieces.append((_to_i64(b, raw[operand]), low, bits))
    for value, low, key in zip(keys, layout.key_offsets(), layout.keys, strict=True):
        pieces.append((_to_i64(b, value), low, key.bits))
    for value, low, width in pieces:
        for q in range(low // 64, (low + width - 1) // 64 + 1):
            part = (
                b.shl(value, i64(low - 64 * q))
                if low >= 64 * q
                else b.lshr(value, i64(64 * q - low))
            )
            slot = layout.words - 1 - q
            words[slot] = part if words[slot] is None else b.or_(words[slot], part)
    return [w if w is not None else i64(0) for w in words]


def _to_i64(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    return value if value.type.width == 64 else b.zext(value, I64)


def record_field(
    b: ir.IRBuilder, layout: RecordLayout, words: list[ir.Value], low: int, width: int
) -> ir.Value:
    """The ``width``-bit field at bit ``low`` of the record integer, as an iN value."""
    q = low // 64
    shift = low - 64 * q
    word = words[layout.words - 1 - q]
    value = b.lshr(word, i64(shift)) if shift else word
    if shift + width > 64:
        high = words[layout.words - 2 - q]
        value = b.or_(value, b.shl(high, i64(64 - shift)))
    return value if width == 64 else b.trunc(value, ir.IntType(width))


def record_position(b: ir.IRBuilder, layout: RecordLayout, words: list[ir.Value]) -> ir.Value:
    last = words[-1]
    return last if layout.index_bits == 64 else b.and_(last, i64((1 << layout.index_bits) - 1))


def keys_greater(
    b: ir.IRBuilder, layout: RecordLayout, lhs: list[ir.Value], rhs: list[ir.Value]
) -> ir.Value:
    """lhs's keys > rhs's keys (the payload ignored), as unsigned big integers."""
    result: ir.Value = ir.Constant(I1, 0)
    low = layout.payload_bits
    for q in range(low // 64, layout.words):
        slot = layout.words - 1 - q
        x, y = lhs[slot], rhs[slot]
        if low > 64 * q:
            mask = i64(~((1 << (low - 64 * q)) - 1) & ((1 << 64) - 1))
            x, y = b.and_(x, mask), b.and_(y, mask)
        result = b.or_(b.icmp_unsigned(">", x, y), b.and_(b.icmp_unsigned("==", x, y), result))
    return result


def load_record(b: ir.IRBuilder, base: ir.Value, k: ir.Value, words: int) -> list[ir.Value]:
    start = b.mul(k, i64(words)) if words != 1 else k
    return [
        b.load(
            b.gep(base, [b.add(start, i64(w)) if w else start], inbounds=True, source_etype=I64),
            typ=I64,
        )
        for w in range(words)
    ]


def store_record(b: ir.IRBuilder, base: ir.Value, k: ir.Value, values: list[ir.Value]) -> None:
    words = len(values)
    start = b.mul(k, i64(words)) if words != 1 else k
    for w, v in enumerate(values):
        b.store(
            v, b.gep(base, [b.add(start, i64(w)) if w else start], inbounds=True, source_etype=I64)
        )


def digit(b: ir.IRBuilder, words: list[ir.Value], slot: int, shift: int) -> ir.Value:
    word = words[slot]
    shifted = b.lshr(word, i64(shift)) if shift else word
    return b.and_(shifted, i64(BUCKETS - 1))
