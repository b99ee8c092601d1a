"""A module's kernels compiled in parts on several threads (kernel_parts.py,
codegen/parallel_compile.py): each part's object is byte for byte the one a one-thread compile
of its text gives, the split depends on the program and not on the thread count, a program in
parts computes bit for bit what it computes in one part, a part's error is raised on the caller,
and a cache entry of several objects survives the disk."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
import hlort_cpu.compiler as compiler  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort_cpu import compile_cache, kernel_parts  # noqa: E402
from hlort_cpu.codegen.jit import jit_engine  # noqa: E402
from hlort_cpu.codegen.parallel_compile import compile_parts  # noqa: E402

RNG = np.random.default_rng(7)


def _four_kernels():
    """Four independent kernels: a row and a column reduction, a transpose and a loop."""
    b = Builder("four_kernels")
    x, y, z, w = (b.parameter(shape.array("f32", [64, 96])) for _ in range(4))
    add = b.scalar_computation("add", "f32")
    zero = b.constant(np.float32(0))
    rows = b.reduce(b.multiply(x, x), zero, add, [1])
    cols = b.reduce(b.exp(y), zero, add, [0])
    turned = b.transpose(b.add(z, z), [1, 0])
    loop = b.tanh(b.multiply(w, b.exp(w)))
    return b.build(b.tuple([rows, cols, turned, loop]))


def _inputs():
    args = [RNG.standard_normal((64, 96)).astype(np.float32) for _ in range(4)]
    args[0][0, :3] = [np.nan, np.inf, -0.0]
    args[3][1, :3] = [np.nan, -np.inf, -0.0]
    return args


def _compile(monkeypatch, module):
    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setattr(compiler, "_loaded", {})  # loaded kernels are memoized per key
    return hlort.compile(module, "cpu")


def _parts(exe) -> int:
    return exe.raw.program.ir_text.count("; ModuleID")


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_parts_do_not_depend_on_the_threads_and_compute_what_one_part_does(monkeypatch, threads):
    module, args = _four_kernels(), _inputs()
    monkeypatch.setattr(kernel_parts, "MAX_PARTS", 1)
    whole = _compile(monkeypatch, module)
    assert _parts(whole) == 1
    want = whole(*args)
    monkeypatch.setattr(kernel_parts, "MAX_PARTS", 4)
    monkeypatch.setenv(kernel_parts.THREADS_ENV, threads)
    split = _compile(monkeypatch, module)
    assert _parts(split) == 4 and split.raw.stats()["fallback_count"] == 0
    files = {k: v for k, v in split.raw.program.artifacts().items() if k.endswith(".ll")}
    assert sorted(files) == [f"kernels.{i}.ll" for i in range(4)]  # one module a file
    assert all(text.count("; ModuleID") == 1 for text in files.values())
    assert list(whole.raw.program.artifacts()).count("kernels.ll") == 1
    got = split(*args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g).view(np.uint32), np.asarray(w).view(np.uint32))
    reference = hlort.evaluate(module, args)
    for g, r in zip(got, reference, strict=True):
        np.testing.assert_allclose(np.asarray(g), r, rtol=2e-6, atol=1e-6)


def test_each_part_is_the_object_a_one_thread_compile_makes(monkeypatch):
    texts = []
    engine = jit_engine()
    parts_of = engine.compile_ir_parts

    def spy(ir_texts, threads):
        texts.extend(ir_texts)
        return parts_of(ir_texts, threads)

    monkeypatch.setattr(engine, "compile_ir_parts", spy)
    _compile(monkeypatch, _four_kernels())
    assert len(texts) == 4
    together = compile_parts(engine.host, [engine.with_vector_width(t) for t in texts], 2)
    assert together == [engine.compile_ir(t) for t in texts]


def test_a_part_that_fails_raises_on_the_caller_after_the_others_finished():
    engine = jit_engine()
    good = "define void @hltest_part_ok(ptr %t, i64 %b, i64 %e) {\nentry:\n  ret void\n}\n"
    with pytest.raises(RuntimeError, match="parsing error"):
        compile_parts(engine.host, [good, "define void @broken( {", good], 2)


def test_kernel_parts_are_balanced_deterministic_and_whole_when_asked():
    costs = [50, 10, 12, 10, 40, 30, 31, 5]
    parts = kernel_parts.kernel_parts(costs)
    assert sorted(k for p in parts for k in p) == list(range(len(costs)))
    assert len(parts) == kernel_parts.MAX_PARTS
    loads = [sum(costs[k] for k in p) for p in parts]
    assert max(loads) - min(loads) <= max(costs[k] for p in parts for k in p if len(p) > 1)
    assert kernel_parts.kernel_parts(costs) == parts and all(p == sorted(p) for p in parts)
    assert kernel_parts.kernel_parts(costs, whole=True) == [list(range(len(costs)))]
    assert kernel_parts.kernel_parts([9]) == [[0]]
    assert kernel_parts.kernel_parts([3, 4]) == [[1], [0]]


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_bad_thread_count_is_invalid_argument_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(kernel_parts.THREADS_ENV, value)
    with pytest.raises(hlort.HlortError, match=kernel_parts.THREADS_ENV) as info:
        kernel_parts.compile_threads(4)
    assert info.value.code.name == "INVALID_ARGUMENT"


def test_thread_count_is_capped_by_the_parts_and_the_variables(monkeypatch):
    monkeypatch.delenv(kernel_parts.THREADS_ENV, raising=False)
    monkeypatch.delenv("HLORT_CPU_THREADS", raising=False)
    assert kernel_parts.compile_threads(1) == 1
    assert 1 <= kernel_parts.compile_threads(64) <= 64
    monkeypatch.setenv(kernel_parts.THREADS_ENV, "1")
    assert kernel_parts.compile_threads(4) == 1
    monkeypatch.delenv(kernel_parts.THREADS_ENV)
    monkeypatch.setenv("HLORT_CPU_THREADS", "1")  # the user's limit on hlort's threads
    assert kernel_parts.compile_threads(4) == 1


def test_an_entry_of_several_objects_survives_the_disk(monkeypatch, tmp_path):
    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    key = "ab" * 32
    compile_cache.store(key, [b"\x7fELF one", b"\x7fELF two"], [])
    compile_cache.clear_memory()
    assert compile_cache.lookup(key) == ([b"\x7fELF one", b"\x7fELF two"], [])
    compile_cache.store(key[::-1], b"\x7fELF single", [])
    compile_cache.clear_memory()
    assert compile_cache.lookup(key[::-1]) == (b"\x7fELF single", [])
