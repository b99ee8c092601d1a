"""The cpu plugin end to end: discovery, compile through the core pipeline, results vs the
interpreter, compiled-vs-fallback stats, the compile cache, threads, and fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, examples, shape  # noqa: E402

RNG = np.random.default_rng(3)


def _args(module):
    return [
        RNG.standard_normal(p.shape.dims).astype(p.shape.dtype.numpy)
        for p in module.entry.parameters
    ]


def test_cpu_backend_is_discovered():
    assert "cpu" in hlort.backends()


@pytest.mark.parametrize(
    "make",
    [
        lambda: examples.reduce_sum_fma(1 << 17),
        lambda: examples.softmax_relu_matmul(64, 32, 48),
        lambda: examples.layernorm(64, 128),
    ],
    ids=["reduce_sum_fma", "softmax_relu_matmul", "layernorm"],
)
def test_examples_compile_fully_and_match(make):
    module, reference = make()
    exe = hlort.compile(module, "cpu:0")
    args = _args(module)
    np.testing.assert_allclose(exe(*args), reference(*args), rtol=1e-4, atol=1e-4)
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    assert stats["compiled_count"] >= 1


def test_softmax_relu_matmul_is_a_matmul_plus_one_fused_pass():
    module, reference = examples.softmax_relu_matmul(64, 32, 48)
    exe = hlort.compile(module, "cpu:0")
    args = _args(module)
    np.testing.assert_allclose(exe(*args), reference(*args), rtol=1e-5, atol=1e-6)
    # [64,32]x[32,48] is narrow: the small-matmul kernel (small_dot.py) instead of BLAS
    assert exe.raw.stats()["compiled"] == {"dot (small matmul)": 1, "fusion(kInput)": 1}


def test_unsupported_ops_fall_back_and_are_counted(allow_fallback):
    b = Builder("sorting")
    x = b.parameter(shape.array("f32", [5, 7]))
    sub = b.sub("exp_less")  # an inexact comparator: sorts by it stay on the interpreter
    p, q = sub.parameter(shape.array("f32", []), "p"), sub.parameter(shape.array("f32", []), "q")
    s = b.sort(x, sub.finish(sub.compare(sub.exp(p), sub.exp(q), "LT")), 1)
    module = b.build(b.exp(s))
    exe = hlort.compile(module, "cpu:0")
    a = _args(module)[0]
    np.testing.assert_allclose(exe(a), np.exp(np.sort(a, axis=1)), rtol=1e-6)
    stats = exe.raw.stats()
    assert stats["fallback"].get("sort") == 1
    assert stats["compiled_count"] >= 1


def test_large_kernel_splits_across_threads_and_matches():
    n = 1 << 20
    b = Builder("big")
    x = b.parameter(shape.array("f32", [n]))
    module = b.build(b.tanh(b.multiply(x, x)))
    exe = hlort.compile(module, "cpu:0")
    a = _args(module)[0]
    np.testing.assert_allclose(exe(a), np.tanh(a * a), rtol=3e-7, atol=1e-7)


def test_compile_cache_hits_and_rejects_corruption(tmp_path, monkeypatch):
    import os

    from hlort_cpu import compile_cache

    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    module, reference = examples.layernorm(16, 32)
    args = _args(module)
    first = hlort.compile(module, "cpu:0")
    assert not first.raw.stats()["cache_hit"]
    compile_cache.clear_memory()
    second = hlort.compile(module, "cpu:0")
    assert second.raw.stats()["cache_hit"]
    np.testing.assert_allclose(second(*args), reference(*args), rtol=1e-4, atol=1e-5)
    for root, _, files in os.walk(tmp_path):
        for name in files:
            with open(os.path.join(root, name), "r+b") as f:
                f.seek(60)
                f.write(b"\x00garbage")
    compile_cache.clear_memory()
    third = hlort.compile(module, "cpu:0")
    assert not third.raw.stats()["cache_hit"]
    np.testing.assert_allclose(third(*args), reference(*args), rtol=1e-4, atol=1e-5)


def test_cache_can_be_disabled(monkeypatch):
    from hlort_cpu import compile_cache

    monkeypatch.setenv("HLORT_CACHE", "0")
    assert compile_cache.lookup("0" * 64) is None


def test_cache_key_depends_on_emitter_source(monkeypatch):
    """Editing the emitter (without bumping PLUGIN_VERSION) must not reuse stale object code."""
    from hlort_cpu import compile_cache

    digest = compile_cache.code_digest()
    assert len(digest) == 64 and compile_cache.code_digest() == digest
    before = compile_cache.cache_key("fp", "0.1.0", "target")
    monkeypatch.setattr(compile_cache, "_code_digest", "edited-emitter")
    assert compile_cache.cache_key("fp", "0.1.0", "target") != before


def test_deserializing_parses_the_hlo_text_once(tmp_path, monkeypatch):
    """A warm process loads serialized executables without the text parser: serializing leaves
    the module in the plugin's cache; a damaged entry is parsed again."""
    import os

    from hlort.plugin.base import simple_executable
    from hlort_cpu import compile_cache

    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    parses = []
    real = simple_executable.parse_printed_hlo
    monkeypatch.setattr(
        simple_executable, "parse_printed_hlo", lambda *a, **k: parses.append(1) or real(*a, **k)
    )
    module, _ = examples.layernorm(8, 16)
    args = _args(module)
    exe = hlort.compile(module, "cpu:0")
    data, backend = exe.serialize(), hlort.backend("cpu")
    for _ in range(2):
        again = backend.deserialize(data)
        np.testing.assert_array_equal(again(*args), exe(*args))
    assert len(parses) == 0  # serialize() left the module in the cache
    for root, _, files in os.walk(tmp_path / "cpu"):
        for name in files:
            with open(os.path.join(root, name), "r+b") as f:
                f.seek(48)
                f.write(b"\x00damaged")
    compile_cache.clear_memory()
    np.testing.assert_array_equal(backend.deserialize(data)(*args), exe(*args))
    assert len(parses) == 1


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32", "f64"])
def test_scalar_transcendentals_compile(dtype):
    """One-element loops with big bodies: an interleave hint on them once made LLVM's
    vectorizer run for minutes (scalar bf16 cbrt); each must compile and match."""
    from hlort.ir import Opcode

    b = Builder("scalars")
    x = b.parameter(shape.array(dtype, []))
    outs = [
        b.op(op, (x,))
        for op in (Opcode.CBRT, Opcode.TANH, Opcode.SINE, Opcode.EXP, Opcode.LOG, Opcode.ERF)
    ]
    module = b.build(b.tuple(outs))
    exe = hlort.compile(module, "cpu:0")
    v = np.array(0.75, shape.array(dtype, []).dtype.numpy)
    rtol = {"bf16": 8e-3, "f16": 1e-3, "f32": 4e-7, "f64": 1e-15}[dtype]  # ~2-4 ulp
    for got, want in zip(exe(v), hlort.evaluate(module, [v]), strict=True):
        np.testing.assert_allclose(np.float64(got), np.float64(want), rtol=rtol)
    assert exe.raw.stats()["fallback_count"] == 0


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f8e5m2", "c64"])
def test_a_cached_module_compiles_without_its_object_code(tmp_path, monkeypatch, dtype):
    """The module cached by serialize() is compiled again when its object code is gone (an
    emitter edit, another CPU): decoded dtypes must be the module's constants (the emitter
    compares them by identity)."""
    import shutil

    from hlort.ir.module import Module
    from hlort_cpu import compile_cache

    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    b = Builder("narrow")
    x = b.parameter(shape.array(dtype, [64]))
    module = b.build(b.add(b.exp(x), x))
    v = (RNG.standard_normal(64) * 0.5).astype(shape.array(dtype, [1]).dtype.numpy)
    exe = hlort.compile(module, "cpu:0")
    data = exe.serialize()
    for entry in (tmp_path / "cpu").rglob("*"):
        if entry.is_file() and not isinstance(compile_cache.lookup_module(entry.name), Module):
            entry.unlink(missing_ok=True)  # object code gone, the module entry kept
    shutil.rmtree(tmp_path / "executables", ignore_errors=True)
    compile_cache.clear_memory()
    again = hlort.backend("cpu").deserialize(data)
    assert not again.raw.stats()["cache_hit"]
    np.testing.assert_array_equal(again(v), exe(v))


def test_caching_is_best_effort_when_a_module_cannot_be_encoded(tmp_path, monkeypatch):
    from hlort.ir import module_codec

    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))

    def deep(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(module_codec, "encode_module", deep)
    module, reference = examples.layernorm(8, 16)
    args = _args(module)
    exe = hlort.compile(module, "cpu:0")
    exe.serialize()
    np.testing.assert_allclose(exe(*args), reference(*args), rtol=1e-4, atol=1e-5)
