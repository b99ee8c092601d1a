"""What the float8 tests share: the float8 types and bit patterns, bit-exact comparison with NaN
payloads, running a module on cpu and checking it needed no interpreter fallback."""

from __future__ import annotations

import numpy as np

import hlort
from hlort import Builder, dtypes, shape
from hlort.ir.opcodes import Opcode

F8 = (dtypes.F8E4M3FN, dtypes.F8E5M2)
F8_IDS = [d.name for d in F8]
REAL = [d for d in dtypes.ALL_DTYPES if not d.is_complex]
ALL_PATTERNS = np.arange(256, dtype=np.uint8)
E5M2_PAYLOAD_NANS = np.array([0x7D, 0x7F, 0xFD, 0xFF], dtype=np.uint8)


def as_bits(a) -> np.ndarray:
    a = np.ascontiguousarray(np.asarray(a))
    return a.view(np.uint8) if a.dtype == np.bool_ else a.view(f"u{a.dtype.itemsize}")


def run_on_cpu(module, *args, fallback: int = 0):
    """(cpu result, interpreter result), asserting the number of FALLBACK thunks."""
    exe = hlort.compile(module, "cpu")
    got = exe(*args)
    stats = exe.raw.stats()
    assert stats["fallback_count"] == fallback, stats
    return got, hlort.evaluate(module, list(args))


def is_nan(a) -> np.ndarray:
    return np.isnan(np.asarray(a).astype(np.float32)).reshape(-1)


def assert_bits_equal(got, want, inputs=None, nan_operands: list | None = None) -> None:
    """Bit for bit; where every one of ``nan_operands`` is NaN, any NaN (the sign of NaN op NaN
    is the hardware's choice, as for f32: LLVM may commute the operands)."""
    g, w = as_bits(got), as_bits(want)
    assert g.shape == w.shape and g.dtype == w.dtype
    differ = g.reshape(-1) != w.reshape(-1)
    if nan_operands:
        all_nan = np.logical_and.reduce([is_nan(x) for x in nan_operands])
        differ &= ~(all_nan & is_nan(got) & is_nan(want))
    bad = np.nonzero(differ)[0]
    detail = ""
    if bad.size and inputs is not None:
        detail = f" inputs {[as_bits(x).reshape(-1)[bad[:5]] for x in inputs]}"
    assert bad.size == 0, (
        f"{bad.size} mismatches, first at {bad[:5]}: "
        f"got {g.reshape(-1)[bad[:5]]} want {w.reshape(-1)[bad[:5]]}{detail}"
    )


def float8_patterns(f8: dtypes.DType, canonical_nans: bool = False) -> np.ndarray:
    """All 256 bit patterns; e5m2's payload NaNs replaced by canonical ones when asked."""
    raw = ALL_PATTERNS.copy()
    if canonical_nans and f8 is dtypes.F8E5M2:
        raw = np.where(np.isin(raw, E5M2_PAYLOAD_NANS), raw & 0x80 | 0x7E, raw).astype(np.uint8)
    return raw.view(f8.numpy)


def unary_module(op: Opcode, dt: dtypes.DType, n: int, out: dtypes.DType | None = None, **attrs):
    b = Builder(op.value.replace("-", "_"))
    p = b.parameter(shape.array(dt, [n]))
    if out is not None:
        return b.build(b.convert(p, out))
    return b.build(b.op(op, (p,), **attrs))
