"""The HloModuleProto writer, read back with the wire reader (no XLA needed here; XLA itself
checks the same protos in tests/interop/test_hlo_proto_xla.py)."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.ir.opcodes import Opcode
from hlort.ir.sharding import HloSharding
from hlort.text import hlo_proto_values
from hlort.text.hlo_proto_writer import (
    covered_opcodes,
    hlo_module_proto_bytes,
    hlo_module_proto_with_config_bytes,
    spmd_shardings,
)
from hlort.text.parser import parse_module
from hlort.text.protobuf_wire import fields, signed, unpack_varints

LOOP = """HloModule loop, num_partitions=1

cond {
  c = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  b = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[3] get-tuple-element(b), index=1
  w = f32[3] negate(v)
  ROOT t = (s32[], f32[3]) tuple(j, w)
}

ENTRY main {
  x = f32[3] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[3]) tuple(z, x)
  loop = (s32[], f32[3]) while(init), condition=cond, body=body
  ROOT out = f32[3] get-tuple-element(loop), index=1
}
"""


def _first(items, number, default=None):
    return next((v for n, _, v in items if n == number), default)


def _all(items, number):
    return [v for n, _, v in items if n == number]


def test_every_opcode_has_a_writer():
    assert covered_opcodes() == set(Opcode)


def test_module_computations_and_ids():
    module = parse_module(LOOP)
    proto = fields(hlo_module_proto_bytes(module))
    assert _first(proto, 1) == b"loop" and _first(proto, 2) == b"main"
    comps = [fields(c) for c in _all(proto, 3)]
    names = [_first(c, 1).decode() for c in comps]
    assert names[-1] == "main" and set(names) == {"cond", "body", "main"}  # callees first
    comp_ids = {_first(c, 1).decode(): _first(c, 5) for c in comps}
    assert _first(proto, 6) == comp_ids["main"]
    seen: set[int] = set()
    for comp in comps:
        instrs = [fields(i) for i in _all(comp, 2)]
        ids = [_first(i, 35) for i in instrs]
        assert not seen & set(ids) and len(set(ids)) == len(ids)
        seen |= set(ids)
        earlier: set[int] = set()
        for instr, number in zip(instrs, ids, strict=True):
            assert set(unpack_varints(instr, 36)) <= earlier  # operands come first
            earlier.add(number)
        assert _first(comp, 6) in ids  # the root
        if _first(comp, 1) == b"main":
            loop = next(i for i in instrs if _first(i, 2) == b"while")
            # XLA keeps the body before the condition
            assert unpack_varints(loop, 38) == [comp_ids["body"], comp_ids["cond"]]
            gte = next(i for i in instrs if _first(i, 1) == b"out")
            assert _first(gte, 13) == 1
    program = fields(_first(proto, 4))
    assert len(_all(program, 1)) == 1 and _all(program, 3) == [b"x"]


def _literal_of(text: str):
    module = parse_module(f"HloModule c\nENTRY e {{\n  ROOT k = {text}\n}}\n")
    comp = fields(_all(fields(hlo_module_proto_bytes(module)), 3)[-1])
    return fields(_first(fields(_all(comp, 2)[0]), 8))


def test_literals():
    lit = _literal_of("f32[3] constant({1.5, -0, inf})")
    assert (
        np.frombuffer(_first(lit, 8), "<f4").tobytes()
        == np.array([1.5, -0.0, np.inf], np.float32).tobytes()
    )
    lit = _literal_of("s32[3] constant({-7, 0, 2147483647})")
    assert unpack_varints(lit, 4) == [-7, 0, 2147483647]
    lit = _literal_of("pred[3] constant({true, false, true})")
    assert unpack_varints(lit, 2) == [1, 0, 1]
    lit = _literal_of("bf16[2] constant({1, -2})")
    assert _first(lit, 13) == bytes.fromhex("803f00c0")  # little-endian bf16 bits
    lit = _literal_of("c64[1] constant({(1, -2)})")
    assert np.frombuffer(_first(lit, 12), "<f4").tolist() == [1.0, -2.0]
    lit = _literal_of("u64[1] constant({18446744073709551615})")
    assert unpack_varints(lit, 7, signed_values=False) == [(1 << 64) - 1]
    lit = _literal_of("s8[2] constant({-1, 5})")
    assert _first(lit, 15) == b"\xff\x05"
    shape = fields(_first(lit, 1))
    assert _first(shape, 2) == 2 and unpack_varints(shape, 3) == [2]


def test_an_attribute_without_a_field_is_unimplemented():
    module = parse_module(LOOP)
    neg = module.computation("body").find("w")
    neg.attrs["mystery"] = 3
    with pytest.raises(HlortError) as err:
        hlo_module_proto_bytes(module)
    assert err.value.code is ErrorCode.UNIMPLEMENTED
    assert "mystery" in err.value.message and "w (negate)" in err.value.message


def test_an_element_type_without_a_primitive_type_is_unimplemented(monkeypatch):
    monkeypatch.delitem(hlo_proto_values.PRIMITIVE_TYPES, "f32")
    with pytest.raises(HlortError) as err:
        hlo_module_proto_bytes(parse_module(LOOP))
    assert err.value.code is ErrorCode.UNIMPLEMENTED and "f32" in err.value.message


SHARDED = (
    "HloModule sharded, num_partitions=2, spmd_parameters_shardings={{devices=[2,1]0,1}, "
    "{replicated}}, spmd_output_sharding={devices=[2,1]0,1}\n"
    """
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  ROOT s = f32[2,3] add(a, b)
}
"""
)


def test_spmd_shardings_come_from_the_partitioners_records():
    module = parse_module(SHARDED)
    params, output = spmd_shardings(module)
    assert [p.to_text() for p in params] == ["{devices=[2,1]0,1}", "{replicated}"]
    assert output.to_text() == "{devices=[2,1]0,1}"
    proto = fields(hlo_module_proto_bytes(module))
    out = fields(_first(proto, 12))
    assert _first(out, 1) == 3 and unpack_varints(out, 3) == [2, 1]
    assert unpack_varints(out, 4) == [0, 1]
    assert [_first(fields(p), 1, 0) for p in _all(proto, 14)] == [3, 0]


def test_explicit_shardings_and_defaults():
    module = parse_module(SHARDED)
    del module.attributes["spmd_parameters_shardings"], module.attributes["spmd_output_sharding"]
    params, output = spmd_shardings(module)  # two partitions, nothing recorded: replicated
    assert all(p.is_replicated for p in params) and output.is_replicated
    single = parse_module(LOOP)
    assert spmd_shardings(single) == (None, None)
    assert _first(fields(hlo_module_proto_bytes(single)), 12) is None
    tiled = HloSharding.iota_tiled([2, 2], [2, 2], [1, 0])
    data = hlo_module_proto_bytes(single, output_sharding=HloSharding.tuple_of([tiled]))
    out = fields(_first(fields(data), 12))
    assert _first(out, 1) == 2
    element = fields(_all(out, 5)[0])
    assert unpack_varints(element, 9) == [2, 2] and unpack_varints(element, 10) == [1, 0]
    with pytest.raises(HlortError) as err:
        hlo_module_proto_bytes(single, parameter_shardings=[])
    assert "one per parameter" in err.value.message


def test_with_config_wraps_module_and_counts():
    module = parse_module(SHARDED)
    data = fields(hlo_module_proto_with_config_bytes(module))
    assert [n for n, _, _ in data] == [1, 2]
    assert _first(fields(data[0][2]), 1) == b"sharded"
    config = fields(data[1][2])
    assert _first(config, 4) == 1 and _first(config, 5) == 2 and _first(config, 7) == 1
    layout = fields(_first(config, 1))
    assert len(_all(layout, 1)) == 2 and _all(layout, 3) == [b"a", b"b"]


def test_negative_ints_are_twos_complement():
    module = parse_module(
        "HloModule p\nENTRY e {\n  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT p = f32[3] pad(x, z), padding=-1_0\n}\n"
    )
    comp = fields(_all(fields(hlo_module_proto_bytes(module)), 3)[-1])
    pad = next(fields(i) for i in _all(comp, 2) if _first(fields(i), 2) == b"pad")
    dim = fields(_first(fields(_first(pad, 21)), 1))
    assert signed(_first(dim, 1)) == -1
