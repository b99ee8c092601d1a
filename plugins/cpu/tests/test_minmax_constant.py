"""maximum/minimum with a constant operand (JAX's relu, clamps) as one ordered compare and a
select (elemental._minmax_constant) instead of llvm.maximum: bit for bit the interpreter's IEEE
maximum/minimum (NaN kept, -0 < +0), for constants +-0, +-inf and finite values on either side,
on every float dtype, with the dtype's edge values (NaN, infinities, signed zeros) in x."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
from codegen_helpers import same_bits  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, dtypes, shape  # noqa: E402
from hlort.testing.values import mixed  # noqa: E402
from hlort_cpu import compile_cache  # noqa: E402

RAW = {"debug": {"disabled_passes": ["simplify"]}}
CONSTANTS = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf]


def _module(dt: str, n: int, op: str, c: float, first: bool):
    b = Builder(f"{op}_constant")
    x = b.parameter(shape.array(dt, [n]))
    k = b.broadcast(b.constant(np.array(c, x.shape.dtype.numpy)), [n], [])
    return b.build(getattr(b, op)(*((k, x) if first else (x, k))))


@pytest.mark.parametrize("first", [False, True])
@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("dt", ["f32", "f64", "f16", "bf16"])
def test_minmax_with_a_constant_matches_interpreter(dt, op, first):
    rng = np.random.default_rng(3)
    t = dtypes.from_hlo_name(dt)
    x = mixed(t, (1000,), rng)
    x[-8:] = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, -np.nan]).astype(t.numpy)
    for c in CONSTANTS:
        module = _module(dt, x.size, op, c, first)
        exe = hlort.compile(module, "cpu:0", options=RAW)
        got = np.asarray(exe(x))
        want = np.asarray(hlort.evaluate(module, [x]))
        assert same_bits(got, want), (c, x[~((got == want) | np.isnan(got) & np.isnan(want))])


def test_relu_is_a_compare_and_select(tmp_path, monkeypatch):
    key = compile_cache.cache_key
    monkeypatch.setattr(compile_cache, "cache_key", lambda *a: key(*a) + "-ir-minmax-constant")
    hlort.compile(
        _module("f32", 1024, "maximum", 0.0, False),
        "cpu:0",
        options={**RAW, "dump_dir": str(tmp_path)},
    )
    (ll,) = tmp_path.glob("*.cpu.kernels.ll")
    text = ll.read_text()
    assert "llvm.maximum" not in text and "fcmp ole" in text
