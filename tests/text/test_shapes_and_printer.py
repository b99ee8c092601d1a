"""Shapes in text, and the printer's choices: layouts, attribute order, metadata, the header."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import Builder, shape
from hlort.errors import ParseError, Unimplemented
from hlort.ir import attributes as A
from hlort.shape import TOKEN, ArrayShape, TupleShape
from hlort.text import (
    module_difference,
    modules_equal,
    parse_module,
    parse_shape,
    print_computation,
    print_instruction,
    print_module,
)
from hlort.text.shapes import shape_text


@pytest.mark.parametrize(
    "text,expected,layout",
    [
        ("f32[2,3]", shape.array("f32", [2, 3]), None),
        ("f32[2,3]{0,1}", shape.array("f32", [2, 3]), (0, 1)),
        ("bf16[8,128]{1,0:T(8,128)(2,1)}", shape.array("bf16", [8, 128]), (1, 0)),
        ("f32[]{:T(128)}", shape.scalar("f32"), None),
        ("s32[ 4 , 5 ]", shape.array("s32", [4, 5]), None),
        ("pred[]", shape.scalar("pred"), None),
        ("f32[0]{0}", shape.array("f32", [0]), (0,)),
    ],
)
def test_parse_array_shapes(text, expected, layout):
    parsed = parse_shape(text)
    assert parsed == expected and parsed.layout == layout


def test_parse_tuple_and_token_shapes():
    parsed = parse_shape("(f32[2]{0}, (s32[], token[]), /*index=2*/ ())")
    inner = TupleShape((shape.scalar("s32"), TOKEN))
    assert parsed == TupleShape((shape.array("f32", [2]), inner, TupleShape(())))
    assert parse_shape("token[]") is TOKEN


@pytest.mark.parametrize(
    "text,error",
    [
        ("f32[2", ParseError),
        ("f32[2,3]{1,1}", ParseError),
        ("f32[2]{0} junk", ParseError),
        ("(f32[2] s32[])", ParseError),
        ("q32[2]", ParseError),
        ("f32[?]", Unimplemented),
        ("u2[2]", Unimplemented),
    ],
)
def test_bad_shapes(text, error):
    with pytest.raises(error):
        parse_shape(text)


def test_shape_text_prints_default_layouts():
    assert shape_text(shape.array("f32", [2, 3, 4])) == "f32[2,3,4]{2,1,0}"
    assert shape_text(ArrayShape(shape.array("f32", [2, 3]).dtype, (2, 3), (0, 1))) == (
        "f32[2,3]{0,1}"
    )
    assert shape_text(shape.scalar("f32")) == "f32[]"
    assert shape_text(shape.array("f32", [2, 3]), with_layout=False) == "f32[2,3]"
    six = TupleShape(tuple(shape.scalar("s32") for _ in range(6)))
    assert shape_text(six) == "(s32[], s32[], s32[], s32[], s32[], /*index=5*/s32[])"


def _axpy():
    b = Builder("axpy")
    a = b.parameter(shape.scalar("f32"), "a")
    x = b.parameter(shape.array("f32", [4]), "x")
    y = b.parameter(shape.array("f32", [4]), "y")
    ax = b.multiply(b.broadcast(a, [4], []), x)
    module = b.build(b.add(ax, y))
    module.entry.root.extra_attrs["metadata"] = '{op_name="axpy/add"}'
    return module


def test_builder_module_prints_in_xla_style():
    text = print_module(_axpy())
    assert text == (
        "HloModule axpy, entry_computation_layout={(f32[], f32[4]{0}, f32[4]{0})->f32[4]{0}}\n"
        "\n"
        "ENTRY %axpy (a: f32[], x: f32[4], y: f32[4]) -> f32[4] {\n"
        "  %a = f32[] parameter(0)\n"
        "  %x = f32[4]{0} parameter(1)\n"
        "  %y = f32[4]{0} parameter(2)\n"
        "  %broadcast = f32[4]{0} broadcast(f32[] %a), dimensions={}\n"
        "  %multiply = f32[4]{0} multiply(f32[4]{0} %broadcast, f32[4]{0} %x)\n"
        "  ROOT %add = f32[4]{0} add(f32[4]{0} %multiply, f32[4]{0} %y), "
        'metadata={op_name="axpy/add"}\n'
        "}\n"
    )


def test_print_instruction_and_computation():
    module = _axpy()
    root = module.entry.root
    assert print_instruction(root, include_metadata=False) == (
        "%add = f32[4]{0} add(f32[4]{0} %multiply, f32[4]{0} %y)"
    )
    assert print_instruction(root).endswith('metadata={op_name="axpy/add"}')
    comp_text = print_computation(module.entry)
    assert comp_text.startswith("ENTRY %axpy (a: f32[], x: f32[4], y: f32[4]) -> f32[4] {\n")
    assert comp_text.endswith("\n}")


def test_metadata_does_not_change_the_fingerprint():
    a, b = _axpy(), _axpy()
    b.entry.root.extra_attrs["metadata"] = '{op_name="elsewhere" source_line=3}'
    assert a.fingerprint() == b.fingerprint()
    assert "metadata" not in print_module(a, include_metadata=False)
    c = _axpy()  # a real change alters the fingerprint
    c.entry.root.operands.reverse()
    assert c.fingerprint() != a.fingerprint()


def test_header_layout_is_regenerated_when_stale_and_config_printed():
    module = parse_module(
        "HloModule m, entry_computation_layout={(f32[9])->f32[9]}, is_scheduled=true\n\n"
        "ENTRY %e (p: f32[2]) -> f32[2] {\n  ROOT %p = f32[2]{0} parameter(0)\n}\n"
    )
    module.config["num_replicas"] = 2
    header = print_module(module).splitlines()[0]
    assert header == (
        "HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}, "
        "is_scheduled=true, replica_count=2"
    )
    assert parse_module(print_module(module)).config["num_replicas"] == 2


def test_operand_index_comments_and_pred_conditional():
    b = Builder("main")
    xs = [b.parameter(shape.scalar("f32")) for _ in range(7)]
    branches = []
    for name in ("t", "f"):
        sub = b.sub(name)
        branches.append(sub.finish(sub.negate(sub.parameter(shape.scalar("f32")))))
    p = b.parameter(shape.scalar("pred"))
    cond = b.conditional(p, branches, [xs[0], xs[1]])
    module = b.build(b.tuple([*xs, cond]))
    text = print_module(module)
    assert "f32[] %p4, /*index=5*/f32[] %p5" in text
    assert "true_computation=%t, false_computation=%f" in text
    assert modules_equal(module, parse_module(text), check_names=True)


def test_custom_call_backend_config_printed_last_and_escaped():
    b = Builder("main")
    x = b.parameter(shape.array("f32", [2]))
    call = b.custom_call("target", [x], shape.array("f32", [2]), backend_config='a "b"\n\u00e9')
    call.extra_attrs["metadata"] = '{op_name="c"}'
    text = print_instruction(b.build(call).entry.root)
    assert text.endswith(', metadata={op_name="c"}, backend_config="a \\"b\\"\\n\\303\\251"')


def test_module_difference_reports_what_differs():
    a = parse_module("HloModule m\n\nENTRY %e {\n  ROOT %c = f32[2] constant({1, nan})\n}\n")
    b = parse_module("HloModule m\n\nENTRY %e {\n  ROOT %c = f32[2] constant({1, -nan})\n}\n")
    assert "literals differ" in module_difference(a, b)
    assert modules_equal(a, a.clone())
    c = a.clone()
    c.entry.root.shape = ArrayShape(c.entry.root.shape.dtype, (2,), (0,))
    assert modules_equal(a, c)  # a missing layout means the default one


def test_attribute_defaults_compare_equal():
    text = (
        "HloModule m\n\nENTRY %e {\n  %p = f32[4] parameter(0)\n"
        "  ROOT %c = pred[4] compare(%p, %p), direction=LT, type=FLOAT\n}\n"
    )
    explicit = parse_module(text)
    assert explicit.entry.root.attrs["comparison_type"] is A.ComparisonType.FLOAT
    implicit = parse_module(text.replace(", type=FLOAT", ""))
    assert modules_equal(explicit, implicit)


def _big_module(n: int) -> str:
    lines = [
        "HloModule big, entry_computation_layout={(f32[128,256]{1,0})->f32[128,256]{1,0}}",
        "",
        "ENTRY %main (p: f32[128,256]) -> f32[128,256] {",
        "  %p = f32[128,256]{1,0} parameter(0)",
    ]
    prev = "p"
    for i in range(n):
        lines.append(
            f"  %add.{i} = f32[128,256]{{1,0}} add(f32[128,256]{{1,0}} %{prev}, f32[128,256]{{1,0}}"
            f' %p), metadata={{op_name="jit(f)/jit(main)/add" source_file="/tmp/model.py"'
            f" source_line={i}}}"
        )
        prev = f"add.{i}"
    lines[-1] = "  ROOT" + lines[-1][1:]
    return "\n".join(lines) + "\n}\n"


def test_one_megabyte_module_parses():
    """Speed is measured in benchmarks/parse_speed.py; here only the result is checked."""
    text = _big_module(5800)
    assert len(text) > 1_000_000
    module = parse_module(text, verify=False)
    assert module.instruction_count() == 5801


def test_large_constant_parses():
    values = np.random.default_rng(0).standard_normal(200_000).astype(np.float32)
    b = Builder("main")
    module = b.build(b.constant(values))
    text = print_module(module)
    parsed = parse_module(text, verify=False)
    assert np.array_equal(parsed.entry.root.literal, values)


def test_fingerprint_ignores_header_metadata_but_not_aliasing():
    text = (
        'HloModule m, is_scheduled=true, frontend_attributes={x="1"}\n\n'
        "ENTRY %e {\n  ROOT %p = f32[2] parameter(0)\n}\n"
    )
    plain = parse_module(text.replace(', is_scheduled=true, frontend_attributes={x="1"}', ""))
    assert parse_module(text).fingerprint() == plain.fingerprint()
    aliased = parse_module(text.replace("is_scheduled=true", "input_output_alias={ {}: (0, {}) }"))
    assert aliased.fingerprint() != plain.fingerprint()


@pytest.mark.parametrize("config", ['{"a": 1}', "{unbalanced", '{"a": "}"', "{a}\n{b}", ""])
def test_custom_call_backend_config_round_trips(config):
    b = Builder("main")
    x = b.parameter(shape.array("f32", [2]))
    module = b.build(b.custom_call("t", [x], shape.array("f32", [2]), backend_config=config))
    parsed = parse_module(print_module(module))
    assert parsed.entry.root.attrs.get("backend_config", "") == config
