"""Optimized HLO as current XLA prints it (jax 0.10.2's ``compile().as_text()``) loads and runs.

The dumps in xla_dumps/ (made by xla_dumps/generate.py) carry the stack-frame tables
(``FileNames``, ``FunctionNames``, ``FileLocations``, ``StackFrames``), ``metadata`` with
``stack_frame_id``, scheduling, layouts, XLA's fusions and a bitcast that changes the element
type (f32 -> s32, in the sort comparator); each runs on the reference interpreter and gives
what XLA computed.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import hlort
from hlort.errors import ParseError
from hlort.text import parse_module

DUMPS = Path(__file__).resolve().parent / "xla_dumps"
NAMES = sorted(p.stem for p in DUMPS.glob("*.hlo"))


def test_the_dumps_are_there():
    assert {"softmax", "mlp", "loop", "cond_sort", "nested_calls", "top_k"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_an_xla_dump_parses_and_computes_what_xla_did(name):
    text = (DUMPS / f"{name}.hlo").read_text()
    assert "\nFileNames\n" in text and "\nStackFrames\n" in text
    data = np.load(DUMPS / f"{name}.npz")
    args = [data[f"arg{i}"] for i in range(sum(k.startswith("arg") for k in data))]
    expected = [data[f"out{i}"] for i in range(sum(k.startswith("out") for k in data))]
    module = parse_module(text, f"{name}.hlo")
    assert module.stack_frames, "the tables are kept"
    out = hlort.compile(text, "interpreter")(*args)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected, strict=True):
        # f32 programs; XLA:CPU's exp/tanh/sin differ from NumPy's by a few ulp
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6)


def test_stack_frames_resolve_to_the_python_call_chain():
    module = parse_module((DUMPS / "nested_calls.hlo").read_text())
    frames = module.stack_frames
    assert frames.file_names == {1: "generate.py"}
    inner = [i for i, f in frames.frames.items() if frames.location(i).endswith("(inner)")]
    chains = sorted(
        [re.sub(r"generate\.py:\d+ ", "", where) for where in frames.traceback(i)] for i in inner
    )
    # inner is reached twice: through middle, and directly from nested_calls
    assert chains == [
        ["(<module>)", "(main)", "(nested_calls)", "(inner)"],
        ["(<module>)", "(main)", "(nested_calls)", "(middle)", "(inner)"],
    ]
    sin = next(
        i
        for c in module.computations
        for i in c.instructions
        if i.opcode.value == "sine" and "stack_frame_id" in i.extra_attrs.get("metadata", "")
    )
    frame_id = int(re.search(r"stack_frame_id=(\d+)", sin.extra_attrs["metadata"]).group(1))
    assert frames.traceback(frame_id)[-1].endswith("(inner)")


HEADER = "HloModule m\n\n"
BODY = "\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n"


@pytest.mark.parametrize(
    "tables, message, line",
    [
        ('FileNames\n1 "a.py"\n1 "b.py"\n', "FileNames row 1 is given twice", 5),
        ("StackFrames\n1 {parent_frame_id=1}\n", "lacks file_location_id", 4),
        ("FileLocations\n1 {file_name_id=1 function_name_id=x}\n", "integer value", 4),
        ('FileNames\n1 "a.py"\nFileNames\n2 "b.py"\n', "table is given twice", 5),
    ],
)
def test_malformed_tables_are_parse_errors_with_a_position(tables, message, line):
    with pytest.raises(ParseError) as err:
        parse_module(HEADER + tables + BODY)
    assert message in str(err.value) and f"<text>:{line}:" in str(err.value), str(err.value)


def test_unknown_fields_and_missing_frames_still_load():
    tables = (
        'FileNames\n1 "a.py"\nFunctionNames\n1 "f"\n'
        "FileLocations\n1 {file_name_id=1 function_name_id=1 line=3 future_field=7}\n"
        "StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n"
    )
    body = "\nENTRY e {\n  ROOT p = f32[] parameter(0), metadata={stack_frame_id=42}\n}\n"
    module = parse_module(HEADER + tables + body)
    assert module.stack_frames.traceback(1) == ["a.py:3 (f)"]
    assert module.stack_frames.traceback(42) == []


def test_a_computation_may_still_be_called_like_a_table():
    text = (
        "HloModule m\n\nFileNames (a: f32[], b: f32[]) -> f32[] {\n"
        "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
        "\nENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=FileNames\n}\n"
    )
    module = parse_module(text)
    assert module.stack_frames is None and len(module.computations) == 2
