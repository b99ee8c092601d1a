"""The compile cache's key names what produced an object: tuning constants changed at run time
(code_settings.py) and the JIT's optimization level.

A native while loop is planned again on every cache hit, so a loop-planning constant changed
between two compiles of one module used to load the first compile's driver under a plan made
for the other settings: with the arena moved onto the stack the driver read a null arena
pointer and crashed. Each test asserts the second compile is no cache hit before running it.

Tolerances, stated: the loop's integer counter and its scaled ``x`` (one multiply per trip, the
same in both) bit for bit; ``acc`` (nine small matmuls, summed in order of k with fma) to the dot
bound of test_native_while_dots.loop_tolerance, against the interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from contraction_tolerance import assert_within  # noqa: E402
from test_native_while_dots import MATMUL, _floats, bits_equal, dot_loop, loop_tolerance  # noqa: E402

import hlort  # noqa: E402
from hlort_cpu import compile_cache, native_dot, native_while, thread_pool  # noqa: E402
from hlort_cpu.codegen import code_settings, jit, llvm_start  # noqa: E402
from hlort_cpu.codegen.jit import JitEngine, jit_engine  # noqa: E402

TRIPS = 9
# [64,64]x[64,136]: a small matmul split on the native pool, an 86 KB arena (off the stack)
LHS, RHS = [64, 64], [64, 136]
SETTINGS = {  # name: (module, constant, a value that changes the loop's plan)
    "arena_on_stack": (native_while, "STACK_ARENA_LIMIT", 1 << 30),
    "dot_not_pooled": (native_dot, "POOL_MIN_PRODUCTS", 1 << 40),
    "kernels_split": (thread_pool, "PARALLEL_MIN_ELEMENTS", 1),
}
_ENGINES: list[JitEngine] = []  # engines made here stay alive: their loaded code may still run


def _args(dtype: str, out_dims):
    return [
        np.int32(TRIPS),
        _floats(dtype, out_dims),
        _floats(dtype, LHS, True),
        _floats(dtype, RHS),
    ]


def _check(exe, module, args) -> None:
    got, ref = exe(*args), hlort.evaluate(module, args)
    bits_equal([got[0], got[2]], [ref[0], ref[2]])
    ref1 = np.asarray(ref[1])
    eps = float(np.finfo(ref1.dtype).eps)
    assert_within(np.asarray(got[1]), ref1, loop_tolerance(args, TRIPS, LHS[1], eps, ref1))


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_a_changed_planning_setting_compiles_the_loop_again(setting, dtype, monkeypatch):
    module, out_shape = dot_loop(dtype, LHS, RHS, MATMUL, name=f"settings_{setting}_{dtype}")
    args = _args(dtype, out_shape.dims)
    first = hlort.compile(module, "cpu")
    assert first.raw.stats()["compiled"].get("while (native)") == 1, first.raw.stats()
    _check(first, module, args)
    owner, name, value = SETTINGS[setting]
    monkeypatch.setattr(owner, name, value)
    assert f"{owner.__name__}.{name}={value!r}" in code_settings.changed()
    second = hlort.compile(module, "cpu")
    assert not second.raw.stats()["cache_hit"]  # the old key: the first driver, a new plan
    _check(second, module, args)
    if setting == "kernels_split":  # x * 0.75 is big enough to split: the Python path
        assert "while (native)" not in second.raw.stats()["compiled"]
    monkeypatch.undo()
    assert code_settings.changed() == ""
    third = hlort.compile(module, "cpu")  # back to the first settings: the first entry
    assert third.raw.stats()["cache_hit"]
    _check(third, module, args)


def test_unchanged_settings_leave_the_key_as_it_was(monkeypatch):
    """A setting set to its own value again changes nothing (keys agree across processes)."""
    key = compile_cache.cache_key("fp", "v", jit_engine().key)
    monkeypatch.setattr(native_while, "STACK_ARENA_LIMIT", native_while.STACK_ARENA_LIMIT)
    assert code_settings.changed() == ""
    assert compile_cache.cache_key("fp", "v", jit_engine().key) == key
    monkeypatch.setattr(native_while, "STACK_ARENA_LIMIT", 1)
    assert compile_cache.cache_key("fp", "v", jit_engine().key) != key


def test_two_opt_levels_do_not_share_an_entry(monkeypatch):
    """An engine at O1 (its own host LLVM) misses the O3 engine's entry and compiles its own."""
    module, out_shape = dot_loop("f32", LHS, RHS, MATMUL, name="settings_opt_level")
    args = _args("f32", out_shape.dims)
    default = jit_engine()
    assert default.opt_level == 3 and default.key.endswith("|O3")
    hlort.compile(module, "cpu")  # the O3 entry (in memory and on disk)
    monkeypatch.setattr(jit, "host_llvm", llvm_start._create)  # a host of its own, at O1
    engine = JitEngine(opt_level=1)
    _ENGINES.append(engine)
    assert engine.opt_level == 1 and engine.key == default.key.replace("|O3", "|O1")
    monkeypatch.setattr(jit, "_ENGINE", engine)
    second = hlort.compile(module, "cpu")
    assert not second.raw.stats()["cache_hit"]
    _check(second, module, args)
    compile_cache.clear_memory()  # from disk too: the O1 entry, not the O3 one
    again = hlort.compile(module, "cpu")
    assert again.raw.stats()["cache_hit"]
    _check(again, module, args)
