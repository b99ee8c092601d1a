"""Sub-byte bitcast expansion: the integer ops it writes compute what the interpreter's direct
bitcast-convert computes, for every width, both ways; a second run changes nothing."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hlort import dtypes
from hlort.interpreter import evaluate
from hlort.ir import verify_module
from hlort.ir.opcodes import Opcode
from hlort.passes.sub_byte_bitcast import SubByteBitcastExpansion, is_sub_byte_bitcast
from hlort.text import parse_module

WIDE = ["s8", "u8", "s16", "f16", "bf16", "u32", "f32", "s64", "f64", "f8e4m3fn"]


def _module(src: str, src_dims: str, to: str, to_dims: str):
    return parse_module(
        f"HloModule m\nENTRY e {{\n  a = {src}[{src_dims}] parameter(0)\n"
        f"  ROOT b = {to}[{to_dims}] bitcast-convert(a)\n}}\n"
    )


def _expanded(module):
    expanded = module.clone()
    assert SubByteBitcastExpansion().run(expanded)
    verify_module(expanded)
    comp = expanded.entry
    assert not any(is_sub_byte_bitcast(i) for i in comp.instructions)
    assert any(
        i.opcode is Opcode.REDUCE or i.opcode is Opcode.SHIFT_RIGHT_LOGICAL
        for i in comp.instructions
    )
    assert not SubByteBitcastExpansion().run(expanded)  # idempotent
    return expanded


@pytest.mark.parametrize("four", ["s4", "u4"])
@pytest.mark.parametrize("wide", WIDE)
def test_pack_matches_the_interpreter(four, wide):
    r = dtypes.from_hlo_name(wide).bits // 4
    module = _module(four, f"5,{r}", wide, "5")
    rng = np.random.default_rng(r)
    np_four = ml_dtypes.int4 if four == "s4" else ml_dtypes.uint4
    x = rng.integers(-8 if four == "s4" else 0, 8 if four == "s4" else 16, size=(5, r))
    x = x.astype(np.int8).astype(np_four)
    want = evaluate(module, [x])
    got = evaluate(_expanded(module), [x])
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("four", ["s4", "u4"])
@pytest.mark.parametrize("wide", WIDE)
def test_unpack_matches_the_interpreter(four, wide):
    dt = dtypes.from_hlo_name(wide)
    r = dt.bits // 4
    module = _module(wide, "5", four, f"5,{r}")
    raw = np.random.default_rng(r).integers(0, 256, size=5 * dt.itemsize, dtype=np.uint8)
    x = raw.view(dt.numpy)
    want = evaluate(module, [x])
    got = evaluate(_expanded(module), [x])
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_equal_width_bitcasts_stay():
    module = _module("s4", "4", "u4", "4")
    assert not SubByteBitcastExpansion().run(module)
