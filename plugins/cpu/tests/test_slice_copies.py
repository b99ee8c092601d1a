"""Small standalone slices of the entry run as NumPy copies (slice_copies.py), not LLVM
kernels: bit for bit the interpreter's values for every dtype (random bit patterns, so NaN
payloads, +-inf and -0.0 among them), strided, empty and rank-3 slices; never a view of an
input or of an earlier result; large ones, reshapes and those a loop reads stay kernels."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
import hlort_cpu.compiler as compiler  # noqa: E402
from hlort.text.parser import parse_module  # noqa: E402
from hlort_cpu.slice_copies import COPY_MAX_BYTES  # noqa: E402

RNG = np.random.default_rng(23)
DTYPES = ["f32", "f64", "f16", "bf16", "s8", "u16", "s32", "s64", "pred", "c64"]


def _random(dtype: str, dims: tuple[int, ...]) -> np.ndarray:
    """Random bits of ``dtype`` (any float bit pattern: NaNs, infinities, -0.0 included)."""
    np_dtype = np.dtype(hlort.dtypes.from_hlo_name(dtype).numpy)
    if dtype == "pred":
        return RNG.integers(0, 2, dims).astype(bool)
    raw = RNG.integers(0, 256, int(np.prod(dims)) * np_dtype.itemsize, dtype=np.uint8)
    return raw.view(np_dtype).reshape(dims)


def _compile_and_check(text: str, args: list[np.ndarray]):
    module = parse_module(text)
    want = hlort.evaluate(module, args)
    exe = hlort.compile(module, "cpu")
    kept = [a.copy() for a in args]
    first, second = exe(*args), exe(*args)
    firsts = first if isinstance(first, tuple) else (first,)
    seconds = second if isinstance(second, tuple) else (second,)
    wants = want if isinstance(want, tuple) else (want,)
    for got, again, ref in zip(firsts, seconds, wants, strict=True):
        assert np.asarray(got).tobytes() == np.asarray(ref).tobytes()
        assert np.asarray(got).shape == np.asarray(ref).shape
        assert not np.may_share_memory(got, again)
        for a in args:
            assert not np.may_share_memory(got, a)
    for a, k in zip(args, kept, strict=True):
        assert a.tobytes() == k.tobytes()
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    return stats


CASES = {  # name: (operand dims, result dims, instruction)
    "strided slice": ((6, 10), (2, 3), "slice(x), slice={[1:5:2], [2:10:3]}"),
    "empty slice": ((6, 10), (0, 10), "slice(x), slice={[3:3], [0:10]}"),
    "one element": ((3, 4), (1, 1), "slice(x), slice={[2:3], [3:4]}"),
    "rank-3 slice": ((4, 5, 6), (4, 2, 6), "slice(x), slice={[0:4], [3:5], [0:6]}"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_slices_and_reshapes_copy_bit_for_bit(dtype, case):
    dims, out, expr = CASES[case]
    shape = lambda d: f"{dtype}[{','.join(map(str, d))}]"  # noqa: E731
    text = f"HloModule copies\nENTRY main {{\n  x = {shape(dims)} parameter(0)\n"
    text += f"  ROOT c = {shape(out)} {expr}\n}}\n"
    stats = _compile_and_check(text, [_random(dtype, dims)])
    assert stats["compiled"] == {"slice (copy)": 1}, stats


def test_a_reshape_stays_a_kernel():
    text = "HloModule r\nENTRY main {\n  x = f32[6,10] parameter(0)\n"
    text += "  ROOT r = f32[3,20] reshape(x)\n}\n"
    stats = _compile_and_check(text, [_random("f32", (6, 10))])
    assert stats["compiled"] == {"reshape": 1}, stats


def test_a_dots_operand_slices_are_copies_with_the_kernels_bits(monkeypatch):
    """The same bits as with the slices compiled as kernels (the dot and exp round as BLAS
    and LLVM do, so the interpreter is not the reference here; it is within tolerance)."""
    text = """HloModule blocks
ENTRY main {
  q = f32[4,64,16] parameter(0)
  k = f32[4,64,16] parameter(1)
  e = f32[4,64,16] exponential(k)
  qs = f32[4,32,16] slice(q), slice={[0:4], [32:64], [0:16]}
  ks = f32[4,32,16] slice(e), slice={[0:4], [0:32], [0:16]}
  ROOT d = f32[4,32,32] dot(qs, ks), lhs_batch_dims={0}, lhs_contracting_dims={2}, """
    text += "rhs_batch_dims={0}, rhs_contracting_dims={2}\n}\n"
    q, k = (RNG.standard_normal((4, 64, 16)).astype(np.float32) for _ in range(2))
    q[0, 40, 3], q[1, 33, 0], k[2, 5, 7] = np.nan, -np.inf, -0.0
    module = parse_module(text)
    monkeypatch.setenv("HLORT_CACHE", "0")  # the two compiles differ in their kernels
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    # qs is a copy; ks fuses with the exponential
    assert stats["compiled"].get("slice (copy)") == 1 and "slice" not in stats["compiled"]
    got = exe(q, k)
    np.testing.assert_allclose(got, hlort.evaluate(module, [q, k]), rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(compiler, "slice_copies", lambda order: set())
    monkeypatch.setattr(compiler, "_loaded", {})  # loaded kernels are memoized per cache key
    kernels = hlort.compile(module, "cpu")
    assert kernels.raw.stats()["compiled"].get("slice") == 1
    assert np.asarray(got).tobytes() == np.asarray(kernels(q, k)).tobytes()
    assert not np.may_share_memory(got, exe(q, k))


def test_a_large_slice_stays_a_kernel():
    cols = COPY_MAX_BYTES // 4 // 2 + 1  # two rows of f32: just over the limit
    text = f"""HloModule big
ENTRY main {{
  x = f32[3,{cols}] parameter(0)
  s = f32[2,{cols}] slice(x), slice={{[1:3], [0:{cols}]}}
  ROOT n = f32[2,{cols}] negate(s)
}}
"""
    module = parse_module(text)
    stats = hlort.compile(module, "cpu").raw.stats()
    assert "slice (copy)" not in stats["compiled"], stats


def test_a_loops_initial_state_slice_stays_a_kernel():
    text = """HloModule loop
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  x2 = f32[4] add(x, x)
  ROOT t = (s32[], f32[4]) tuple(i2, x2)
}
ENTRY main {
  x = f32[8] parameter(0)
  s = f32[4] slice(x), slice={[2:6]}
  z = s32[] constant(0)
  init = (s32[], f32[4]) tuple(z, s)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
"""
    x = RNG.standard_normal(8).astype(np.float32)
    x[3] = np.inf
    stats = _compile_and_check(text, [x])
    assert "slice (copy)" not in stats["compiled"], stats


@pytest.mark.parametrize("extra", [-1, 0])
def test_a_slice_the_pool_would_split_stays_a_kernel(extra):
    """Under COPY_MAX_BYTES but of PARALLEL_MIN_ELEMENTS elements or more, a kernel runs on
    every core and a NumPy copy on one (causal attention's 1 MiB slices were 7-10% slower as
    copies): one element fewer than the pool's split size is a copy, the split size a kernel."""
    from hlort_cpu.thread_pool import PARALLEL_MIN_ELEMENTS

    cols = PARALLEL_MIN_ELEMENTS // 2 + (extra if extra else 0)
    size = 2 * cols
    assert size * 4 <= COPY_MAX_BYTES
    text = f"""HloModule split_size
ENTRY main {{
  x = f32[3,{cols}] parameter(0)
  ROOT s = f32[2,{cols}] slice(x), slice={{[1:3], [0:{cols}]}}
}}
"""
    stats = _compile_and_check(text, [_random("f32", (3, cols))])
    copied = "slice (copy)" in stats["compiled"]
    assert copied == (size < PARALLEL_MIN_ELEMENTS), (size, stats)
