"""A jax.export polymorphic program (batch dimension ``b``) exported once, run for b = 1, 7, 64.

The program and JAX's results are committed (generate.py wrote them with jax 0.10.2), so these
tests need no JAX; the last one re-exports with JAX when it is installed. Tolerances: float
outputs within rtol 1e-5 / atol 1e-5 of JAX's CPU results (both f32, same formulas; XLA and
hlort may order the reductions differently), the argmax output exactly.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

import hlort
from hlort.errors import ErrorCode, HlortError
from hlort.runtime.polymorphic import PolymorphicExecutable

HERE = Path(__file__).resolve().parent / "programs" / "mlp_batch"
GENERATOR = Path(__file__).resolve().parent / "generate.py"
TEXT = (HERE / "module.mlir").read_text()
BATCHES = (1, 7, 64)
RTOL = ATOL = 1e-5


def _load(name: str) -> list[np.ndarray]:
    with np.load(HERE / name) as z:
        return [z[k] for k in sorted(z.files, key=lambda k: int(k[3:]))]


def _check(outputs, expected) -> None:
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        if np.issubdtype(want.dtype, np.floating):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
        else:
            np.testing.assert_array_equal(got, want)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    return tmp_path


@pytest.mark.parametrize("platform", ["cpu", "interpreter"])
def test_one_export_runs_for_each_batch_size_compiled_once_per_shape(platform, cache_dir):
    exe = hlort.compile(TEXT, platform)
    assert isinstance(exe, PolymorphicExecutable)
    assert exe.compile_count == 0
    for b in BATCHES:
        _check(exe(*_load(f"inputs_b{b}.npz")), _load(f"expected_b{b}.npz"))
    assert exe.compile_count == 3
    dims = sorted(key[0][0][1] for key in exe.specializations)
    assert dims == [(1, 12), (7, 12), (64, 12)]
    _check(exe(*_load("inputs_b7.npz")), _load("expected_b7.npz"))  # from memory
    assert exe.compile_count == 3 and len(exe.specializations) == 3


def test_specializations_come_from_the_persistent_cache_in_a_new_executable(cache_dir):
    first = hlort.compile(TEXT, "cpu")
    for b in BATCHES:
        first(*_load(f"inputs_b{b}.npz"))
    assert all("cache_load" not in e.timings for e in first.specializations.values())
    second = hlort.compile(TEXT, "cpu")
    for b in BATCHES:
        _check(second(*_load(f"inputs_b{b}.npz")), _load(f"expected_b{b}.npz"))
    assert second.compile_count == 3
    assert all("cache_load" in e.timings for e in second.specializations.values())
    assert any(os.scandir(cache_dir))


def test_a_failing_shape_assertion_is_invalid_argument_with_its_message():
    exe = hlort.compile(TEXT, "cpu")
    args = _load("inputs_b1.npz")
    args[0] = np.zeros((0, 12), np.float32)
    with pytest.raises(HlortError) as info:
        exe(*args)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "Expected value >= 1 for dimension variable 'b'" in info.value.message
    assert "'b' = 0" in info.value.message  # the {0} placeholders filled with the values


def test_a_non_conforming_argument_is_invalid_argument_naming_the_type():
    exe = hlort.compile(TEXT, "cpu")
    args = _load("inputs_b7.npz")
    args[1] = np.zeros((11, 32), np.float32)
    with pytest.raises(HlortError) as info:
        exe(*args)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "tensor<12x32xf32>" in info.value.message
    with pytest.raises(HlortError, match="takes 4 argument"):
        exe(*args[:3])


def test_matches_jax_on_a_fresh_export():
    jax = pytest.importorskip("jax", reason="jax is not installed (pip install jax[cpu]==0.10.2)")
    import jax.numpy as jnp

    spec = importlib.util.spec_from_file_location("polymorphic_generate", GENERATOR)
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    _inputs, mlp_batch = generate._inputs, generate.mlp_batch
    from jax import export

    (b,) = export.symbolic_shape("b")
    specs = [jax.ShapeDtypeStruct((b, 12), jnp.float32)] + [
        jax.ShapeDtypeStruct(a.shape, a.dtype) for a in _inputs(1)[1:]
    ]
    exported = export.export(jax.jit(mlp_batch), platforms=["cpu"])(*specs)
    exe = hlort.compile(exported.mlir_module(), "cpu")
    for batch in (2, 9):
        args = _inputs(batch)
        want = [np.asarray(o) for o in jax.tree_util.tree_leaves(exported.call(*args))]
        _check(exe(*args), want)
    assert exe.compile_count == 2
