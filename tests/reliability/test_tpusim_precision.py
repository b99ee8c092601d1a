"""tpusim's ``default_precision`` compile option: DEFAULT contractions at the level asked for.

Its matrix unit rounds f32 to bf16 at DEFAULT precision (like a TPU), ~1e-2 off XLA:CPU for
JAX's programs; ``default_precision=highest`` (like ``jax_default_matmul_precision``) makes them
f32-accurate, and the level survives serialization.
"""

import numpy as np
import pytest

import hlort
from hlort import cli, testdata_runner
from hlort.errors import ErrorCode, HlortError

DOT = """HloModule d
ENTRY e {
  a = f32[64,64] parameter(0)
  b = f32[64,64] parameter(1)
  ROOT d = f32[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}"""
RNG = np.random.default_rng(7)
A, B = (RNG.standard_normal((64, 64)).astype(np.float32) for _ in range(2))
EXACT = A.astype(np.float64) @ B


def _error(options=None, blob=False) -> float:
    exe = hlort.compile(DOT, "tpusim", options)
    if blob:
        exe = hlort.backend("tpusim").deserialize(exe.serialize())
    return float(np.abs(exe(A, B) - EXACT).max() / np.abs(EXACT).max())


@pytest.mark.parametrize("blob", [False, True])
def test_highest_makes_default_dots_f32_accurate(blob):
    assert _error() > 1e-3  # bf16 inputs: the documented TPU behaviour
    assert _error({"target_options": {"default_precision": "highest"}}, blob) < 1e-6
    assert _error({"target_options": {"default_precision": "float32"}}, blob) < 1e-6
    high = _error({"target_options": {"default_precision": "high"}}, blob)
    assert 1e-6 < high < 1e-3


def test_an_unknown_level_is_invalid_argument():
    with pytest.raises(HlortError) as info:
        hlort.compile(DOT, "tpusim", {"target_options": {"default_precision": "max"}})
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "highest" in str(info.value)


def test_the_testdata_runner_passes_the_option(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("HLORT_TESTDATA_OPTIONS", raising=False)
    exact = (A[:4, :4].astype(np.float64) @ B[:4, :4]).astype(np.float32)

    def dense(x):
        return "[" + ", ".join("[" + ", ".join(f"{v:.9e}" for v in row) + "]" for row in x) + "]"

    (tmp_path / "dot.mlir").write_text(f"""func.func @main() {{
  %a = stablehlo.constant dense<{dense(A[:4, :4])}> : tensor<4x4xf32>
  %b = stablehlo.constant dense<{dense(B[:4, :4])}> : tensor<4x4xf32>
  %kept:2 = stablehlo.optimization_barrier %a, %b : tensor<4x4xf32>, tensor<4x4xf32>
  %d = stablehlo.dot_general %kept#0, %kept#1, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %e = stablehlo.constant dense<{dense(exact)}> : tensor<4x4xf32>
  check.expect_almost_eq %d, %e, tolerance = 1.0e-05 : tensor<4x4xf32>
  return
}}""")  # noqa: E501
    args = [str(tmp_path), "--platform", "tpusim", "--jobs", "0"]
    assert testdata_runner.main(args) == 1, capsys.readouterr().out  # bf16 misses 1e-5
    capsys.readouterr()
    assert testdata_runner.main([*args, "--option", "default_precision=highest"]) == 0
    assert "1 pass" in capsys.readouterr().out
    assert testdata_runner.main([*args, "--option", "nonsense"]) == 2
    capsys.readouterr()
    assert cli.main(["testdata", *args, "--option", "default_precision=highest"]) == 0
