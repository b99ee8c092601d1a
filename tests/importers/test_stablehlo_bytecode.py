"""StableHLO MLIR bytecode (jax.export's serialization) compiles where jaxlib is installed, and
is UNIMPLEMENTED naming the fix where it is not; the core never imports jax by itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hlort
from hlort.cli import main
from hlort.errors import ErrorCode, HlortError

SAMPLES = Path(__file__).resolve().parent / "bytecode"
FILES = ["tanh_matmul.portable.mlirbc", "tanh_matmul.plain.mlirbc"]


def _inputs():
    rng = np.random.default_rng(4)
    return rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal((8, 3)).astype(
        np.float32
    )


def _code(fn) -> HlortError:
    with pytest.raises(HlortError) as err:
        fn()
    return err.value


@pytest.mark.parametrize("name", FILES)
def test_bytecode_compiles_and_runs(name):
    pytest.importorskip("jaxlib.mlir", reason="reading MLIR bytecode needs jaxlib")
    data = (SAMPLES / name).read_bytes()
    assert data.startswith(b"ML\xefR")
    x, w = _inputs()
    out = np.asarray(hlort.compile(data, "interpreter")(x, w))
    # f32 dot of 8 terms, tanh, sum of 4: within 1e-5 of the float64 result
    np.testing.assert_allclose(out, np.tanh(x.astype(np.float64) @ w).sum(axis=0), atol=1e-5)
    exe = hlort.compile(SAMPLES / name, "interpreter")  # a file, told by its content
    assert [str(s) for s in exe.input_shapes] == ["f32[4,8]", "f32[8,3]"]


def test_the_cli_runs_a_bytecode_file(capsys):
    pytest.importorskip("jaxlib.mlir", reason="reading MLIR bytecode needs jaxlib")
    assert main(["run", str(SAMPLES / FILES[0]), "--platform", "interpreter", "--json"]) == 0
    assert '"format": "stablehlo"' in capsys.readouterr().out


def test_damaged_bytecode_is_invalid_argument():
    pytest.importorskip("jaxlib.mlir", reason="reading MLIR bytecode needs jaxlib")
    data = (SAMPLES / FILES[0]).read_bytes()
    err = _code(lambda: hlort.compile(data[:40], "interpreter"))
    assert err.code is ErrorCode.INVALID_ARGUMENT and "MLIR bytecode" in err.message


def test_without_jaxlib_bytecode_is_unimplemented_naming_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "jaxlib", None)  # import jaxlib... raises ImportError
    monkeypatch.setitem(sys.modules, "jaxlib.mlir", None)
    data = (SAMPLES / FILES[0]).read_bytes()
    err = _code(lambda: hlort.compile(data, "interpreter"))
    assert err.code is ErrorCode.UNIMPLEMENTED
    assert "pip install jaxlib" in err.message and "MLIR bytecode" in err.message


def test_other_binary_bytes_are_invalid_argument():
    err = _code(lambda: hlort.compile(b"\xff\xfe not a program", "interpreter"))
    assert err.code is ErrorCode.INVALID_ARGUMENT and "MLIR bytecode" in err.message


def test_the_core_does_not_import_jax_for_text_programs():
    code = (
        "import sys, hlort\n"
        "hlort.compile('HloModule m\\nENTRY e {\\n  ROOT p = f32[] parameter(0)\\n}', "
        "'interpreter')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
