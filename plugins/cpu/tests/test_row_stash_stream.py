"""Row kernels that stash a reduce's folded values for the loops after it (row_stash.py) and
stream big element outputs through a stack row with non-temporal stores (row_stream.py) give
the same bits as the kernels that compute everything again and store in place, and match the
interpreter: softmax (plain, masked and scaled as attention's, of f16/bf16 accumulated in f32),
layernorm with its row values as outputs too, ``x - max(x)`` and ``x == max(x)`` (f32, f16,
bf16 and pred outputs that stream); rows of 0, 1, 2 and many elements, several reduced
dimensions; inputs with NaN, +-inf, -0.0 and subnormals; outputs 64-byte aligned and
not (the copy's plain path)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, dtypes, shape  # noqa: E402
from hlort.testing.values import mixed  # noqa: E402
from hlort_cpu import compile_cache, host_pool  # noqa: E402
from hlort_cpu.codegen import row_stash, row_stream  # noqa: E402
from hlort_cpu.codegen.cpu_target import CPU_TARGET  # noqa: E402

RAW = {"debug": {"disabled_passes": ["simplify"]}}


def _reduce(b, x, op, init, dims):
    f32 = x.shape.dtype
    return b.reduce(x, b.constant(np.array(init, f32.numpy)), b.scalar_computation(op, f32), dims)


def _row(b, v, dims, kept):
    return b.broadcast(v, list(dims), list(range(kept)))


def softmax(dims, dt="f32", masked=False, reduced=1):
    """softmax over the last ``reduced`` dimensions; ``masked``: of causal-masked scores / 8
    (attention's); narrow inputs are converted to f32 first (JAX's softmax of f16/bf16)."""
    b = Builder("softmax")
    x = b.parameter(shape.array(dt, list(dims)))
    kept = len(dims) - reduced
    axes = list(range(kept, len(dims)))
    if dt != "f32":
        x = b.convert(x, "f32")
    f32 = x.shape.dtype
    if masked:
        eight = b.broadcast(b.constant(np.float32(8)), list(dims), [])
        x = b.divide(x, eight)
        s = shape.array("s32", list(dims))
        keep = b.compare(b.iota(s, kept - 1), b.iota(s, kept), "GE") if kept else None
        low = b.broadcast(b.constant(np.float32(-3.4028235e38)), list(dims), [])
        x = b.select(keep, x, low) if keep is not None else x
    m = _reduce(b, x, "maximum", -np.inf, axes)
    e = b.exp(b.subtract(x, _row(b, m, dims, kept)))
    total = _reduce(b, e, "add", 0.0, axes)
    out = b.divide(e, _row(b, total, dims, kept))
    return b.build(out if dt == "f32" else b.convert(out, dt)), f32


def layernorm(dims):
    """layernorm over the last two dimensions, returning (output, mean, variance)."""
    b = Builder("layernorm")
    x = b.parameter(shape.array("f32", list(dims)))
    kept, n = len(dims) - 2, dims[-1] * dims[-2]
    inv = b.broadcast(b.constant(np.float32(1.0 / max(n, 1))), list(dims[:kept]), [])
    mean = b.multiply(_reduce(b, x, "add", 0.0, [kept, kept + 1]), inv)
    centered = b.subtract(x, _row(b, mean, dims, kept))
    sq = b.multiply(centered, centered)
    var = b.multiply(_reduce(b, sq, "add", 0.0, [kept, kept + 1]), inv)
    eps = b.broadcast(b.constant(np.float32(1e-5)), list(dims[:kept]), [])
    out = b.multiply(centered, _row(b, b.rsqrt(b.add(var, eps)), dims, kept))
    return b.build(b.tuple([out, mean, var])), x.shape.dtype


def centered(dims, dt="f32"):
    """(x - max(x), x == max(x)) over the last dimension, in ``dt``: cheap element outputs (they
    stream) of 4, 2 and 1 bytes."""
    b = Builder("centered")
    x = b.parameter(shape.array(dt, list(dims)))
    kept = len(dims) - 1
    m = _row(b, _reduce(b, x, "maximum", -np.inf, [kept]), dims, kept)
    return b.build(b.tuple([b.subtract(x, m), b.compare(x, m, "EQ")])), x.shape.dtype


PROGRAMS = {"softmax": softmax, "layernorm": layernorm, "centered": centered}
CASES = [
    ("softmax", (4, 1024), {}),
    ("softmax", (3, 2), {}),
    ("softmax", (5, 1), {}),
    ("softmax", (0, 16), {}),
    ("softmax", (2, 0), {}),
    ("softmax", (7, 48), {"dt": "f16"}),
    ("softmax", (7, 48), {"dt": "bf16"}),
    ("softmax", (2, 16, 32), {"masked": True}),
    ("softmax", (3, 100), {"masked": True}),
    ("softmax", (3, 4, 16), {"reduced": 2}),
    ("layernorm", (3, 4, 64), {}),
    ("layernorm", (2, 1, 1), {}),
    ("centered", (5, 64), {}),
    ("centered", (3, 128), {"dt": "f16"}),
    ("centered", (3, 128), {"dt": "bf16"}),
]
IDS = [f"{n}-{'x'.join(map(str, d))}-{'-'.join(f'{v}' for v in kw.values())}" for n, d, kw in CASES]


def _compile(module, monkeypatch, stash: bool, stream: bool):
    """The module's executable with the stash and streaming on or off (streaming forced on for
    outputs of any size); the compile cache key names the changed settings (code_settings.py)."""
    monkeypatch.setattr(row_stash, "STASH_MAX_BYTES", 32 << 10 if stash else 0)
    monkeypatch.setattr(row_stream, "STREAM_MIN_BYTES", 0 if stream else 1 << 62)
    return hlort.compile(module, "cpu:0", options=RAW)


def _misaligned_pool(monkeypatch, offset: int) -> None:
    """Every pooled output starts ``offset`` bytes past a 64-byte boundary."""
    monkeypatch.setattr(host_pool, "POOL_MIN_BYTES", 0)

    def empty(self, dims, dtype):
        nbytes = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
        raw = np.empty(nbytes + 128, np.uint8)
        start = -raw.ctypes.data % 64 + offset
        return raw[start : start + nbytes].view(dtype).reshape(tuple(dims))

    monkeypatch.setattr(host_pool.HostPool, "empty", empty)


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize in (1, 2, 4, 8) else a


@pytest.mark.parametrize("offset", [0, 4])
@pytest.mark.parametrize("name,dims,kw", CASES, ids=IDS)
def test_stash_and_stream_give_the_bits_of_recomputing(name, dims, kw, offset, monkeypatch):
    module, _ = PROGRAMS[name](dims, **kw)
    dt = dtypes.from_hlo_name(kw.get("dt", "f32"))
    x = mixed(dt, dims, np.random.default_rng(len(dims) * 7 + dims[-1]))
    plain = _compile(module, monkeypatch, False, False)
    fast = _compile(module, monkeypatch, True, True)
    _misaligned_pool(monkeypatch, offset)
    got, want = fast(x), plain(x)
    got = got if isinstance(got, list | tuple) else [got]
    want = want if isinstance(want, list | tuple) else [want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(_bits(np.asarray(g)), _bits(np.asarray(w)))
    ref = hlort.evaluate(module, [x])
    ref = ref if isinstance(ref, list | tuple) else [ref]
    narrow = kw.get("dt", "f32") != "f32"
    for g, w in zip(got, ref, strict=True):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        # exp within an ulp or two of NumPy's, sums reassociated; narrow outputs round once
        np.testing.assert_allclose(g, w, rtol=1e-2 if narrow else 1e-5, atol=1e-6, equal_nan=True)


def _kernel_text(module, tmp_path, monkeypatch, tag: str) -> str:
    monkeypatch.setattr(row_stream, "STREAM_MIN_BYTES", 0)
    key = compile_cache.cache_key
    monkeypatch.setattr(compile_cache, "cache_key", lambda *a: key(*a) + tag)
    hlort.compile(module, "cpu:0", options={**RAW, "dump_dir": str(tmp_path)})
    (ll,) = tmp_path.glob("*.cpu.kernels.ll")
    return ll.read_text()


def test_softmax_kernel_computes_exp_once_and_does_not_stream(tmp_path, monkeypatch):
    """exp once per element (the stash); a transcendental per element: plain stores."""
    text = _kernel_text(softmax((4, 1024))[0], tmp_path, monkeypatch, "-ir-softmax")
    rounding = "llvm.lrint.i32.f32" if CPU_TARGET.math.lrint_instruction else "llvm.roundeven.f32"
    assert text.count(rounding) == 1 + 1  # one exp in the loops, plus its declare
    assert "!nontemporal" not in text and "fence" not in text


def test_layernorm_kernel_streams_its_output(tmp_path, monkeypatch):
    text = _kernel_text(layernorm((4, 2, 64))[0], tmp_path, monkeypatch, "-ir-layernorm")
    assert "!nontemporal" in text and text.count("fence seq_cst") == 1
