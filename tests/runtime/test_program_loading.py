"""Program loading: HLO vs StableHLO told by content; files, text, bytes and modules."""

from pathlib import Path

import pytest

from hlort import Builder, Module, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Opcode
from hlort.runtime.program import detect_format, load_program, read_program_file

HLO = """HloModule neg

ENTRY main {
  x = f32[2] parameter(0)
  ROOT n = f32[2] negate(x)
}
"""


STABLEHLO = """module @jit_neg {
  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.negate %arg0 : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
"""


@pytest.mark.parametrize(
    "text, fmt",
    [
        (HLO, "hlo"),
        ("// comment\n\n" + HLO, "hlo"),
        (STABLEHLO, "stablehlo"),
        ("// RUN: x\nmodule {\n}\n", "stablehlo"),
        ("func.func @f() {\n  return\n}", "stablehlo"),
        ("%0 = stablehlo.add %a, %b : tensor<f32>", "stablehlo"),
        (
            "HloModule m\n ENTRY e { ROOT c = f32[] constant(1), "
            'metadata={op_name="stablehlo.x"} }',
            "hlo",
        ),
    ],
)
def test_detect_format(text, fmt):
    assert detect_format(text) == fmt


def test_unknown_text_is_invalid_argument_naming_the_source():
    with pytest.raises(HlortError) as info:
        detect_format("def f(x): return x", "prog.txt")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "prog.txt" in info.value.message and "HloModule" in info.value.message


def test_load_hlo_text_bytes_and_path(tmp_path):
    module, fmt = load_program(HLO)
    assert fmt == "hlo" and isinstance(module, Module) and module.name == "neg"
    assert load_program(HLO.encode())[0].name == "neg"
    path = tmp_path / "prog.txt"
    path.write_text(HLO)
    assert load_program(path)[1] == "hlo"


def test_a_module_passes_through():
    b = Builder("m")
    x = b.parameter(shape.array("f32", [2]))
    module = b.build(b.op(Opcode.NEGATE, (x,)))
    assert load_program(module) == (module, "module")


def test_suffix_decides_when_present(tmp_path):
    path = tmp_path / "prog.mlir"
    path.write_text(HLO)  # suffix wins over content
    assert read_program_file(path)[1] == "stablehlo"


def test_file_errors(tmp_path):
    with pytest.raises(HlortError) as info:
        load_program(tmp_path / "missing.hlo")
    assert info.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(HlortError) as info:
        load_program(Path(tmp_path))
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    binary = tmp_path / "bin.hlo"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(HlortError) as info:
        load_program(binary)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_malformed_hlo_gives_line_and_column():
    with pytest.raises(HlortError) as info:
        load_program("HloModule m\n\nENTRY main {\n  x = f32[2] parameter(0\n}\n", "bad.hlo")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "bad.hlo:" in info.value.message


def test_stablehlo_text_is_imported():
    module, fmt = load_program(STABLEHLO)
    assert fmt == "stablehlo"
    assert [p.shape.to_hlo(False) for p in module.entry.parameters] == ["f32[2]"]


def test_other_objects_are_rejected():
    with pytest.raises(HlortError, match="cannot compile a int"):
        load_program(3)


@pytest.mark.parametrize("name", ["prog.mlir", "model.hlo", "dump.txt"])
def test_a_file_name_given_as_text_says_to_pass_a_path(name):
    with pytest.raises(HlortError, match=r"pathlib\.Path") as info:
        load_program(name)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and name in info.value.message


def test_an_existing_file_name_without_a_program_suffix_too(tmp_path, monkeypatch):
    (tmp_path / "prog").write_text(HLO)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(HlortError, match=r"pathlib\.Path\('prog'\)"):
        load_program("prog")
    assert load_program(Path("prog"))[1] == "hlo"
