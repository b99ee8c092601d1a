"""StableHLO -> HLO conversion, checked by running the result on the reference interpreter."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hlort
from hlort.errors import HlortError, InvalidArgument, ParseError, Unimplemented
from hlort.importers.stablehlo import import_stablehlo, parse_stablehlo
from hlort.ir.opcodes import Opcode


def run(body: str, args: str = "", results: str = "", *values):
    text = f"func.func @main({args}) -> ({results}) {{\n{body}\n}}\n"
    return hlort.evaluate(parse_stablehlo(text, "t.mlir"), list(values))


def opcodes(module) -> set[Opcode]:
    return {i.opcode for c in module.computations for i in c.instructions}


def test_elementwise_and_degenerate_broadcast():
    out = run(
        "  %0 = stablehlo.broadcast_in_dim %a, dims = [0, 1] : (tensor<2x1xf32>) -> "
        "tensor<2x3xf32>\n  %1 = stablehlo.multiply %0, %b : tensor<2x3xf32>\n"
        "  %2 = stablehlo.compare GT, %1, %b, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
        "tensor<2x3xi1>\n  %3 = stablehlo.select %2, %1, %b : tensor<2x3xi1>, tensor<2x3xf32>\n"
        "  return %3 : tensor<2x3xf32>",
        "%a: tensor<2x1xf32>, %b: tensor<2x3xf32>",
        "tensor<2x3xf32>",
        np.array([[2.0], [0.5]], np.float32),
        np.ones((2, 3), np.float32),
    )
    np.testing.assert_array_equal(out, [[2, 2, 2], [1, 1, 1]])


def test_scalar_predicate_select_and_scalar_clamp_bounds():
    out = run(
        "  %lo = stablehlo.constant dense<0> : tensor<i32>\n"
        "  %hi = stablehlo.constant dense<3> : tensor<i32>\n"
        "  %0 = stablehlo.clamp %lo, %x, %hi : (tensor<i32>, tensor<4xi32>, tensor<i32>) -> "
        "tensor<4xi32>\n  %1 = stablehlo.select %p, %0, %x : tensor<i1>, tensor<4xi32>\n"
        "  return %1 : tensor<4xi32>",
        "%p: tensor<i1>, %x: tensor<4xi32>",
        "tensor<4xi32>",
        np.array(True),
        np.array([-2, 1, 5, 3], np.int32),
    )
    np.testing.assert_array_equal(out, [0, 1, 3, 3])


def test_variadic_reduce_is_an_argmax():
    out = run(
        "  %i = stablehlo.iota dim = 0 : tensor<5xi32>\n"
        "  %m = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
        "  %z = stablehlo.constant dense<0> : tensor<i32>\n"
        "  %0:2 = stablehlo.reduce(%x init: %m), (%i init: %z) across dimensions = [0] : "
        "(tensor<5xf32>, tensor<5xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)"
        "\n   reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>) {\n"
        "    %g = stablehlo.compare GE, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
        "    %v = stablehlo.select %g, %a, %c : tensor<i1>, tensor<f32>\n"
        "    %k = stablehlo.select %g, %b, %d : tensor<i1>, tensor<i32>\n"
        "    stablehlo.return %v, %k : tensor<f32>, tensor<i32>\n  }\n"
        "  return %0#0, %0#1 : tensor<f32>, tensor<i32>",
        "%x: tensor<5xf32>",
        "tensor<f32>, tensor<i32>",
        np.array([1, 7, 3, 7, 2], np.float32),
    )
    assert out[0] == 7 and out[1] == 1


def test_while_with_values_captured_from_outside():
    out = run(
        "  %zero = stablehlo.constant dense<0> : tensor<i64>\n"
        "  %one = stablehlo.constant dense<1> : tensor<i64>\n"
        "  %r:2 = stablehlo.while(%i = %zero, %s = %zero) : tensor<i64>, tensor<i64>\n"
        "  cond {\n    %c = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> "
        "tensor<i1>\n    stablehlo.return %c : tensor<i1>\n  } do {\n"
        "    %t = stablehlo.add %s, %step : tensor<i64>\n"
        "    %j = stablehlo.add %i, %one : tensor<i64>\n"
        "    stablehlo.return %j, %t : tensor<i64>, tensor<i64>\n  }\n"
        "  return %r#1 : tensor<i64>",
        "%n: tensor<i64>, %step: tensor<i64>",
        "tensor<i64>",
        np.array(4, np.int64),
        np.array(3, np.int64),
    )
    assert out == 12


@pytest.mark.parametrize("index,expected", [(0, 10.0), (1, 20.0), (7, 20.0), (-1, 20.0)])
def test_case_branches_and_out_of_range_index(index, expected):
    out = run(
        '  %0 = "stablehlo.case"(%i) ({\n    %a = stablehlo.multiply %x, %ten : tensor<f32>\n'
        "    stablehlo.return %a : tensor<f32>\n  }, {\n"
        "    %b = stablehlo.multiply %x, %twenty : tensor<f32>\n"
        "    stablehlo.return %b : tensor<f32>\n  }) : (tensor<i32>) -> tensor<f32>\n"
        "  return %0 : tensor<f32>",
        "%i: tensor<i32>, %x: tensor<f32>, %ten: tensor<f32>, %twenty: tensor<f32>",
        "tensor<f32>",
        np.array(index, np.int32),
        np.array(1, np.float32),
        np.array(10, np.float32),
        np.array(20, np.float32),
    )
    assert out == expected


def test_if_and_function_calls():
    text = (
        "func.func @main(%p: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {\n"
        '  %0 = "stablehlo.if"(%p) ({\n    %a = func.call @twice(%x) : (tensor<2xf32>) -> '
        "tensor<2xf32>\n    stablehlo.return %a : tensor<2xf32>\n  }, {\n"
        "    stablehlo.return %x : tensor<2xf32>\n  }) : (tensor<i1>) -> tensor<2xf32>\n"
        "  return %0 : tensor<2xf32>\n}\n"
        "func.func private @twice(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = stablehlo.add %a, %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n"
    )
    module = parse_stablehlo(text)
    assert {Opcode.CONDITIONAL, Opcode.CALL} <= opcodes(module)
    x = np.array([1, 2], np.float32)
    np.testing.assert_array_equal(hlort.evaluate(module, [np.array(True), x]), [2, 4])
    np.testing.assert_array_equal(hlort.evaluate(module, [np.array(False), x]), [1, 2])


def test_sort_scatter_gather():
    x = np.array([3, 1, 2, 0, 4], np.float32)
    idx = np.array([[1], [1]], np.int32)
    upd = np.array([10, 20], np.float32)
    text = open(__file__.replace("test_convert.py", "samples/scatter_gather_sort.mlir")).read()
    scattered, gathered, ordered = hlort.evaluate(parse_stablehlo(text), [x, idx, upd])
    np.testing.assert_array_equal(scattered, [3, 31, 2, 0, 4])
    np.testing.assert_array_equal(gathered, [1, 1])
    np.testing.assert_array_equal(ordered, [0, 1, 2, 3, 4])


def test_dot_general_with_wider_result_and_convolution():
    a = np.array([[100, 100]], np.int8)
    out = run(
        "  %0 = stablehlo.dot_general %a, %a, contracting_dims = [1] x [1] : "
        "(tensor<1x2xi8>, tensor<1x2xi8>) -> tensor<1x1xi32>\n  return %0 : tensor<1x1xi32>",
        "%a: tensor<1x2xi8>",
        "tensor<1x1xi32>",
        a,
    )
    assert out.dtype == np.int32 and out[0, 0] == 20000
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    k = np.array([1, 0, -1], np.float32).reshape(1, 1, 3)
    conv = run(
        "  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], "
        "window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : "
        "(tensor<1x1x5xf32>, tensor<1x1x3xf32>) -> tensor<1x1x3xf32>\n"
        "  return %0 : tensor<1x1x3xf32>",
        "%x: tensor<1x1x5xf32>, %k: tensor<1x1x3xf32>",
        "tensor<1x1x3xf32>",
        x,
        k,
    )
    np.testing.assert_array_equal(conv.reshape(-1), [-2, -2, -2])


def test_dynamic_ops_with_static_shapes_fold():
    out = run(
        "  %s = stablehlo.constant dense<[2, 3]> : tensor<2xi32>\n"
        "  %0 = stablehlo.dynamic_broadcast_in_dim %x, %s, dims = [1] : "
        "(tensor<3xf32>, tensor<2xi32>) -> tensor<2x3xf32>\n"
        "  %n = stablehlo.get_dimension_size %0, dim = 0 : (tensor<2x3xf32>) -> tensor<i32>\n"
        "  return %0, %n : tensor<2x3xf32>, tensor<i32>",
        "%x: tensor<3xf32>",
        "tensor<2x3xf32>, tensor<i32>",
        np.array([1, 2, 3], np.float32),
    )
    assert out[0].shape == (2, 3) and out[1] == 2


def test_sub_byte_integers_wrap_like_the_narrow_type():
    out = run(
        "  %a = stablehlo.constant dense<[7, -8, 3]> : tensor<3xi4>\n"
        "  %b = stablehlo.constant dense<[1, -1, 4]> : tensor<3xi4>\n"
        "  %0 = stablehlo.add %a, %b : tensor<3xi4>\n"
        "  %u = stablehlo.constant dense<[15, 0]> : tensor<2xui4>\n"
        "  %1 = stablehlo.not %u : tensor<2xui4>\n"
        "  return %0, %1 : tensor<3xi4>, tensor<2xui4>",
    )
    np.testing.assert_array_equal(out[0], [-8, 7, 7])
    np.testing.assert_array_equal(out[1], [0, 15])


def test_bitcast_between_i1_vectors_and_integers():
    out = run(
        "  %c = stablehlo.constant dense<0x0123456789ABCDEF> : tensor<i64>\n"
        "  %0 = stablehlo.bitcast_convert %c : (tensor<i64>) -> tensor<64xi1>\n"
        "  %1 = stablehlo.bitcast_convert %0 : (tensor<64xi1>) -> tensor<i64>\n"
        "  return %0, %1 : tensor<64xi1>, tensor<i64>",
    )
    assert list(out[0][:8]) == [True] * 4 + [False, True, True, True]
    assert out[1] == 0x0123456789ABCDEF


def test_complex_maximum_is_lexicographic():
    out = run(
        "  %a = stablehlo.constant dense<[(1.0, 5.0), (2.0, 0.0)]> : tensor<2xcomplex<f32>>\n"
        "  %b = stablehlo.constant dense<[(1.0, 6.0), (1.0, 9.0)]> : tensor<2xcomplex<f32>>\n"
        "  %0 = stablehlo.maximum %a, %b : tensor<2xcomplex<f32>>\n"
        "  return %0 : tensor<2xcomplex<f32>>",
    )
    np.testing.assert_array_equal(out, [1 + 6j, 2 + 0j])


def test_uniform_quantization_round_trip():
    out = run(
        "  %q = stablehlo.uniform_quantize %x : (tensor<4xf32>) -> "
        "tensor<4x!quant.uniform<i8:f32, 0.5:-1>>\n"
        "  %s = stablehlo.add %q, %q : tensor<4x!quant.uniform<i8:f32, 0.5:-1>>\n"
        "  %d = stablehlo.uniform_dequantize %s : (tensor<4x!quant.uniform<i8:f32, 0.5:-1>>) -> "
        "tensor<4xf32>\n  return %q, %d : tensor<4x!quant.uniform<i8:f32, 0.5:-1>>, "
        "tensor<4xf32>",
        "%x: tensor<4xf32>",
        "tensor<4xi8>, tensor<4xf32>",
        np.array([0.0, 1.0, 0.25, 100.0], np.float32),
    )
    np.testing.assert_array_equal(out[0], [-1, 1, 0, 127])  # 0.25/0.5 - 1 = -0.5 -> even 0
    np.testing.assert_array_equal(out[1], [0.0, 2.0, 1.0, 64.0])  # the sum saturates at 127


def test_custom_call_and_composite():
    text = (
        "func.func @impl(%a: tensor<i64>) -> tensor<i64> {\n"
        "  %0 = stablehlo.add %a, %a : tensor<i64>\n  return %0 : tensor<i64>\n}\n"
        "func.func @main(%a: tensor<i64>) -> (tensor<i64>, tensor<i64>) {\n"
        '  %0 = stablehlo.composite "x.double" %a {decomposition = @impl} : '
        "(tensor<i64>) -> tensor<i64>\n"
        '  %1 = stablehlo.custom_call @my_target(%a) {backend_config = "k=1"} : '
        "(tensor<i64>) -> tensor<i64>\n  return %0, %1 : tensor<i64>, tensor<i64>\n}\n"
    )
    module = parse_stablehlo(text)
    calls = [
        i for c in module.computations for i in c.instructions if i.opcode is Opcode.CUSTOM_CALL
    ]
    assert calls[0].attrs["custom_call_target"] == "my_target"
    assert calls[0].attrs["backend_config"] == "k=1"
    assert Opcode.CALL in opcodes(module)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (None, None),
        (0, None),
        (1, None),
        (2, "API_VERSION_STATUS_RETURNING"),
        (3, "API_VERSION_STATUS_RETURNING_UNIFIED"),
        (4, "API_VERSION_TYPED_FFI"),
    ],
)
def test_custom_call_keeps_its_api_version(version, expected):
    """A typed-FFI call (jnp.linalg's LAPACK calls) must stay typed in the HLO and its proto."""
    attr = "" if version is None else f" {{api_version = {version} : i32}}"
    text = (
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        f"  %0 = stablehlo.custom_call @lapack_x_ffi(%a){attr} : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  return %0 : tensor<4xf32>\n}\n"
    )
    (call,) = [
        i
        for c in parse_stablehlo(text).computations
        for i in c.instructions
        if i.opcode is Opcode.CUSTOM_CALL
    ]
    assert call.attrs.get("api_version") == expected


def test_custom_call_rejects_an_unknown_api_version():
    text = (
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = stablehlo.custom_call @t(%a) {api_version = 7 : i32} : "
        "(tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"
    )
    with pytest.raises(InvalidArgument, match="api_version must be 0..4, got 7"):
        parse_stablehlo(text)


def test_checks_become_outputs_when_collected():
    text = (
        "func.func @main() {\n  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n"
        "  %b = stablehlo.add %a, %a : tensor<2xi32>\n"
        "  check.expect_eq_const %b, dense<[2, 4]> : tensor<2xi32>\n"
        "  check.expect_eq %b, %a : tensor<2xi32>\n  func.return\n}\n"
    )
    result = import_stablehlo(text, collect_checks=True)
    assert [c.kind for c in result.checks] == ["eq", "eq"]
    outputs = hlort.evaluate(result.module, [])
    first, second = result.checks
    np.testing.assert_array_equal(outputs[first.actual], [2, 4])
    np.testing.assert_array_equal(first.expected_value, [2, 4])
    np.testing.assert_array_equal(outputs[second.expected], [1, 2])
    assert len(import_stablehlo(text).module.entry.root.shape.elements) == 0


def test_bf16_constants_keep_their_type():
    out = run(
        "  %0 = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xbf16>\n"
        "  return %0 : tensor<2xbf16>"
    )
    assert out.dtype == ml_dtypes.bfloat16


@pytest.mark.parametrize(
    "body,args,kind,fragment",
    [
        ("  return %x : tensor<?xf32>", "%x: tensor<?xf32>", Unimplemented, "dynamic shape"),
        (
            "  %0 = stablehlo.fancy_new_op %x : tensor<2xf32>\n  return %0 : tensor<2xf32>",
            "%x: tensor<2xf32>",
            Unimplemented,
            "stablehlo.fancy_new_op",
        ),
        (
            "  %0 = stablehlo.popcnt %x : tensor<2xi2>\n  return %0 : tensor<2xi2>",
            "%x: tensor<2xi2>",
            Unimplemented,
            "sub-byte",
        ),
        (
            "  %0 = stablehlo.add %x, %x : tensor<3xf32>\n  return %0 : tensor<3xf32>",
            "%x: tensor<2xf32>",
            InvalidArgument,
            "declared type",
        ),
        (
            "  %0 = stablehlo.add %x, %nope : tensor<2xf32>\n  return %0 : tensor<2xf32>",
            "%x: tensor<2xf32>",
            InvalidArgument,
            "undefined value %nope",
        ),
        (
            "  %0 = stablehlo.constant dense<1.0> : tensor<2xf8E3M4>\n"
            "  return %0 : tensor<2xf8E3M4>",
            "",
            Unimplemented,
            "f8E3M4",
        ),
    ],
)
def test_unsupported_and_invalid_programs_name_the_feature_and_line(body, args, kind, fragment):
    with pytest.raises(kind) as info:
        parse_stablehlo(f"func.func @main({args}) {{\n{body}\n}}\n", "bad.mlir")
    assert fragment in info.value.message
    assert "bad.mlir:2:" in info.value.message or "bad.mlir:1:" in info.value.message


def test_mutated_programs_only_ever_raise_hlort_errors():
    """Truncations and single-character edits of a real program never escape as Python errors."""
    text = open(__file__.replace("test_convert.py", "samples/argmax_iota_rng.mlir")).read()
    rng = np.random.default_rng(1)
    for _ in range(150):
        cut = int(rng.integers(0, len(text)))
        variants = [
            text[:cut],
            text[:cut] + text[cut + 1 :],
            text[:cut] + "%0" + text[cut:],
            text[:cut] + "]" + text[cut:],
        ]
        for variant in variants:
            try:
                parse_stablehlo(variant, "m.mlir")
            except (ParseError, HlortError):
                pass


def test_batch_norm_ops_follow_the_spec():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 2))
    scale, offset = np.array([1.0, 2.0, 0.5]), np.array([0.0, 1.0, -1.0])
    grad = rng.standard_normal((4, 3, 2))
    t = "tensor<4x3x2xf64>"
    f = "tensor<3xf64>"
    out = run(
        f'  %n:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {{epsilon = 1.0e-3 : f32, '
        f"feature_index = 1 : i64}} : ({t}, {f}, {f}) -> ({t}, {f}, {f})\n"
        f'  %i = "stablehlo.batch_norm_inference"(%x, %s, %o, %n#1, %n#2) {{epsilon = 1.0e-3 : '
        f"f32, feature_index = 1 : i64}} : ({t}, {f}, {f}, {f}, {f}) -> {t}\n"
        f'  %g:3 = "stablehlo.batch_norm_grad"(%x, %s, %n#1, %n#2, %d) {{epsilon = 1.0e-3 : '
        f"f32, feature_index = 1 : i64}} : ({t}, {f}, {f}, {f}, {t}) -> ({t}, {f}, {f})\n"
        f"  return %n#0, %n#1, %n#2, %i, %g#0, %g#1, %g#2 : {t}, {f}, {f}, {t}, {t}, {f}, {f}",
        f"%x: {t}, %s: {f}, %o: {f}, %d: {t}",
        f"{t}, {f}, {f}, {t}, {t}, {f}, {f}",
        x,
        scale,
        offset,
        grad,
    )
    mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    b = (slice(None), None)
    norm = (x - mean[b]) / np.sqrt(var[b] + 1e-3)
    np.testing.assert_allclose(out[1], mean)
    np.testing.assert_allclose(out[2], var)
    np.testing.assert_allclose(out[0], scale[b] * norm + offset[b])
    np.testing.assert_allclose(out[3], out[0])
    n = 8
    g_offset, g_scale = grad.sum(axis=(0, 2)), (grad * norm).sum(axis=(0, 2))
    g_x = (scale / np.sqrt(var + 1e-3))[b] * (grad - (g_offset / n)[b] - norm * (g_scale / n)[b])
    np.testing.assert_allclose(out[4], g_x)
    np.testing.assert_allclose(out[5], g_scale)
    np.testing.assert_allclose(out[6], g_offset)


def test_generic_dot_general_with_dot_attribute():
    a = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    b = np.ones((2, 3, 4), np.float32)
    out = run(
        '  %0 = "stablehlo.dot_general"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<'
        "lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
        "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>, precision_config "
        "= [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]} : "
        "(tensor<2x2x3xf32>, tensor<2x3x4xf32>) -> tensor<2x2x4xf32>\n"
        "  return %0 : tensor<2x2x4xf32>",
        "%a: tensor<2x2x3xf32>, %b: tensor<2x3x4xf32>",
        "tensor<2x2x4xf32>",
        a,
        b,
    )
    np.testing.assert_array_equal(out, np.einsum("bik,bkj->bij", a, b))
