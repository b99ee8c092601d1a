"""Kernels shared between instructions (kernel_sharing.py): slices of the entry that differ
only in where they start run one kernel from the origin with a byte offset, equal computations
one kernel. Every result is bit for bit the interpreter's and the unshared compile's (random
bit patterns: NaN payloads, +-inf, -0.0), and the module defines fewer kernels."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
import hlort_cpu.compiler as compiler  # noqa: E402
from hlort.text.parser import parse_module  # noqa: E402
from hlort_cpu.thread_pool import PARALLEL_MIN_ELEMENTS  # noqa: E402

RNG = np.random.default_rng(41)
COLS = PARALLEL_MIN_ELEMENTS // 32  # a slice of 32 rows: as big as the pool splits (a kernel)


def _random(dtype: str, dims: tuple[int, ...]) -> np.ndarray:
    np_dtype = np.dtype(hlort.dtypes.from_hlo_name(dtype).numpy)
    if dtype == "pred":
        return RNG.integers(0, 2, dims).astype(bool)
    raw = RNG.integers(0, 256, int(np.prod(dims)) * np_dtype.itemsize, dtype=np.uint8)
    if dtype == "bf16":  # signaling NaNs quieted: the loop emitter's bf16 copy quiets them
        bits = raw.view(np.uint16)  # (0x7f81 -> 0x7fc1, with or without sharing)
        nan = (bits & 0x7F80) == 0x7F80
        nan &= (bits & 0x7F) != 0
        bits[nan] |= 0x40
    return raw.view(np_dtype).reshape(dims)


def _unshared(to_compile, entry, wrap):
    return list(to_compile), list(range(len(to_compile))), {}


def _kernels(exe) -> int:
    return exe.raw.program.ir_text.count("\ndefine ")


def _check(text: str, args: list[np.ndarray], monkeypatch, exact: bool = True):
    """Compile ``text`` shared and unshared (cache off): the outputs bit for bit equal, and
    the interpreter's (bit for bit when ``exact``, else within 1e-6, abs and rel: LLVM's exp
    and sine are not NumPy's); returns the two kernel counts."""
    monkeypatch.setenv("HLORT_CACHE", "0")
    module = parse_module(text)
    want = hlort.evaluate(module, args)
    wants = want if isinstance(want, tuple) else (want,)
    kept = [a.copy() for a in args]
    counts, results = [], []
    for share in (compiler.share_kernels, _unshared):
        monkeypatch.setattr(compiler, "share_kernels", share)
        monkeypatch.setattr(compiler, "_loaded", {})  # loaded kernels are memoized per key
        exe = hlort.compile(module, "cpu")
        assert exe.raw.stats()["fallback_count"] == 0
        for _ in range(2):
            got = exe(*args)
            gots = got if isinstance(got, tuple) else (got,)
            results.append([np.asarray(g) for g in gots])
        counts.append(_kernels(exe))
    for gots in results:
        for g, r, w in zip(gots, results[-1], wants, strict=True):
            assert g.shape == r.shape == np.asarray(w).shape
            assert g.tobytes() == r.tobytes()
            if exact:
                assert g.tobytes() == np.asarray(w).tobytes()
            else:
                np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    for a, k in zip(args, kept, strict=True):
        assert a.tobytes() == k.tobytes()
    return counts[0], counts[1]


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16", "s8", "pred", "c64"])
def test_row_block_slices_share_one_kernel(dtype, monkeypatch):
    """Three 32-row slices of x at rows 0, 32 and 64 and one of y: one kernel (bf16, which
    NumPy keeps as an ml_dtypes type, is not moved: two kernels, x's at 0 and y's shared)."""
    t = f"{dtype}[32,{COLS}]"
    text = f"""HloModule blocks
ENTRY main {{
  x = {dtype}[96,{COLS}] parameter(0)
  y = {dtype}[96,{COLS}] parameter(1)
  a = {t} slice(x), slice={{[0:32], [0:{COLS}]}}
  b = {t} slice(x), slice={{[32:64], [0:{COLS}]}}
  c = {t} slice(x), slice={{[64:96], [0:{COLS}]}}
  d = {t} slice(y), slice={{[64:96], [0:{COLS}]}}
  ROOT r = ({t}, {t}, {t}, {t}) tuple(a, b, c, d)
}}
"""
    args = [_random(dtype, (96, COLS)), _random(dtype, (96, COLS))]
    shared, unshared = _check(text, args, monkeypatch)
    assert unshared == 4
    assert shared == (3 if dtype == "bf16" else 1)


def test_strided_rank3_slices_from_a_strided_input(monkeypatch):
    """Strided slices of a rank-3 operand, starting in every dimension, the operand given as a
    non-contiguous view (the thunk copies it, then offsets the copy)."""
    n = PARALLEL_MIN_ELEMENTS // 64
    t = f"f32[4,8,{n}]"
    text = f"""HloModule strided
ENTRY main {{
  x = f32[9,20,{2 * n}] parameter(0)
  a = {t} slice(x), slice={{[0:8:2], [1:17:2], [0:{2 * n}:2]}}
  b = {t} slice(x), slice={{[1:9:2], [4:20:2], [1:{2 * n}:2]}}
  ROOT r = ({t}, {t}) tuple(a, b)
}}
"""
    x = _random("f32", (9, 20, 4 * n))[:, :, ::2]
    assert not x.flags.c_contiguous
    assert _check(text, [x], monkeypatch) == (1, 2)


def test_equal_fusions_share_one_kernel(monkeypatch):
    """Two equal fused computations (names apart) on different inputs: one kernel; a third
    that differs in a constant keeps its own."""
    text = f"""HloModule fusions
f1 {{
  p = f32[64,{COLS}] parameter(0)
  e = f32[64,{COLS}] exponential(p)
  ROOT m = f32[64,{COLS}] multiply(e, p)
}}
f2 {{
  q = f32[64,{COLS}] parameter(0)
  x = f32[64,{COLS}] exponential(q)
  ROOT n = f32[64,{COLS}] multiply(x, q)
}}
f3 {{
  q = f32[64,{COLS}] parameter(0)
  x = f32[64,{COLS}] exponential(q)
  ROOT n = f32[64,{COLS}] add(x, q)
}}
ENTRY main {{
  a = f32[64,{COLS}] parameter(0)
  b = f32[64,{COLS}] parameter(1)
  c = f32[64,{COLS}] parameter(2)
  u = f32[64,{COLS}] fusion(a), kind=kLoop, calls=f1
  v = f32[64,{COLS}] fusion(b), kind=kLoop, calls=f2
  w = f32[64,{COLS}] fusion(c), kind=kLoop, calls=f3
  ROOT r = (f32[64,{COLS}], f32[64,{COLS}], f32[64,{COLS}]) tuple(u, v, w)
}}
"""
    args = [RNG.standard_normal((64, COLS)).astype(np.float32) for _ in range(3)]
    args[0][3, 5], args[1][7, 1], args[1][0, 0] = np.nan, -np.inf, -0.0
    assert _check(text, args, monkeypatch, exact=False) == (2, 3)


def test_a_loop_body_shares_with_the_entry(monkeypatch):
    """A native while's body runs the kernel the entry's equal computation compiled (the
    driver calls it by that name) and an entry slice next to it is offset: the loop's state
    is the same as unshared."""
    text = """HloModule loop
cond {
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[64] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  x2 = f32[64] sine(x)
  ROOT t = (s32[], f32[64]) tuple(i2, x2)
}
ENTRY main {
  x = f32[128] parameter(0)
  v = f32[64] parameter(1)
  s = f32[64] slice(x), slice={[64:128]}
  y = f32[64] sine(v)
  z = s32[] constant(0)
  init = (s32[], f32[64]) tuple(z, s)
  w = (s32[], f32[64]) while(init), condition=cond, body=body
  r = f32[64] get-tuple-element(w), index=1
  ROOT o = (f32[64], f32[64]) tuple(r, y)
}
"""
    x, v = RNG.standard_normal(128).astype(np.float32), RNG.standard_normal(64).astype(np.float32)
    x[3], x[70], v[5] = np.inf, -0.0, np.nan
    shared, unshared = _check(text, [x, v], monkeypatch, exact=False)
    assert shared == unshared - 1
    assert "while (native)" in hlort.compile(parse_module(text), "cpu").raw.stats()["compiled"]


def test_a_cache_hit_runs_the_shared_kernels(tmp_path, monkeypatch):
    """The object cache stores only the shared kernels; a later process (the memory cache and
    the loaded kernels cleared) maps each slice to its kernel and offset again."""
    from hlort_cpu import compile_cache

    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    t = f"f32[32,{COLS}]"
    text = f"""HloModule cached
ENTRY main {{
  x = f32[96,{COLS}] parameter(0)
  a = {t} slice(x), slice={{[0:32], [0:{COLS}]}}
  c = {t} slice(x), slice={{[64:96], [0:{COLS}]}}
  ROOT r = ({t}, {t}) tuple(c, a)
}}
"""
    x = _random("f32", (96, COLS))
    module = parse_module(text)
    first = hlort.compile(module, "cpu")
    assert not first.raw.program.cache_hit and _kernels(first) == 1
    monkeypatch.setattr(compiler, "_loaded", {})
    monkeypatch.setattr(compile_cache, "_memory", {})
    again = hlort.compile(parse_module(text), "cpu")
    assert again.raw.program.cache_hit
    for got, want in zip(again(x), (x[64:96], x[0:32]), strict=True):
        assert np.asarray(got).tobytes() == want.tobytes()
