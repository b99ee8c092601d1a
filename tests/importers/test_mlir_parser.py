"""The MLIR parser: every syntax feature the StableHLO corpus and JAX use, and its errors."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.errors import ParseError
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo import parse_mlir


def ops_of(text: str, func: str = "main") -> list[ast.Operation]:
    return parse_mlir(text).functions[func].body.blocks[0].ops


def single_op(body: str, args: str = "") -> ast.Operation:
    ops = ops_of(f"func.func @main({args}) {{\n{body}\n  func.return\n}}")
    return ops[0]


def test_module_header_attributes_and_visibility():
    m = parse_mlir(
        "module @jit_f attributes {mhlo.num_partitions = 1 : i32, jax.uses_shape_polymorphism = "
        'true, sdy.mesh = "m"} {\n'
        '  func.func public @main() -> (tensor<i32> {jax.result_info = ""}) {\n'
        "    %0 = call @helper() : () -> tensor<i32>\n    return %0 : tensor<i32>\n  }\n"
        "  func.func private @helper() -> tensor<i32> {\n"
        "    %c = stablehlo.constant dense<7> : tensor<i32>\n    func.return %c : tensor<i32>\n"
        "  }\n}\n"
    )
    assert m.name == "jit_f"
    assert m.attrs["mhlo.num_partitions"] == 1
    assert [f.visibility for f in m.functions.values()] == ["public", "private"]
    call, ret = m.functions["main"].body.blocks[0].ops
    assert call.name == "func.call" and call.attrs["callee"] == ast.SymbolRef("helper")
    assert ret.name == "func.return" and ret.operands == ["%0"]


def test_bare_functions_without_module_and_arguments_with_attributes():
    m = parse_mlir(
        'func.func @f(%arg0: tensor<2xf32> {mhlo.sharding = "{replicated}"}, %x : tensor<i1>)'
        " -> tensor<2xf32> {\n  return %arg0 : tensor<2xf32>\n}\n"
    )
    f = m.functions["f"]
    assert [n for n, _ in f.args] == ["%arg0", "%x"]
    assert str(f.args[0][1]) == "tensor<2xf32>" and f.result_types[0].dims == (2,)


def test_multiple_results_with_count_and_with_names():
    ops = ops_of(
        "func.func @main(%a: tensor<2xui64>) {\n"
        "  %0:2 = call @f() : () -> (tensor<f32>, tensor<i32>)\n"
        "  %s, %o = stablehlo.rng_bit_generator %a, algorithm = THREE_FRY : "
        "(tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)\n"
        "  %1 = stablehlo.add %0#0, %0#0 : tensor<f32>\n  func.return\n}\n"
    )
    assert ops[0].results == ["%0#0", "%0#1"]
    assert ops[1].results == ["%s", "%o"]
    assert ops[1].attrs["rng_algorithm"].value == "THREE_FRY"
    assert ops[2].operands == ["%0#0", "%0#0"]


def test_generic_form_with_properties_regions_and_block_arguments():
    op = single_op(
        '  %r = "stablehlo.scatter"(%a, %i, %u) <{indices_are_sorted = true, '
        "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], "
        "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>,"
        " unique_indices = true}> ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
        "    %s = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %s : tensor<f32>\n"
        "  }) {mhlo.frontend_attributes = {}} : (tensor<3x2xf32>, tensor<1x1xi32>, "
        "tensor<1x2xf32>) -> tensor<3x2xf32>",
        "%a: tensor<3x2xf32>, %i: tensor<1x1xi32>, %u: tensor<1x2xf32>",
    )
    assert op.name == "stablehlo.scatter" and op.operands == ["%a", "%i", "%u"]
    assert op.attrs["indices_are_sorted"] is True
    dn = op.attrs["scatter_dimension_numbers"]
    assert dn.name == "stablehlo.scatter" and dn.fields["update_window_dims"] == [1]
    block = op.regions[0].blocks[0]
    assert [n for n, _ in block.args] == ["%x", "%y"]
    assert [o.name for o in block.ops] == ["stablehlo.add", "stablehlo.return"]
    assert str(op.result_types[0]) == "tensor<3x2xf32>"


def test_pretty_forms_store_generic_attribute_names():
    text = (
        "func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %p: tensor<f32>) {\n"
        "  %0 = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<f32>) -> tensor<2x3xf32>\n"
        "  %1 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
        "  %2 = stablehlo.slice %a [0:2, 1:3:2] : (tensor<2x3xf32>) -> tensor<2x1xf32>\n"
        "  %3 = stablehlo.compare  LT, %a, %0,  TOTALORDER : "
        "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>\n"
        "  %4 = stablehlo.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x"
        " [0], precision = [DEFAULT, HIGHEST] : (tensor<2x3xf32>, tensor<3x4xf32>) -> "
        "tensor<2x4xf32>\n"
        "  %5 = stablehlo.pad %a, %p, low = [0, 1], high = [1, 0], interior = [0, 0] : "
        "(tensor<2x3xf32>, tensor<f32>) -> tensor<3x4xf32>\n"
        "  %6 = stablehlo.iota dim = 1 : tensor<2x3xi32>\n"
        "  %7 = stablehlo.reduce_precision %a, format = e5m10 : tensor<2x3xf32>\n"
        "  %8 = stablehlo.concatenate %a, %a, dim = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
        "tensor<4x3xf32>\n"
        "  %9 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<f32>, tensor<i1>>) -> "
        "tensor<i1>\n  func.return\n}\n"
    )
    ops = ops_of(text)
    assert ops[0].attrs["broadcast_dimensions"] == ()
    assert ops[1].attrs["permutation"] == (1, 0)
    assert ops[2].attrs["start_indices"] == (0, 1) and ops[2].attrs["strides"] == (1, 2)
    assert ops[3].attrs["comparison_direction"].value == "LT"
    assert ops[3].attrs["compare_type"].value == "TOTALORDER"
    assert ops[4].attrs["lhs_contracting_dimensions"] == (1,)
    assert [p.value for p in ops[4].attrs["precision_config"]] == ["DEFAULT", "HIGHEST"]
    assert ops[5].attrs["edge_padding_low"] == (0, 1)
    assert ops[6].attrs["iota_dimension"] == 1
    assert (ops[7].attrs["exponent_bits"], ops[7].attrs["mantissa_bits"]) == (5, 10)
    assert ops[8].attrs["dimension"] == 0
    assert ops[9].attrs["index"] == 1


def test_convolution_dimension_numbers_and_window():
    op = single_op(
        "  %0 = stablehlo.convolution(%a, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->"
        "[b, 0, 1, f], window = {stride = [2, 1], pad = [[1, 1], [0, 2]], lhs_dilate = [1, 1],"
        " rhs_dilate = [1, 2], reverse = [false, true]} {batch_group_count = 1 : i64, "
        "feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> "
        "tensor<1x4x6x4xf32>",
        "%a: tensor<1x8x8x2xf32>, %k: tensor<3x3x2x4xf32>",
    )
    dims = op.attrs["dimension_numbers"]
    assert dims == ast.ConvDimsAttr(
        ("b", "0", "1", "f"), ("0", "1", "i", "o"), ("b", "0", "1", "f")
    )
    assert op.attrs["window_strides"] == (2, 1)
    assert op.attrs["padding"] == [[1, 1], [0, 2]]
    assert op.attrs["window_reversal"] == (False, True)
    assert op.attrs["feature_group_count"] == 1


def test_generic_conv_and_enum_and_struct_attributes():
    op = single_op(
        '  %0 = "stablehlo.convolution"(%a, %k) {dimension_numbers = #stablehlo.conv<[b, f, 0]x'
        "[o, i, 0]->[b, f, 0]>, window_strides = array<i64: 1>, padding = dense<0> : "
        "tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, "
        "precision_config = [#stablehlo<precision HIGH>, #stablehlo<precision DEFAULT>]} : "
        "(tensor<1x2x5xf32>, tensor<3x2x2xf32>) -> tensor<1x3x4xf32>",
        "%a: tensor<1x2x5xf32>, %k: tensor<3x2x2xf32>",
    )
    assert op.attrs["dimension_numbers"].input == ("b", "f", "0")
    assert op.attrs["window_strides"] == (1,)
    assert op.attrs["channel_handle"].fields == {"handle": 1, "type": 0}
    assert op.attrs["precision_config"][0] == ast.EnumAttr("stablehlo", "precision", "HIGH")
    assert op.attrs["padding"].value.shape == (1, 2)


def test_reduce_pretty_forms():
    ops = ops_of(
        "func.func @main(%a: tensor<2x3xf32>, %i: tensor<2x3xi32>, %z: tensor<f32>, "
        "%c: tensor<i32>) {\n"
        "  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : "
        "(tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
        "  %1:2 = stablehlo.reduce(%a init: %z), (%i init: %c) across dimensions = [0] : "
        "(tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<3xf32>, "
        "tensor<3xi32>)\n   reducer(%p: tensor<f32>, %q: tensor<f32>) (%r: tensor<i32>, "
        "%s: tensor<i32>)  {\n    stablehlo.return %p, %r : tensor<f32>, tensor<i32>\n  }\n"
        "  func.return\n}\n"
    )
    assert ops[0].attrs["dimensions"] == (1,)
    assert [o.name for o in ops[0].regions[0].blocks[0].ops] == [
        "stablehlo.add",
        "stablehlo.return",
    ]
    assert ops[1].operands == ["%a", "%i", "%z", "%c"]
    assert [n for n, _ in ops[1].regions[0].blocks[0].args] == ["%p", "%r", "%q", "%s"]


def test_while_and_case_regions():
    ops = ops_of(
        "func.func @main(%n: tensor<i64>) {\n"
        "  %r0, %r1 = stablehlo.while(%i = %n, %s = %n) : tensor<i64>, tensor<i64>\n"
        "  cond {\n    %c = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> "
        "tensor<i1>\n    stablehlo.return %c : tensor<i1>\n  } do {\n"
        "    stablehlo.return %i, %s : tensor<i64>, tensor<i64>\n  }\n"
        '  %k = "stablehlo.case"(%n) ({\n    stablehlo.return %n : tensor<i64>\n  }, {\n'
        "    stablehlo.return %r0 : tensor<i64>\n  }) : (tensor<i64>) -> tensor<i64>\n"
        "  func.return\n}\n"
    )
    loop, case = ops[0], ops[1]
    assert loop.results == ["%r0", "%r1"] and loop.operands == ["%n", "%n"]
    assert [n for n, _ in loop.regions[0].blocks[0].args] == ["%i", "%s"]
    assert len(case.regions) == 2 and case.regions[1].blocks[0].ops[0].operands == ["%r0"]


def test_custom_call_composite_and_check_ops():
    ops = ops_of(
        "func.func @main(%a: tensor<2xf32>) {\n"
        '  %0 = stablehlo.custom_call @foo(%a) {backend_config = "cfg", has_side_effect = true}'
        " : (tensor<2xf32>) -> tensor<2xf32>\n"
        '  %1 = stablehlo.composite "my.op" %a {composite_attributes = {n = 2 : i64}, '
        "decomposition = @impl} : (tensor<2xf32>) -> tensor<2xf32>\n"
        "  check.expect_eq_const %0, dense<[1.0, 2.0]> : tensor<2xf32>\n"
        "  check.expect_almost_eq %0, %1, tolerance = 0.1 : tensor<2xf32>\n"
        "  check.expect_close %0, %1, max_ulp_difference = 3 : tensor<2xf32>, tensor<2xf32>\n"
        "  func.return\n}\n"
    )
    assert ops[0].attrs["call_target_name"] == "foo"
    assert ops[0].attrs["backend_config"] == "cfg"
    assert ops[1].attrs["name"] == "my.op" and ops[1].attrs["decomposition"].name == "impl"
    np.testing.assert_array_equal(ops[2].attrs["value"].value, [1.0, 2.0])
    assert ops[3].attrs["tolerance"] == 0.1
    assert ops[4].attrs["max_ulp_difference"] == 3


@pytest.mark.parametrize(
    "name",
    [
        "i1",
        "i8",
        "i16",
        "i32",
        "i64",
        "ui8",
        "ui16",
        "ui32",
        "ui64",
        "f16",
        "bf16",
        "f32",
        "f64",
        "f8E4M3FN",
        "f8E5M2",
        "complex<f32>",
        "complex<f64>",
    ],
)
def test_every_element_type_parses(name):
    op = single_op(f"  %0 = stablehlo.iota dim = 0 : tensor<3x{name}>")
    assert str(op.result_types[0]) == f"tensor<3x{name}>"


def test_dynamic_quantized_token_and_tuple_types():
    m = parse_mlir(
        "func.func @main(%a: tensor<?x4xf32>, %t: !stablehlo.token, "
        "%q: tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>, "
        "%u: tuple<tensor<2xf64>, tuple<tensor<i64>>>) {\n  func.return\n}\n"
    )
    types = [t for _, t in m.functions["main"].args]
    assert types[0].dims == (-1, 4) and not types[0].is_static
    assert isinstance(types[1], ast.TokenType)
    assert isinstance(types[2].element, ast.QuantType)
    assert isinstance(types[3], ast.TupleType) and isinstance(types[3].types[1], ast.TupleType)


def test_locations_and_aliases_are_skipped():
    m = parse_mlir(
        '#loc = loc("f.py":1:2)\n#loc1 = loc(unknown)\n'
        "func.func @main(%a: tensor<f32> loc(#loc)) {\n"
        "  %0 = stablehlo.add %a, %a : tensor<f32> loc(#loc1)\n  func.return loc(#loc)\n"
        '} loc(fused["x", #loc])\n'
    )
    assert m.functions["main"].body.blocks[0].ops[0].name == "stablehlo.add"


def test_syntax_errors_carry_line_and_column():
    with pytest.raises(ParseError) as info:
        parse_mlir("func.func @main() {\n  %0 = stablehlo.add %a, : tensor<f32>\n}\n", "x.mlir")
    err = info.value
    assert (err.line, err.source_name) == (2, "x.mlir") and err.column > 1
    assert "x.mlir:2:" in str(err)
    with pytest.raises(ParseError) as info:
        parse_mlir("func.func @main() {\n  %0 = stablehlo.constant dense<[1, 2> : tensor<2xi32>")
    assert info.value.line == 2
    with pytest.raises(ParseError):
        parse_mlir("func.func @main() { $ }")
    with pytest.raises(ParseError):
        parse_mlir(
            "func.func @main() {\n  %0 = stablehlo.constant dense<[1, 2, 3]> : tensor<2xi32>\n}"
        )


def test_shardy_and_other_dialect_attributes_are_skipped():
    m = parse_mlir(
        'module @jit_f attributes {mhlo.frontend_attributes = {xla.sdy.meshes = "{}"}} {\n'
        '  sdy.mesh @mesh = <["x"=2, "y"=1]>\n'
        "  func.func public @main(%a: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, "
        '[{"x"}]>, jax.result_info = "r"}) -> tensor<4xf32> {\n'
        '    %0 = stablehlo.negate %a {mhlo.sharding = "{replicated}"} : tensor<4xf32>\n'
        "    return %0 : tensor<4xf32>\n  }\n}\n"
    )
    assert m.functions["main"].body.blocks[0].ops[0].name == "stablehlo.negate"
