"""Bad HLO text fails with the line and column of the problem, and says what was expected."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hlort.errors import ErrorCode, HlortError, InvalidArgument, ParseError, Unimplemented
from hlort.text import parse_module, print_module

GOOD_HEADER = "HloModule m\n\n"


def body(*lines: str, header: str = GOOD_HEADER) -> str:
    """An entry computation holding ``lines`` (line 4 is the first of them)."""
    return header + "ENTRY %e {\n" + "\n".join(f"  {line}" for line in lines) + "\n}\n"


def parse_error(text: str, match: str) -> ParseError:
    with pytest.raises(ParseError, match=match) as info:
        parse_module(text, source_name="bad.hlo")
    err = info.value
    assert err.code is ErrorCode.INVALID_ARGUMENT
    assert str(err).startswith(f"INVALID_ARGUMENT: bad.hlo:{err.line}:{err.column}: ")
    return err


def test_missing_header():
    err = parse_error("ENTRY %e {\n}\n", "expected 'HloModule' starting the module, found 'ENTRY'")
    assert (err.line, err.column) == (1, 1)


def test_unknown_opcode_points_at_it():
    err = parse_error(
        body("%p = f32[2] parameter(0)", "ROOT %r = f32[2] frobnicate(%p)"),
        "unknown opcode 'frobnicate'",
    )
    assert (err.line, err.column) == (5, 20)


def test_missing_comma_between_operands():
    err = parse_error(
        body("%p = f32[2] parameter(0)", "ROOT %r = f32[2] add(%p %p)"),
        "expected ',' or '\\)' after an operand, found '%p'",
    )
    assert (err.line, err.column) == (5, 27)


def test_missing_equals():
    err = parse_error(body("%p f32[2] parameter(0)"), "expected '=' after instruction name p")
    assert (err.line, err.column) == (4, 6)


def test_undefined_operand():
    err = parse_error(
        body("ROOT %r = f32[2] negate(%nope)"), "operand nope of r is not defined in computation e"
    )
    assert (err.line, err.column) == (4, 27)


def test_operand_defined_later_is_a_clear_error():
    text = body("%p = f32[2] parameter(0)", "%a = f32[2] negate(%b)", "ROOT %b = f32[2] abs(%p)")
    err = parse_error(text, "operand b of a is used before its definition")
    assert (err.line, err.column) == (5, 22)


def test_unknown_computation():
    text = body(
        "%p = f32[2] parameter(0)",
        "%c = f32[] constant(0)",
        "ROOT %r = f32[] reduce(%p, %c), dimensions={0}, to_apply=%missing",
    )
    err = parse_error(text, "no computation named 'missing'")
    assert (err.line, err.column) == (6, 60)


def test_duplicate_instruction_name():
    err = parse_error(
        body("%p = f32[2] parameter(0)", "%p = f32[2] parameter(1)"),
        "instruction name 'p' is used twice",
    )
    assert err.line == 5


def test_operand_shape_must_match():
    err = parse_error(
        body("%p = f32[2] parameter(0)", "ROOT %r = f32[2] negate(s32[2] %p)"),
        "operand p of r is written with shape s32\\[2\\] but p has shape f32\\[2\\]",
    )
    assert err.line == 5


def test_declared_result_must_match_root():
    text = GOOD_HEADER + "ENTRY %e (p: f32[2]) -> s32[2] {\n  ROOT %p = f32[2] parameter(0)\n}\n"
    err = parse_error(text, "declares result s32\\[2\\] but its root p has shape f32\\[2\\]")
    assert err.line == 3


def test_unclosed_computation():
    err = parse_error(
        GOOD_HEADER + "ENTRY %e {\n  ROOT %p = f32[2] parameter(0)\n", "computation e is not closed"
    )
    assert err.line == 3


def test_unknown_element_type():
    err = parse_error(body("ROOT %p = f33[2] parameter(0)"), "unknown element type 'f33'")
    assert (err.line, err.column) == (4, 13)


@pytest.mark.parametrize(
    "attr,message",
    [
        ("dim_labels=b01f_01io->b0f", "bad dim_labels 'b01f_01io->b0f'"),
        ("window={size=3x3 stride=2}", "bad window: stride= needs 2 integers separated by 'x'"),
        ("window={size=3x3 pad=1_1x1}", "bad window: pad= needs 2 low_high pairs"),
        ("window={size=3x3 bogus=1}", "bad window item 'bogus=1'"),
    ],
)
def test_bad_convolution_attributes(attr, message):
    text = body(
        "%a = f32[1,8,8,3] parameter(0)",
        "%b = f32[3,3,3,8] parameter(1)",
        f"ROOT %c = f32[1,6,6,8] convolution(%a, %b), {attr}",
    )
    err = parse_error(text, message)
    assert err.line == 6


@pytest.mark.parametrize(
    "line,message",
    [
        ("ROOT %s = f32[2] slice(%p), slice={[0:2:1], 7}", "bad slice"),
        ("ROOT %s = f32[2] pad(%p, %p), padding=1x2", "expected padding such as 0_0x1_1_0"),
        ("ROOT %s = f32[2] pad(%p, %p), padding=1_2_3_4", "expected padding"),
        (
            "ROOT %s = pred[4] compare(%p, %p), direction=LESS",
            "unknown comparison direction 'LESS'",
        ),
        (
            "ROOT %s = f32[4] dot(%p, %p), operand_precision={fastest}",
            "unknown precision 'fastest'",
        ),
        ("ROOT %s = f32[4] sort(%p), is_stable=maybe", "expected true or false, found 'maybe'"),
        ("ROOT %s = f32[4] broadcast(%p), dimensions={0,}", "expected a list of integers"),
        (
            "ROOT %s = f32[4] gather(%p, %p), offset_dims={0}, collapsed_slice_dims={}, "
            "start_index_map={0}, slice_sizes={1}",
            "gather s is missing index_vector_dim",
        ),
        (
            "ROOT %s = f32[4] negate(%p), sharding={replicated}, sharding={replicated}",
            "attribute sharding is given twice",
        ),
    ],
)
def test_bad_attributes(line, message):
    err = parse_error(body("%p = f32[4] parameter(0)", line), message)
    assert err.line == 5


def test_unsupported_xla_op_is_unimplemented():
    text = body("%p = f32[4] parameter(0)", "ROOT %b = f32[4] ragged-all-to-all(%p)")
    with pytest.raises(
        Unimplemented, match="bad.hlo:5:20: XLA op 'ragged-all-to-all' is not supported"
    ):
        parse_module(text, source_name="bad.hlo")


def test_unbounded_dynamic_dimensions_are_unimplemented():
    with pytest.raises(Unimplemented, match=r"unbounded dynamic dimension '\?'.*a bound \(<=N\)"):
        parse_module(body("ROOT %p = f32[?,2] parameter(0)"))


def test_bounded_dimensions_parse_and_print_back():
    module = parse_module(body("ROOT %p = f32[<=4,2] parameter(0)"))
    shape = module.entry.root.shape
    assert shape.dims == (4, 2) and shape.dynamic == (True, False)
    assert "f32[<=4,2]" in print_module(module)


def test_sub_byte_types_are_unimplemented():
    with pytest.raises(Unimplemented, match="element type s2 is not supported"):
        parse_module(body("ROOT %p = s2[4] parameter(0)"))


def test_verifier_errors_name_the_instruction_and_line():
    text = body("ROOT %i = s32[4] iota(), iota_dimension=3")
    with pytest.raises(InvalidArgument, match=r"bad.hlo:4:3: .*iota i: iota_dimension=3") as info:
        parse_module(text, source_name="bad.hlo")
    assert not isinstance(info.value, ParseError)


def test_verify_can_be_skipped():
    module = parse_module(body("ROOT %i = s32[4] iota(), iota_dimension=3"), verify=False)
    assert module.entry.root.attrs["iota_dimension"] == 3


def test_second_entry_and_root():
    text = (
        GOOD_HEADER + "ENTRY %a {\n  ROOT %p = f32[] parameter(0)\n}\n\n"
        "ENTRY %b {\n  ROOT %q = f32[] parameter(0)\n}\n"
    )
    assert parse_error(text, "second ENTRY computation b").line == 7
    err = parse_error(
        body("ROOT %p = f32[] parameter(0)", "ROOT %q = f32[] parameter(1)"),
        "second ROOT in computation e",
    )
    assert err.line == 5


def test_verifier_error_line_is_the_failing_instruction_not_a_namesake():
    text = body(
        "%iota = s32[4] iota(), iota_dimension=0", "ROOT %iota.1 = s32[4] iota(), iota_dimension=7"
    )
    with pytest.raises(InvalidArgument, match=r"bad.hlo:5:3: .*iota iota.1: iota_dimension=7"):
        parse_module(text, source_name="bad.hlo")


def test_corrupted_samples_fail_only_with_hlort_errors():
    """Random edits of real samples either parse or raise HlortError, never a Python crash."""
    samples = [p.read_text() for p in sorted((Path(__file__).parent / "samples").glob("*.hlo"))]
    rng = random.Random(1)
    pieces = list('{}()[],=:%"-_.x0123456789abfio \n/*<>') + ["->", "ROOT", "f32[2]", "{...}"]
    for _ in range(400):
        text = rng.choice(samples)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text))
            if rng.random() < 0.5:
                text = text[:at] + text[at + rng.randint(1, 5) :]
            else:
                text = text[:at] + rng.choice(pieces) + text[at:]
        try:
            print_module(parse_module(text, verify=rng.random() < 0.5))
        except HlortError:
            pass
