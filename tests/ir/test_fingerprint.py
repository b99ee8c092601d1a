"""Module fingerprints: equal programs agree (names, metadata and text round trips do not
count); every change to what a module computes changes the fingerprint."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import Builder, examples, shape
from hlort.ir.attributes import ComparisonDirection
from hlort.text import parse_module, print_module


def _program(
    scale=2.0, op="add", dims=(4,), dtype="f32", direction="LT", reducer="add", layout=None
):
    b = Builder("m")
    x = b.parameter(shape.array(dtype, list(dims), layout=layout))
    y = b.parameter(shape.array(dtype, list(dims)))
    k = b.broadcast(
        b.constant(np.array(scale, dtype=shape.array(dtype, []).dtype.numpy)), list(dims), []
    )
    v = getattr(b, op)(b.multiply(x, k), y)
    keep = b.compare(v, y, direction)
    total = b.reduce(
        v,
        b.constant(np.array(0, v.shape.dtype.numpy)),
        b.scalar_computation(reducer, dtype),
        list(range(len(dims))),
    )
    return b.build(b.tuple([b.select(keep, v, y), total]))


def test_equal_programs_agree_and_names_and_metadata_do_not_count():
    a, b = _program(), _program()
    assert a.fingerprint() == b.fingerprint()
    for instr in b.entry.instructions:
        instr.name = instr.name + "_renamed"
        instr.extra_attrs["metadata"] = '{op_name="elsewhere"}'
    b.name = "other"
    assert a.fingerprint() == b.fingerprint()


@pytest.mark.parametrize(
    "make",
    [
        lambda: examples.reduce_sum_fma(64)[0],
        lambda: examples.softmax_relu_matmul(8, 4, 16)[0],
        lambda: examples.layernorm(8, 16)[0],
        _program,
    ],
)
def test_a_text_round_trip_keeps_the_fingerprint(make):
    module = make()
    assert parse_module(print_module(module)).fingerprint() == module.fingerprint()


@pytest.mark.parametrize(
    "change",
    [
        {"scale": 3.0},
        {"scale": -0.0},
        {"op": "subtract"},
        {"dims": (5,)},
        {"dims": (2, 2)},
        {"dtype": "f64"},
        {"direction": "GT"},
        {"reducer": "maximum"},
        {"layout": (0,)},
    ],
    ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()),
)
def test_every_change_to_the_computation_changes_it(change):
    base = _program(scale=0.0, dims=(2, 2), layout=(1, 0)) if "layout" in change else _program()
    if "layout" in change:
        changed = _program(scale=0.0, dims=(2, 2), layout=(0, 1))
    elif change == {"scale": -0.0}:
        base, changed = _program(scale=0.0), _program(scale=-0.0)
    else:
        changed = _program(**change)
    assert changed.fingerprint() != base.fingerprint()


def test_operand_order_parameter_numbers_nan_payloads_and_config_count():
    a = _program()
    swapped = _program()
    root = swapped.entry.root.operands[0]  # select(keep, v, y)
    root.operands[1], root.operands[2] = root.operands[2], root.operands[1]
    assert swapped.fingerprint() != a.fingerprint()

    params = _program()
    p0, p1 = params.entry.parameters[:2]
    p0.parameter_number, p1.parameter_number = 1, 0
    assert params.fingerprint() != a.fingerprint()

    def nan_program(bits):
        b = Builder("n")
        x = b.parameter(shape.array("f32", [2]))
        c = b.constant(np.array([bits, bits], np.uint32).view(np.float32))
        return b.build(b.add(x, c))

    assert nan_program(0x7FC00000).fingerprint() != nan_program(0x7FC00001).fingerprint()

    replicated = _program()
    replicated.config["num_replicas"] = 2
    assert replicated.fingerprint() != a.fingerprint()
    aliased = _program()
    aliased.attributes["input_output_alias"] = "{ {0}: (0, {}) }"
    assert aliased.fingerprint() != a.fingerprint()
    scheduled = _program()
    scheduled.attributes["is_scheduled"] = "true"
    assert scheduled.fingerprint() == a.fingerprint()


def test_enum_attributes_count_by_member():
    a, b = _program(direction="LT"), _program(direction="LT")
    compare = next(i for i in b.entry.instructions if "direction" in i.attrs)
    assert compare.attrs["direction"] is ComparisonDirection.LT
    compare.attrs["direction"] = ComparisonDirection.LE
    assert a.fingerprint() != b.fingerprint()


def test_a_computation_called_twice_differs_from_two_equal_copies():
    """Backends number kernels per computation (the cpu object cache does), so sharing counts."""
    from hlort.text import parse_module

    def text(second: str) -> str:
        return f"""HloModule m
f {{
  p = f32[4] parameter(0)
  ROOT d = f32[4] add(p, p)
}}
f2 {{
  p = f32[4] parameter(0)
  ROOT d = f32[4] add(p, p)
}}
ENTRY e {{
  x = f32[4] parameter(0)
  a = f32[4] call(x), to_apply=f
  ROOT b = f32[4] call(a), to_apply={second}
}}
"""

    shared, copies = parse_module(text("f")), parse_module(text("f2"))
    assert shared.fingerprint() != copies.fingerprint()
    assert shared.fingerprint() == parse_module(text("f")).fingerprint()


def test_a_computation_alone_fingerprints_as_its_structure():
    """computation_fingerprint (what the cpu plugin shares kernels by): equal entry
    computations of two modules agree, renamed and each reducer its own copy; a changed
    constant or reducer does not."""
    from hlort.ir.fingerprint import computation_fingerprint

    a, b = _program(), _program()
    for instr in b.entry.instructions:
        instr.name = instr.name + "_renamed"
    assert computation_fingerprint(a.entry) == computation_fingerprint(b.entry)
    assert computation_fingerprint(a.entry) != computation_fingerprint(_program(3.0).entry)
    assert computation_fingerprint(a.entry) != computation_fingerprint(
        _program(reducer="maximum").entry
    )
