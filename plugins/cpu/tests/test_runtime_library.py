"""The JIT's runtime library (compiler-rt's helpers) against exact references.

Each helper is called from a small compiled loop over NumPy arrays, the way LLVM's generated code
calls it, and compared bit for bit with NumPy / ml_dtypes conversions (correctly rounded) or with
Python's exact integers. Inputs cover every 16-bit pattern for the extensions, and for the
truncations every rounding boundary of the narrow type (midpoints and their neighbours), the
subnormal range, overflow, infinities, NaNs and random patterns of every exponent.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("llvmlite")

from hlort.errors import ErrorCode, HlortError  # noqa: E402
from hlort_cpu.codegen.jit import jit_engine  # noqa: E402
from hlort_cpu.codegen.runtime_library import helper_names  # noqa: E402

_COUNTER = itertools.count()
_IR_TYPES = {
    np.dtype(np.float64): "double",
    np.dtype(np.float32): "float",
    np.dtype(np.float16): "half",
    np.dtype(ml_dtypes.bfloat16): "bfloat",
    np.dtype(np.int16): "i16",
    np.dtype(np.uint16): "i16",
    np.dtype(np.int32): "i32",
}
_I128 = "i128"  # passed as pairs of uint64 (little endian)


def call_helper(name: str, ret: str, args: list[tuple[str, np.ndarray]], out_dtype) -> np.ndarray:
    """Run ``ret name(args...)`` elementwise over the arrays in a compiled loop."""
    k = next(_COUNTER)
    n = len(args[0][1]) if args[0][0] != _I128 else len(args[0][1]) // 2
    lines = [
        f"declare {ret} @{name}({', '.join(t for t, _ in args)})",
        f"define void @wrap_{k}(ptr %p, i64 %n) {{",
        "entry:",
    ]
    for j in range(len(args) + 1):
        lines += [f"  %g{j} = getelementptr ptr, ptr %p, i64 {j}", f"  %a{j} = load ptr, ptr %g{j}"]
    lines += ["  br label %loop", "loop:", "  %i = phi i64 [0, %entry], [%i2, %loop]"]
    for j, (t, _) in enumerate(args):
        lines += [
            f"  %e{j} = getelementptr {t}, ptr %a{j}, i64 %i",
            f"  %v{j} = load {t}, ptr %e{j}",
        ]
    call_args = ", ".join(f"{t} %v{j}" for j, (t, _) in enumerate(args))
    lines += [
        f"  %r = call {ret} @{name}({call_args})",
        f"  %o = getelementptr {ret}, ptr %a{len(args)}, i64 %i",
        f"  store {ret} %r, ptr %o",
        "  %i2 = add i64 %i, 1",
        "  %c = icmp slt i64 %i2, %n",
        "  br i1 %c, label %loop, label %done",
        "done:",
        "  ret void",
        "}",
    ]
    engine = jit_engine()
    obj = engine.compile_ir("\n".join(lines) + "\n")
    address = engine.load_object(obj, [f"wrap_{k}"])[f"wrap_{k}"]
    arrays = [np.ascontiguousarray(a) for _, a in args]
    out = np.zeros(n * (2 if ret == _I128 else 1), out_dtype)
    ptrs = (ctypes.c_void_p * (len(args) + 1))(*[a.ctypes.data for a in arrays], out.ctypes.data)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(address)(ptrs, n)
    return out


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


def _assert_same_float(got: np.ndarray, want: np.ndarray, inputs: np.ndarray) -> None:
    """Bit for bit, except that any NaN matches any NaN (payloads are the hardware's choice)."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    bad = ~both_nan & (_bits(got) != _bits(want))
    assert not bad.any(), (inputs[bad][:8], got[bad][:8], want[bad][:8])


def _boundaries(narrow, wide) -> np.ndarray:
    """Every value of ``narrow``, the midpoints between neighbours, and their wide neighbours."""
    bits = np.arange(1 << 16, dtype=np.uint16).view(narrow)
    values = bits.astype(wide)
    finite = np.sort(values[np.isfinite(values)])
    mids = (finite[:-1] + (finite[1:] - finite[:-1]) / 2).astype(wide)
    near = [np.nextafter(mids, np.array(np.inf, wide)), np.nextafter(mids, np.array(-np.inf, wide))]
    top = finite[-1] + (finite[-1] - finite[-2]) / 2  # the overflow threshold
    extra = np.array(
        [
            top,
            np.nextafter(top, wide(0)),
            np.inf,
            -np.inf,
            np.nan,
            -0.0,
            0.0,
            np.finfo(wide).tiny,
            np.finfo(wide).max,
            -np.finfo(wide).max,
        ],
        wide,
    )
    rng = np.random.default_rng(7)
    width = np.dtype(wide).itemsize * 8
    random = rng.integers(0, 1 << (width - 1), 200_000, dtype=np.uint64)
    random = random.astype(f"u{width // 8}").view(wide)
    return np.concatenate([values, mids, *near, extra, random, -random])


TRUNCATIONS = [
    ("__truncdfhf2", np.float64, np.float16),
    ("__truncsfhf2", np.float32, np.float16),
    ("__truncdfbf2", np.float64, ml_dtypes.bfloat16),
    ("__truncsfbf2", np.float32, ml_dtypes.bfloat16),
]


@pytest.mark.parametrize("name,wide,narrow", TRUNCATIONS, ids=[t[0] for t in TRUNCATIONS])
def test_truncation_rounds_once_to_nearest_even(name, wide, narrow):
    x = _boundaries(narrow, wide)
    with np.errstate(over="ignore"):
        want = x.astype(narrow)
    got = call_helper(name, _IR_TYPES[np.dtype(narrow)], [(_IR_TYPES[np.dtype(wide)], x)], narrow)
    _assert_same_float(got, want, x)


def test_gnu_f2h_takes_and_returns_integers():
    x = _boundaries(np.float16, np.float32)
    got = call_helper("__gnu_f2h_ieee", "i16", [("float", x)], np.uint16).view(np.float16)
    with np.errstate(over="ignore"):
        _assert_same_float(got, x.astype(np.float16), x)


EXTENSIONS = [
    ("__extendhfsf2", np.float16, np.float32),
    ("__extendhfdf2", np.float16, np.float64),
    ("__extendbfsf2", ml_dtypes.bfloat16, np.float32),
]


@pytest.mark.parametrize("name,narrow,wide", EXTENSIONS, ids=[t[0] for t in EXTENSIONS])
def test_extension_is_exact_for_every_pattern(name, narrow, wide):
    x = np.arange(1 << 16, dtype=np.uint16).view(narrow)
    got = call_helper(name, _IR_TYPES[np.dtype(wide)], [(_IR_TYPES[np.dtype(narrow)], x)], wide)
    _assert_same_float(got, x.astype(wide), x)
    nan = np.isnan(x.astype(np.float32))
    assert (np.signbit(got[nan]) == np.signbit(x[nan].astype(np.float32))).all()


def test_gnu_h2f_takes_an_integer():
    x = np.arange(1 << 16, dtype=np.uint16)
    got = call_helper("__gnu_h2f_ieee", "float", [("i16", x)], np.float32)
    _assert_same_float(got, x.view(np.float16).astype(np.float32), x)


@pytest.mark.parametrize("name,dtype", [("__powidf2", np.float64), ("__powisf2", np.float32)])
def test_powi_repeated_squaring(name, dtype):
    x = np.array([2.0, 2.0, 2.0, 3.0, -2.0, -2.0, 0.0, 0.0, 1.5, np.nan, np.inf], dtype)
    n = np.array([10, -3, 0, 5, 3, 2, -1, 3, 2, 0, -2], np.int32)
    want = np.array([1024.0, 0.125, 1.0, 243.0, -8.0, 4.0, np.inf, 0.0, 2.25, 1.0, 0.0], dtype)
    got = call_helper(
        name, _IR_TYPES[np.dtype(dtype)], [(_IR_TYPES[np.dtype(dtype)], x), ("i32", n)], dtype
    )
    np.testing.assert_array_equal(got, want)


# -- 128-bit integers ----------------------------------------------------------------------------
def _pack(values: list[int]) -> np.ndarray:
    out = np.empty(2 * len(values), np.uint64)
    for k, v in enumerate(values):
        v &= (1 << 128) - 1
        out[2 * k], out[2 * k + 1] = v & (2**64 - 1), v >> 64
    return out


def _unpack(words: np.ndarray, signed: bool) -> list[int]:
    out = []
    for lo, hi in zip(words[0::2], words[1::2], strict=True):
        v = int(lo) | int(hi) << 64
        out.append(v - (1 << 128) if signed and v >> 127 else v)
    return out


def _int128_samples() -> list[int]:
    rng = np.random.default_rng(3)
    edge = [
        0,
        1,
        -1,
        2,
        7,
        -7,
        2**63 - 1,
        2**63,
        2**64 - 1,
        2**64,
        2**64 + 1,
        2**100 + 12345,
        2**127 - 1,
        -(2**127),
        -(2**64),
        10**30,
        -(10**30),
    ]
    random = [
        int(rng.integers(0, 2**63)) << int(rng.integers(0, 64)) | int(rng.integers(0, 2**63))
        for _ in range(300)
    ]
    return edge + random + [-v for v in random]


def _c_div(a: int, b: int) -> tuple[int, int]:
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return q, a - q * b


def test_int128_division_truncates_toward_zero():
    values = _int128_samples()
    rng = np.random.default_rng(5)
    pairs = [(a, b) for a in values for b in rng.choice(values, 4).tolist() if b != 0]
    pairs += [(a, 3) for a in values] + [(a, -(2**70) - 1) for a in values]
    a, b = _pack([p[0] for p in pairs]), _pack([p[1] for p in pairs])
    mask = (1 << 128) - 1
    for name, signed, part in [
        ("__divti3", True, 0),
        ("__modti3", True, 1),
        ("__udivti3", False, 0),
        ("__umodti3", False, 1),
    ]:
        got = _unpack(call_helper(name, _I128, [(_I128, a), (_I128, b)], np.uint64), signed)
        for (x, y), g in zip(pairs, got, strict=True):
            want = _c_div(x, y)[part] if signed else divmod(x & mask, y & mask)[part]
            assert g == want, (name, x, y, g, want)


def _round_to_bits(v: int, bits: int) -> int:
    """``v`` rounded to ``bits`` significant bits, to nearest even (exact integers)."""
    n = abs(v)
    shift = n.bit_length() - bits
    if shift <= 0:
        return v
    q, r = divmod(n, 1 << shift)
    half = 1 << (shift - 1)
    q += r > half or (r == half and q & 1)
    return (q << shift) * (1 if v >= 0 else -1)


def test_int128_to_float_rounds_once():
    values = _int128_samples()
    values += [
        2**64 + 2**11 + 1,
        2**64 + 2**11,
        2**64 + 3 * 2**11,
        2**100 + 2**47 - 1,
        2**127 - 2**103,
    ]  # halfway cases and neighbours
    words = _pack(values)
    unsigned = [v & ((1 << 128) - 1) for v in values]
    for name, signed, dtype, bits in [
        ("__floattidf", True, np.float64, 53),
        ("__floatuntidf", False, np.float64, 53),
        ("__floattisf", True, np.float32, 24),
        ("__floatuntisf", False, np.float32, 24),
    ]:
        got = call_helper(name, _IR_TYPES[np.dtype(dtype)], [(_I128, words)], dtype)
        source = values if signed else unsigned
        with np.errstate(over="ignore"):
            want = np.array([float(_round_to_bits(v, bits)) for v in source]).astype(dtype)
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_float_to_int128_truncates_and_saturates():
    x = np.array(
        [
            0.0,
            -0.0,
            0.5,
            -0.99,
            1.0,
            -1.5,
            2.0**52 + 1,
            -(2.0**63),
            2.0**64,
            1e30,
            -1e30,
            2.0**126,
            -(2.0**127),
            2.0**127,
            1e300,
            -1e300,
            np.inf,
            -np.inf,
            np.nan,
        ]
    )
    top = 2**127
    exact = [
        0,
        0,
        0,
        0,
        1,
        -1,
        2**52 + 1,
        -(2**63),
        2**64,
        int(1e30),
        -int(1e30),
        2**126,
        -top,
        top - 1,
        top - 1,
        -top,
        top - 1,
        -top,
        top - 1,
    ]
    for name, dtype in [("__fixdfti", np.float64), ("__fixsfti", np.float32)]:
        xs = x.astype(dtype)
        got = _unpack(
            call_helper(name, _I128, [(_IR_TYPES[np.dtype(dtype)], xs)], np.uint64), signed=True
        )
        want = [e if dtype is np.float64 else _saturate(xs[k], e) for k, e in enumerate(exact)]
        assert got == want, (name, got, want)
    got = _unpack(call_helper("__fixunsdfti", _I128, [("double", x)], np.uint64), signed=False)
    want = [
        0,
        0,
        0,
        0,
        1,
        0,
        2**52 + 1,
        0,
        2**64,
        int(1e30),
        0,
        2**126,
        0,
        2**127,
        2**128 - 1,
        0,
        2**128 - 1,
        0,
        2**128 - 1,
    ]
    assert got == want


def _saturate(value, exact: int) -> int:
    """The f32 input's own truncation (rounding to f32 moved the value)."""
    if np.isnan(value):
        return 2**127 - 1
    return max(-(2**127), min(2**127 - 1, int(value))) if np.isfinite(value) else exact


def test_runtime_library_names_the_compiler_rt_helpers():
    assert {
        "__truncdfhf2",
        "__truncsfhf2",
        "__extendhfsf2",
        "__gnu_h2f_ieee",
        "__gnu_f2h_ieee",
        "__truncdfbf2",
        "__truncsfbf2",
        "__divti3",
        "__udivti3",
        "__modti3",
        "__umodti3",
    } <= helper_names()


def test_unresolvable_symbol_is_an_internal_error_not_an_abort():
    engine = jit_engine()
    k = next(_COUNTER)
    ir_text = (
        f"declare double @hlort_no_such_function_{k}(double)\n"
        f"define double @calls_missing_{k}(double %x) {{\n"
        f"  %r = call double @hlort_no_such_function_{k}(double %x)\n  ret double %r\n}}\n"
    )
    obj = engine.compile_ir(ir_text)
    with pytest.raises(HlortError, match=f"hlort_no_such_function_{k}") as err:
        engine.load_object(obj, [f"calls_missing_{k}"])
    assert err.value.code is ErrorCode.INTERNAL
    # the engine still works afterwards
    x = np.array([1.0, 2.5])
    got = call_helper("__truncdfhf2", "half", [("double", x)], np.float16)
    np.testing.assert_array_equal(got, x.astype(np.float16))


_NOT_ELF = """
import numpy as np
import hlort_cpu.codegen.jit as jit
jit.object_symbols = lambda obj: None  # a target whose objects' symbol tables are not read
import sys
sys.path.insert(0, {tests!r})
from test_runtime_library import call_helper
x = np.array([1.0, -2.5, 65504.0, 1e9, -0.0], np.float32)
got = call_helper("__truncsfhf2", "half", [("float", x)], np.float16)
assert jit.jit_engine()._library_loaded
assert np.array_equal(got.view(np.uint16), x.astype(np.float16).view(np.uint16)), got
print("ok")
"""


def test_a_target_without_symbol_tables_still_gets_the_helpers(tmp_path):
    """Objects that are not ELF are loaded unchecked; the runtime library goes in first."""
    script = _NOT_ELF.format(tests=os.path.dirname(__file__))
    env = {**os.environ, "HLORT_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0 and proc.stdout.split() == ["ok"], proc.stderr[-3000:]
