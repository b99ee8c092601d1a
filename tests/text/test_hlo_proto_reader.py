"""Reading XLA's binary HLO protos: the writer's output reads back to the same module, names
included, for every conformance case; ``hlort run x.hlo.pb`` runs one. XLA's own protos are
read in tests/interop/test_hlo_proto_xla.py."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import hlort
from hlort.errors import ErrorCode, HlortError
from hlort.interpreter.evaluator import evaluate
from hlort.ir.opcodes import Opcode
from hlort.testing.op_case import cases_for
from hlort.text import hlo_proto_reader
from hlort.text.equality import module_difference
from hlort.text.hlo_proto_writer import hlo_module_proto_bytes, hlo_module_proto_with_config_bytes
from hlort.text.parser import parse_module
from hlort.text.protobuf_wire import Message

PROGRAM = (
    "HloModule prog, num_partitions=2, spmd_parameters_shardings={{devices=[2,1]0,1}}, "
    "spmd_output_sharding={replicated}, input_output_alias={ {}: (0, {}, may-alias) }\n"
    """
ENTRY main {
  x = f32[2,3]{0,1} parameter(0), sharding={devices=[2,1]0,1},
    metadata={op_name="jit(f)/x" source_line=7}
  c = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT y = f32[2,3] add(x, c), frontend_attributes={a="b"}
}
"""
)


def test_every_opcode_has_a_reader():
    assert hlo_proto_reader.covered_opcodes() == set(Opcode)


OPS = [op for op in Opcode if cases_for(op)]


@pytest.mark.parametrize("opcode", OPS, ids=[op.value for op in OPS])
def test_conformance_cases_read_back_as_written(opcode):
    for case in cases_for(opcode):
        back = hlo_proto_reader.module_from_hlo_proto(hlo_module_proto_bytes(case.module))
        difference = module_difference(case.module, back, check_names=True)
        assert difference is None, f"{case.id}: {difference}"


def test_header_extras_and_config_read_back():
    module = parse_module(PROGRAM)
    back = hlo_proto_reader.module_from_hlo_proto(hlo_module_proto_with_config_bytes(module))
    assert module_difference(module, back, check_names=True) is None
    for key in ("spmd_parameters_shardings", "spmd_output_sharding", "input_output_alias"):
        assert back.attributes[key].replace(" ", "") == module.attributes[key].replace(" ", "")
    assert back.config["num_partitions"] == 2
    x = back.entry.find("x")
    assert x.shape.layout == (0, 1)
    assert x.extra_attrs["metadata"] == '{op_name="jit(f)/x" source_line=7}'
    assert back.entry.root.extra_attrs["frontend_attributes"] == '{a="b"}'


def test_a_literal_in_column_major_order_is_transposed():
    from hlort.text.hlo_proto_values import shape_message
    from hlort.text.hlo_proto_values_reader import Msg, literal_from

    shape = parse_module(PROGRAM).entry.find("x").shape  # f32[2,3]{0,1}
    literal = Message().message(1, shape_message(shape), keep=True)
    literal.bytes(8, np.array([1, 4, 2, 5, 3, 6], "<f4").tobytes())  # column by column
    value = literal_from(Msg(literal.to_bytes()), shape)
    assert value.tolist() == [[1, 2, 3], [4, 5, 6]]


def test_bad_input_is_invalid_argument_or_unimplemented():
    with pytest.raises(HlortError) as err:
        hlo_proto_reader.module_from_hlo_proto(b"\x0a\x05abc")
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    with pytest.raises(HlortError) as err:
        hlo_proto_reader.module_from_hlo_proto(b"\x0a\x03abc")  # a name, no computations
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and "computations" in err.value.message
    data = hlo_module_proto_bytes(parse_module(PROGRAM)).replace(b"\x12\x03add", b"\x12\x03xyz")
    with pytest.raises(HlortError) as err:
        hlo_proto_reader.module_from_hlo_proto(data)
    assert err.value.code is ErrorCode.UNIMPLEMENTED and "'xyz'" in err.value.message


def test_compile_and_run_read_protos(tmp_path):
    module = parse_module(PROGRAM.replace("num_partitions=2", "num_partitions=1"))
    data = hlo_module_proto_bytes(module)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = evaluate(module, [x])
    got = hlort.compile(data, "interpreter")(x)
    np.testing.assert_array_equal(np.asarray(got), want)
    path = tmp_path / "prog.hlo.pb"
    path.write_bytes(data)
    np.savez(tmp_path / "in.npz", arg0=x)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hlort.cli",
            "run",
            str(path),
            "--platform",
            "interpreter",
            "--inputs",
            str(tmp_path / "in.npz"),
            "--output",
            str(tmp_path / "out.npz"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_array_equal(out["out0"], want)


def test_an_hlo_proto_with_a_buffer_assignment_reads_its_module():
    """XLA's ``--xla_dump_hlo_as_proto`` after optimizations writes an ``xla.HloProto`` with its
    ``buffer_assignment`` in field 3, the number of HloModuleProto's computations: the wrapper
    must be recognized by its field 1, not taken for a module because field 3 is present."""
    module = parse_module(PROGRAM.replace("num_partitions=2", "num_partitions=1"))
    buffers = Message().message(1, Message().int(1, 7).int(3, 2), keep=True)
    data = (
        Message()
        .message(1, hlo_module_proto_bytes(module), keep=True)
        .message(3, buffers, keep=True)
        .to_bytes()
    )
    back = hlo_proto_reader.module_from_hlo_proto(data)
    assert module_difference(module, back, check_names=True) is None


@pytest.mark.parametrize(
    "old, new",
    [(b"\x02LT", b"\x02XX"), (b"main", b"ma\xff\xfe")],
    ids=["unknown comparison direction", "name not utf-8"],
)
def test_a_malformed_field_is_invalid_argument(old, new):
    module = parse_module(
        "HloModule m\nENTRY main {\n  x = f32[2] parameter(0)\n"
        "  ROOT y = pred[2] compare(x, x), direction=LT\n}\n"
    )
    data = hlo_module_proto_bytes(module)
    assert old in data
    with pytest.raises(HlortError) as err:
        hlo_proto_reader.module_from_hlo_proto(data.replace(old, new), "m.hlo.pb")
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert err.value.message.startswith("m.hlo.pb: malformed XLA HLO proto")


@pytest.mark.parametrize("config", ['"plain text"', '"a \\"quoted\\", b"', '{"a":1}'])
def test_a_backend_config_reads_back_in_its_text_form(config):
    """hlort keeps an op's backend_config as its HLO text (a string in quotes, or a JSON
    object): the proto's raw bytes must come back in that form, so the module prints and
    parses again (``hlort run x.hlo.pb`` goes through the text)."""
    module = parse_module(
        "HloModule m\nENTRY main {\n  x = f32[2] parameter(0)\n"
        f"  ROOT y = f32[2] add(x, x), backend_config={config}\n}}\n"
    )
    back = hlo_proto_reader.module_from_hlo_proto(hlo_module_proto_bytes(module))
    assert back.entry.root.extra_attrs["backend_config"] == config
    from hlort.text.printer import print_module

    again = parse_module(print_module(back))
    assert again.entry.root.extra_attrs["backend_config"] == config
