"""A module's kernels compiled in parts on several threads (kernel_parts.py,
codegen/parallel_compile.py): each part's object is byte for byte the one a one-thread compile
of its text gives, the split depends on the program and not on the thread count, a program in
parts computes bit for bit what it computes in one part, a part's error is raised on the caller,
and a cache entry of several objects survives the disk."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
import hlort_cpu.compiler as compiler  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort_cpu import compile_cache, kernel_parts  # noqa: E402
from hlort_cpu.codegen import parallel_compile  # noqa: E402
from hlort_cpu.codegen.jit import jit_engine  # noqa: E402
from hlort_cpu.codegen.parallel_compile import compile_parts  # noqa: E402
from hlort_cpu.codegen.while_driver import KernelCall  # noqa: E402

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


def _compile(monkeypatch, module, split_small: bool = True):
    """Compile with the cache off; ``split_small``: the test modules are small, and parted
    only below the real minimum part cost (kernel_parts.MIN_PART_COST)."""
    if split_small:
        monkeypatch.setattr(kernel_parts, "MIN_PART_COST", 1)
    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setattr(compiler, "_loaded", {})  # loaded kernels are memoized per key
    return hlort.compile(module, "cpu")


def _parts(exe) -> int:
    return exe.raw.program.ir_text.count("; ModuleID")


@pytest.mark.parametrize("threads", ["2", "3"])
def test_parts_do_not_depend_on_the_threads_and_compute_what_one_part_does(monkeypatch, threads):
    module, args = _four_kernels(), _inputs()
    monkeypatch.setenv(kernel_parts.THREADS_ENV, "1")  # one thread: the module compiles whole
    whole = _compile(monkeypatch, module)
    assert _parts(whole) == 1
    want = whole(*args)
    monkeypatch.setenv(kernel_parts.THREADS_ENV, threads)
    monkeypatch.setattr(kernel_parts, "cores_available", lambda: 8)
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


def test_the_split_ignores_the_core_count_once_two_threads_compile(monkeypatch):
    monkeypatch.delenv(kernel_parts.THREADS_ENV, raising=False)
    monkeypatch.delenv("HLORT_CPU_THREADS", raising=False)
    texts = {}
    for cores in (1, 2, 3, 16):
        monkeypatch.setattr(kernel_parts, "cores_available", lambda cores=cores: cores)
        texts[cores] = _compile(monkeypatch, _four_kernels()).raw.program.ir_texts
    assert len(texts[1]) == 1 and len(texts[2]) == 4
    assert texts[2] == texts[3] == texts[16]


def test_kernels_calling_the_outlined_f64_pow_share_a_part(monkeypatch):
    b = Builder("pows")
    xs = [b.parameter(shape.array("f64", [256])) for _ in range(4)]
    y = b.parameter(shape.array("f32", [256]))
    add = b.scalar_computation("add", "f64")
    pows = [b.reduce(b.power(x, b.exp(x)), b.constant(np.float64(0)), add, [0]) for x in xs[:2]]
    rest = [b.tanh(xs[2]), b.reduce(xs[3], b.constant(np.float64(0)), add, [0]), b.exp(y)]
    module = b.build(b.tuple([*pows, *rest]))
    monkeypatch.setenv(kernel_parts.THREADS_ENV, "2")
    exe = _compile(monkeypatch, module)
    texts = exe.raw.program.ir_texts
    assert len(texts) >= 2
    assert sum('define internal double @"hlort_pow_f64"(' in t for t in texts) == 1, texts
    rng = np.random.default_rng(3)
    args = [np.abs(rng.standard_normal(256)) for _ in range(4)]
    args.append(rng.standard_normal(256).astype(np.float32))
    for g, r in zip(exe(*args), hlort.evaluate(module, args), strict=True):
        tight = np.asarray(r).dtype == np.float64  # f32 exp: within 2 ulp of NumPy's
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-13 if tight else 2.5e-7, atol=0)


def test_each_part_is_the_object_a_one_thread_compile_makes(monkeypatch):
    engine = jit_engine()
    texts = _texts_of(monkeypatch, _four_kernels())
    assert len(texts) == 4
    together = compile_parts(engine.host, [engine.with_vector_width(t) for t in texts], 2)
    assert together == [engine.compile_ir(t) for t in texts]


def _part_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("hlort-llvm-part")]


def test_a_part_that_fails_raises_on_the_caller_after_the_others_finished():
    engine = jit_engine()
    good = "define void @hltest_part_ok(ptr %t, i64 %b, i64 %e) {\nentry:\n  ret void\n}\n"
    with pytest.raises(RuntimeError, match="parsing error"):
        compile_parts(engine.host, [good, "define void @broken( {", good, good], 2)
    assert not _part_threads()


def test_an_interrupt_on_the_caller_waits_for_the_part_threads(monkeypatch):
    """Ctrl-C while the caller compiles its part: no part thread is left inside LLVM, no part
    starts after it, and the interrupt (not a part's error) is what is raised."""
    engine = jit_engine()
    main = threading.current_thread()
    started = []
    alone = parallel_compile._compile_alone

    def compile_alone(host, text):
        started.append(text)
        if threading.current_thread() is main:
            time.sleep(0.05)  # a helper is inside LLVM meanwhile
            raise KeyboardInterrupt
        time.sleep(0.02)  # a helper's part takes a while
        return alone(host, text)

    monkeypatch.setattr(parallel_compile, "_compile_alone", compile_alone)
    texts = [f"define void @hltest_int_{i}() {{\nentry:\n  ret void\n}}\n" for i in range(12)]
    with pytest.raises(KeyboardInterrupt):
        compile_parts(engine.host, texts, 2)
    assert not _part_threads() and len(started) < len(texts)
    monkeypatch.setattr(parallel_compile, "_compile_alone", alone)
    assert len(compile_parts(engine.host, texts[:3], 2)) == 3  # and the next compile runs


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")
def test_a_fork_during_a_parallel_compile_leaves_the_child_able_to_compile(monkeypatch):
    engine = jit_engine()
    texts = [jit_engine().with_vector_width(t) for t in _texts_of(monkeypatch, _four_kernels())]
    worker = threading.Thread(target=compile_parts, args=(engine.host, texts * 3, 2))
    worker.start()
    time.sleep(0.02)
    pid = os.fork()
    if pid == 0:  # the child: a fresh lock, and parts compile
        code = 1
        try:
            if parallel_compile._RUNNING.acquire(timeout=5):
                parallel_compile._RUNNING.release()
                code = 0 if len(compile_parts(engine.host, texts[:2], 2)) == 2 else 1
        finally:
            os._exit(code)
    worker.join()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_llvmlite_still_exposes_the_raw_functions_the_unlocked_calls_use():
    """Without them the two long calls take llvmlite's lock (correct, one part at a time):
    an llvmlite upgrade that drops ``_cfn`` must not silently serialize the parts."""
    from llvmlite.binding import ffi

    for name in ("LLVMPY_RunNewModulePassManager", "LLVMPY_TargetMachineEmitToMemory"):
        assert hasattr(getattr(ffi.lib, name), "_cfn"), name


def _texts_of(monkeypatch, module) -> list[str]:
    monkeypatch.setenv(kernel_parts.THREADS_ENV, "2")
    return _compile(monkeypatch, module).raw.program.ir_texts


def test_a_small_module_compiles_whole_even_on_two_threads(monkeypatch):
    monkeypatch.setenv(kernel_parts.THREADS_ENV, "2")
    monkeypatch.setattr(kernel_parts, "cores_available", lambda: 2)
    assert _parts(_compile(monkeypatch, _four_kernels(), split_small=False)) == 1
    assert kernel_parts.kernel_parts([20, 19]) == [[0, 1]]  # 39 < 2 * MIN_PART_COST
    assert len(kernel_parts.kernel_parts([40, 40])) == 2


def test_kernel_parts_are_balanced_deterministic_and_whole_when_asked(monkeypatch):
    monkeypatch.setattr(kernel_parts, "MIN_PART_COST", 1)
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
    together = kernel_parts.kernel_parts([5, 5, 5, 5], ["pow", None, "pow", None])
    assert [0, 2] in together and len(together) == 3


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_bad_thread_count_is_invalid_argument_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(kernel_parts.THREADS_ENV, value)
    with pytest.raises(hlort.HlortError, match=kernel_parts.THREADS_ENV) as info:
        kernel_parts.compile_threads(4)
    assert info.value.code.name == "INVALID_ARGUMENT"


def test_thread_count_is_capped_by_the_cores_the_parts_and_the_variables(monkeypatch):
    monkeypatch.delenv(kernel_parts.THREADS_ENV, raising=False)
    monkeypatch.delenv("HLORT_CPU_THREADS", raising=False)
    monkeypatch.setattr(kernel_parts, "cores_available", lambda: 2)
    assert [kernel_parts.compile_threads(p) for p in (1, 2, 4)] == [1, 2, 2]
    monkeypatch.setenv("HLORT_CPU_THREADS", "8")  # never more threads than cores
    assert kernel_parts.compile_threads(4) == 2
    monkeypatch.setenv("HLORT_CPU_THREADS", "1")  # the user's limit on hlort's threads
    assert kernel_parts.compile_threads(4) == 1
    monkeypatch.setenv(kernel_parts.THREADS_ENV, "2")  # the compile's own variable wins
    assert kernel_parts.compile_threads(4) == 2
    monkeypatch.setenv(kernel_parts.THREADS_ENV, "1")
    assert kernel_parts.compile_threads(4) == 1


def test_a_bad_kernel_thread_count_is_invalid_argument_too(monkeypatch):
    monkeypatch.delenv(kernel_parts.THREADS_ENV, raising=False)
    monkeypatch.setenv("HLORT_CPU_THREADS", "abc")
    with pytest.raises(hlort.HlortError, match="HLORT_CPU_THREADS") as info:
        kernel_parts.compile_threads(4)
    assert info.value.code.name == "INVALID_ARGUMENT"


def test_an_entry_of_several_objects_survives_the_disk(monkeypatch, tmp_path):
    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    key = "ab" * 32
    compile_cache.store(key, [b"\x7fELF one", b"\x7fELF two"], [])
    compile_cache.clear_memory()
    assert compile_cache.lookup(key, parts=True) == ([b"\x7fELF one", b"\x7fELF two"], [])
    assert compile_cache.lookup(key) is None  # a one-object caller never gets a list
    compile_cache.store(key[::-1], b"\x7fELF single", [])
    compile_cache.clear_memory()
    assert compile_cache.lookup(key[::-1]) == (b"\x7fELF single", [])


def _loop_and_kernels():
    """A native while loop (``x = tanh(x) * 0.5 + exp(-x) * 0.25`` n times) beside three
    kernels of the entry: the loop's kernels and its driver share a part, the rest split."""
    b = Builder("loop_and_kernels")
    x_shape = shape.array("f32", [64, 96])
    state = shape.tuple_of(shape.scalar("s32"), shape.scalar("s32"), x_shape)
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.get_tuple_element(p, 1), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, n, x = (bb.get_tuple_element(p, k) for k in range(3))

    def const(v):
        return bb.broadcast(bb.constant(np.float32(v)), [64, 96], [])

    x = bb.add(bb.multiply(bb.tanh(x), const(0.5)), bb.multiply(bb.exp(bb.negate(x)), const(0.25)))
    body = bb.finish(bb.tuple([bb.add(i, bb.constant(np.int32(1))), n, x]))
    n0, x0, y, z = (b.parameter(s) for s in (shape.scalar("s32"), x_shape, x_shape, x_shape))
    loop = b.while_loop(cond, body, b.tuple([b.constant(np.int32(0)), n0, x0]))
    add = b.scalar_computation("add", "f32")
    rows = b.reduce(b.multiply(y, y), b.constant(np.float32(0)), add, [1])
    turned = b.transpose(b.add(z, z), [1, 0])
    return b.build(b.tuple([b.get_tuple_element(loop, 2), rows, turned, b.tanh(y)]))


def test_a_native_while_loop_and_its_kernels_share_a_part_and_the_rest_split(monkeypatch):
    module = _loop_and_kernels()
    rng = np.random.default_rng(11)
    args = [np.int32(5)] + [rng.standard_normal((64, 96)).astype(np.float32) for _ in range(3)]
    planned = []
    plan = compiler._plan_whiles

    def spy(*a):
        natives = plan(*a)
        planned.extend(natives.values())
        return natives

    monkeypatch.setattr(compiler, "_plan_whiles", spy)
    monkeypatch.setenv(kernel_parts.THREADS_ENV, "1")
    whole = _compile(monkeypatch, module)
    want = whole(*args)
    monkeypatch.setenv(kernel_parts.THREADS_ENV, "2")
    monkeypatch.setattr(kernel_parts, "cores_available", lambda: 2)
    planned.clear()
    split = _compile(monkeypatch, module)
    texts = split.raw.program.ir_texts
    assert planned and len(texts) >= 2, "no native loop planned, or no split"
    driver = planned[0].plan.name
    holder = [t for t in texts if f'define void @"{driver}"' in t]
    assert len(holder) == 1  # the driver, with every kernel it calls
    plan = planned[0].plan
    calls = [s for s in (*plan.condition, *plan.body) if isinstance(s, KernelCall)]
    assert calls and all(f'define void @"{c.name}"' in holder[0] for c in calls)
    for g, w in zip(split(*args), want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
