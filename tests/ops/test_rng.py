"""rng-bit-generator: bit-exact with XLA's CPU/GPU expansion (RngBitGeneratorExpander over the
Threefry and Philox generators of xla/hlo/builder/lib/prng.cc), state updates, every output width,
odd shapes, and the shape rule's checks."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from hlort import Builder, evaluate, shape
from hlort.errors import ErrorCode, HlortError
from hlort.interpreter import prng
from hlort.ir import Opcode, RngAlgorithm, infer_shape
from hlort.shape import TupleShape

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "stablehlo-testdata" / "testdata"
U32 = np.uint32
THREE_FRY, PHILOX, DEFAULT = RngAlgorithm.THREE_FRY, RngAlgorithm.PHILOX, RngAlgorithm.DEFAULT


def generate(state, dtype, dims, algorithm=THREE_FRY):
    """Evaluate one rng-bit-generator on ``state``; returns (new state, bits)."""
    b = Builder("rng")
    p = b.parameter(shape.array("u64", [len(state)]))
    b.build(b.rng_bit_generator(p, shape.array(dtype, dims), algorithm))
    return evaluate(b.module, [np.asarray(state, np.uint64)])


# -- the kernels: Random123's known-answer vectors -------------------------------------------------
@pytest.mark.parametrize(
    "key, count, expected",
    [
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ],
)
def test_threefry2x32_known_answers(key, count, expected):
    out = prng.threefry2x32(U32(key[0]), U32(key[1]), U32(count[0]), U32(count[1]))
    assert tuple(int(x) for x in out) == expected


@pytest.mark.parametrize(
    "count, key, expected",
    [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ],
)
def test_philox4x32_known_answers(count, key, expected):
    out = prng.philox4x32(tuple(U32(c) for c in count), U32(key[0]), U32(key[1]))
    assert tuple(int(x) for x in out) == expected


def test_kernels_broadcast_and_keep_shape():
    counts = np.arange(12, dtype=U32).reshape(3, 4)
    a, b = prng.threefry2x32(U32(7), U32(9), counts, U32(0))
    assert a.shape == b.shape == (3, 4) and a.dtype == U32
    one = prng.threefry2x32(U32(7), U32(9), counts[1, 2], U32(0))
    assert int(one[0]) == int(a[1, 2]) and int(one[1]) == int(b[1, 2])


# -- pinned XLA results ----------------------------------------------------------------------------
def test_three_fry_u32_matches_xla():
    # XLA CPU for THREE_FRY, u64[2]{0, 0} -> u32[3,2] (as r-xla/anvil's docs print it, rounded)
    state, bits = generate([0, 0], "u32", [3, 2])
    assert bits.tolist() == [
        [1797259609, 2579123966],
        [1351547692, 3235790642],
        [1688610540, 4229293427],
    ]
    assert state.tolist() == [0, 3]  # the halved shape, 3x1, drew three counters


def test_three_fry_u64_scalar_matches_xla():
    state, bits = generate([3, 3], "u64", [])
    assert bits.shape == () and int(bits) == 3349939604322698703
    assert state.tolist() == [3, 4]


IREE_PHILOX = [
    2506551797,
    854201270,
    3439441773,
    2043148971,
    110723240,
    146396481,
    3036307158,
    2326464332,
]


@pytest.mark.parametrize("algorithm", [PHILOX, DEFAULT])
def test_philox_two_word_state_matches_reference(algorithm):
    # Key 0x200000001; a 2-word state's counter is (state[1], state[0]) as XLA's expander reverses
    # it. IREE's Philox conformance test expects these values for the same key and counter.
    state, bits = generate([0x200000001, 0x300000004], "u32", [8], algorithm)
    assert bits.tolist() == IREE_PHILOX
    assert state.tolist() == [0x200000001, 0x300000006]


def test_philox_three_word_state():
    state, bits = generate([0x200000001, 0x300000004, 0x200000001], "u32", [8], PHILOX)
    assert bits.tolist() == IREE_PHILOX
    assert state.tolist() == [0x200000001, 0x300000006, 0x200000001]


def test_philox_counter_carries_into_high_word():
    top = 2**64 - 1
    state, bits = generate([5, top, 7], "u32", [8], PHILOX)
    assert state.tolist() == [5, 1, 8]
    low, high = np.array([top, 0], np.uint64), np.array([7, 8], np.uint64)
    words = prng.philox4x32(
        (
            low.astype(U32),
            (low >> np.uint64(32)).astype(U32),
            high.astype(U32),
            (high >> np.uint64(32)).astype(U32),
        ),
        U32(5),
        U32(0),
    )
    assert bits.tolist() == np.stack(words, axis=1).reshape(-1).tolist()


# -- the StableHLO testdata corpus -----------------------------------------------------------------
def _dense(text: str, name: str, index: int = 0) -> tuple[bytes | list, str]:
    """The ``index``-th ``dense<...> : tensor<...>`` constant of function ``name``."""
    body = re.search(rf"func\.func private @{name}\(\).*?\n  }}", text, re.S).group(0)
    found = re.findall(r"dense<(.*?)> : tensor<([^>]*)>", body)[index]
    value, ty = found
    if value.startswith('"0x'):
        return bytes.fromhex(value[3:-1]), ty
    return [int(v) for v in re.findall(r"-?\d+", value)], ty


def _array(value, ty: str) -> np.ndarray:
    *dims, elem = ty.split("x")
    dtype = np.dtype({"ui32": "<u4", "ui64": "<u8"}[elem])
    dims = [int(d) for d in dims]
    if isinstance(value, bytes):
        return np.frombuffer(value, dtype).reshape(dims)
    if len(value) == 1:  # a splat
        return np.full(dims, value[0], dtype)
    return np.array(value, dtype).reshape(dims)


@pytest.mark.parametrize("name", ["rng_bit_generator_uint32_4", "rng_bit_generator_uint64_2"])
def test_stablehlo_corpus_bit_exact(name):
    path = CORPUS / f"{name}.mlir"
    if not path.exists():
        pytest.skip(f"StableHLO testdata not found at {path}")
    text = path.read_text()
    op = re.search(
        r"rng_bit_generator %\w+, algorithm = +(\w+) : \(tensor<(\d+)xui64>\) -> "
        r"\(tensor<\d+xui64>, tensor<([^>]*)>\)",
        text,
    )
    assert op is not None and op.group(1) == "THREE_FRY"
    words = int(op.group(2))
    inputs = _array(*_dense(text, "inputs"))
    state = np.ascontiguousarray(inputs).view(np.uint64).reshape(words)
    expected_state = np.ascontiguousarray(_array(*_dense(text, "expected", 0))).view(np.uint64)
    expected_bits = _array(*_dense(text, "expected", 1))
    bits_type = op.group(3)
    dims = [int(d) for d in bits_type.split("x")[:-1]]
    new_state, bits = generate(state, "u64", dims, THREE_FRY)
    assert new_state.tolist() == expected_state.reshape(-1).tolist()
    assert bits.shape == expected_bits.shape
    assert np.array_equal(bits, expected_bits)


# -- layout against a per-element restatement of XLA's expansion -----------------------------------
def _three_fry_u32_slow(state, dims):
    """ThreeFryRngBit32, one element at a time: the split dimension alternates the two words."""
    dims = tuple(dims)
    if not dims:
        a, _ = prng.threefry2x32(
            U32(state[0] & 0xFFFFFFFF),
            U32(state[0] >> 32),
            U32(state[1] & 0xFFFFFFFF),
            U32(state[1] >> 32),
        )
        return np.array(int(a), U32)
    split, half = _split(dims)
    out = np.zeros(dims, U32)
    for index in np.ndindex(*dims):
        h = list(index)
        h[split] //= 2
        counter = (state[1] + int(np.ravel_multi_index(h, half))) % 2**64
        words = prng.threefry2x32(
            U32(state[0] & 0xFFFFFFFF),
            U32(state[0] >> 32),
            U32(counter & 0xFFFFFFFF),
            U32(counter >> 32),
        )
        out[index] = int(words[index[split] % 2])
    return out


def _philox_slow(state, n, width):
    """PhiloxRngBit32/64 one element at a time: element i is word i % k of counter i // k."""
    key, lo = state[0], state[1]
    hi = state[2] if len(state) == 3 else state[0]
    per = 4 if width <= 32 else 2
    out = []
    for i in range(n):
        c = (hi << 64 | lo) + i // per
        ws = prng.philox4x32(
            tuple(U32((c >> (32 * j)) & 0xFFFFFFFF) for j in range(4)),
            U32(key & 0xFFFFFFFF),
            U32(key >> 32),
        )
        ws = [int(w) for w in ws]
        out.append(ws[i % 4] if per == 4 else ws[2 * (i % 2)] | ws[2 * (i % 2) + 1] << 32)
    return out


ODD_SHAPES = [[], [1], [7], [2, 3], [3, 5], [5, 1, 3], [1, 1], [3, 4, 5], [0, 3]]


def _split(dims) -> tuple[int, list[int]]:
    """XLA's SplitShapeIntoHalves: halve the first even dimension, else the largest."""
    if not dims:
        return 0, [1]
    split = next((i for i, d in enumerate(dims) if d % 2 == 0), None)
    if split is None:
        split = max(range(len(dims)), key=lambda i: (dims[i], -i))
    half = list(dims)
    half[split] = (dims[split] + 1) // 2
    return split, half


@pytest.mark.parametrize("dims", ODD_SHAPES)
def test_three_fry_32bit_layout(dims):
    start = [0x0123456789ABCDEF, 2**64 - 3]  # the counter wraps mid-draw
    state, bits = generate(start, "u32", dims)
    assert np.array_equal(bits, _three_fry_u32_slow(start, dims))
    assert state.tolist() == [start[0], (start[1] + math.prod(_split(dims)[1])) % 2**64]


@pytest.mark.parametrize("dims", ODD_SHAPES)
def test_three_fry_64bit_counts_every_element(dims):
    start = [99, 2**64 - 2]
    state, bits = generate(start, "u64", dims)
    n = math.prod(dims)
    assert state.tolist() == [99, (start[1] + n) % 2**64]
    flat = bits.reshape(-1)
    for i in range(n):
        c = (start[1] + i) % 2**64
        a, b = prng.threefry2x32(U32(99), U32(0), U32(c & 0xFFFFFFFF), U32(c >> 32))
        assert int(flat[i]) == int(a) | int(b) << 32


@pytest.mark.parametrize("dims", ODD_SHAPES)
@pytest.mark.parametrize("width", [32, 64])
@pytest.mark.parametrize("words", [2, 3])
def test_philox_layout(dims, width, words):
    start = [0xDEADBEEF12345678, 2**64 - 1, 41][:words]
    state, bits = generate(start, f"u{width}", dims, PHILOX)
    n = math.prod(dims)
    assert bits.reshape(-1).tolist() == _philox_slow(start, n, width)
    vectors = math.ceil(n * (2 if width == 64 else 1) / 4)
    hi = start[2] if words == 3 else start[0]
    end = (hi << 64 | start[1]) + vectors
    expected = [start[0], end & (2**64 - 1)] + ([end >> 64] if words == 3 else [])
    assert state.tolist() == expected


# -- widths, types, chaining -----------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", [THREE_FRY, PHILOX])
@pytest.mark.parametrize("narrow", ["u8", "u16", "s8", "s16", "f16", "bf16", "f8e5m2"])
def test_narrow_types_truncate_the_32bit_draw(algorithm, narrow):
    start = [12345, 678]
    dims = [3, 5]
    state32, bits32 = generate(start, "u32", dims, algorithm)
    state, bits = generate(start, narrow, dims, algorithm)
    width = bits.dtype.itemsize * 8
    assert bits.shape == (3, 5) and bits.dtype.name == shape.array(narrow).dtype.numpy.name
    raw = bits.view(np.dtype(f"uint{width}"))
    assert np.array_equal(raw, bits32.astype(np.dtype(f"uint{width}")))
    assert state.tolist() == state32.tolist()


@pytest.mark.parametrize("algorithm", [THREE_FRY, PHILOX])
@pytest.mark.parametrize(
    "wide, raw", [("s32", "u32"), ("f32", "u32"), ("s64", "u64"), ("f64", "u64")]
)
def test_signed_and_float_types_reinterpret_the_bits(algorithm, wide, raw):
    _, expected = generate([1, 2], raw, [4, 3], algorithm)
    _, bits = generate([1, 2], wide, [4, 3], algorithm)
    assert bits.dtype == shape.array(wide).dtype.numpy
    assert np.array_equal(bits.view(expected.dtype), expected)


@pytest.mark.parametrize("algorithm, width", [(THREE_FRY, 64), (PHILOX, 32), (PHILOX, 64)])
def test_threaded_state_continues_the_stream(algorithm, width):
    """Two draws chained through the new state give the same bits as one draw of both."""
    b = Builder("chain")
    p = b.parameter(shape.array("u64", [2]))
    first = b.rng_bit_generator(p, shape.array(f"u{width}", [8]), algorithm)
    second = b.rng_bit_generator(
        b.get_tuple_element(first, 0), shape.array(f"u{width}", [12]), algorithm
    )
    b.build(
        b.tuple(
            [
                b.get_tuple_element(first, 1),
                b.get_tuple_element(second, 1),
                b.get_tuple_element(second, 0),
            ]
        )
    )
    start = np.array([77, 2**64 - 5], np.uint64)
    one, two, end = evaluate(b.module, [start])
    state, both = generate(start, f"u{width}", [20], algorithm)
    assert np.array_equal(np.concatenate([one, two]), both)
    assert end.tolist() == state.tolist()


# -- the shape rule --------------------------------------------------------------------------------
def _rule(state, bits, algorithm=THREE_FRY, declared_state=None):
    declared = TupleShape((declared_state or state, bits))
    return infer_shape(Opcode.RNG_BIT_GENERATOR, [state], {"algorithm": algorithm}, declared)


def test_rule_accepts_xla_state_shapes():
    u64 = shape.array
    assert _rule(u64("u64", [2]), u64("u32", [4])).elements[1] == u64("u32", [4])
    for n in (2, 3):
        _rule(u64("u64", [n]), u64("f32", [2, 2]), PHILOX)
        _rule(u64("u64", [n]), u64("u8", []), DEFAULT)


@pytest.mark.parametrize(
    "state, bits, algorithm, fragment",
    [
        (shape.array("u64", [3]), shape.array("u32", [4]), THREE_FRY, "u64[2]"),
        (shape.array("u64", [4]), shape.array("u32", [4]), PHILOX, "u64[2] or u64[3]"),
        (shape.array("u32", [2]), shape.array("u32", [4]), THREE_FRY, "got u32[2]"),
        (shape.array("u64", [2, 1]), shape.array("u32", [4]), THREE_FRY, "got u64[2,1]"),
        (shape.array("u64", [2]), shape.array("pred", [4]), THREE_FRY, "got pred"),
        (shape.array("u64", [2]), shape.array("c64", [4]), PHILOX, "got c64"),
    ],
)
def test_rule_rejects(state, bits, algorithm, fragment):
    with pytest.raises(HlortError) as err:
        _rule(state, bits, algorithm)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert "rng-bit-generator" in str(err.value) and fragment in str(err.value)


def test_rule_needs_matching_state_and_declared_tuple():
    with pytest.raises(HlortError, match="must have the operand's shape u64"):
        _rule(shape.array("u64", [3]), shape.array("u32", [4]), PHILOX, shape.array("u64", [2]))
    with pytest.raises(HlortError, match="tuple"):
        infer_shape(
            Opcode.RNG_BIT_GENERATOR,
            [shape.array("u64", [2])],
            {"algorithm": THREE_FRY},
            shape.array("u32", [4]),
        )
    with pytest.raises(HlortError, match="result shape must be given"):
        infer_shape(Opcode.RNG_BIT_GENERATOR, [shape.array("u64", [2])], {"algorithm": PHILOX})
