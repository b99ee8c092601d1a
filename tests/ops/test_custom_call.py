"""custom-call: the target registry (register, look up, replace, unregister), the UNIMPLEMENTED
error for unknown targets, shape checks through a target's shape_fn, and the targets hlort ships
(SPMD annotations, placement hints, AllocateBuffer, JAX's GPU Threefry, StableHLO's checks)."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from hlort import Builder, evaluate, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Opcode, infer_shape, verify_module
from hlort.ir.custom_calls import (
    lookup_custom_call,
    register_custom_call,
    registered_custom_calls,
    unregister_custom_call,
)
from hlort.shape import TupleShape, scalar
from hlort.testdata.check_targets import ExpectationFailed
from hlort.testdata.comparisons import ulp_difference


def call(target, args, result, **attrs):
    """Build ``custom-call(target)`` over parameters shaped like ``args`` and evaluate it."""
    b = Builder("cc")
    params = [b.parameter(shape.of_value(np.asarray(a))) for a in args]
    root = b.op(Opcode.CUSTOM_CALL, params, result, custom_call_target=target, **attrs)
    module = b.build(root)
    verify_module(module)
    return evaluate(module, [np.asarray(a) for a in args])


def rule(target, operands, declared=None, **attrs):
    return infer_shape(
        Opcode.CUSTOM_CALL, operands, {"custom_call_target": target, **attrs}, declared
    )


@pytest.fixture
def scaled():
    """A user target ``test.scale``: one float operand times backend_config, same shape."""

    def shape_fn(q):
        if len(q.operands) != 1:
            q.fail(f"test.scale takes 1 operand, got {len(q.operands)}")
        x = q.array(0)
        if not x.dtype.is_float:
            q.fail(f"test.scale needs a float operand, got {x}")
        return x

    def evaluate_fn(ev, instr, x):
        return (x * float(instr.attrs.get("backend_config", "1"))).astype(x.dtype)

    register_custom_call("test.scale", shape_fn=shape_fn, evaluate_fn=evaluate_fn)
    yield
    unregister_custom_call("test.scale")


# -- unknown targets -------------------------------------------------------------------------------
def test_unknown_target_builds_but_does_not_evaluate():
    f32 = shape.array("f32", [3])
    assert rule("vendor_kernel_v2", [f32], f32) == f32
    with pytest.raises(HlortError) as err:
        call("vendor_kernel_v2", [np.zeros(3, np.float32)], f32)
    assert err.value.code is ErrorCode.UNIMPLEMENTED
    text = str(err.value)
    assert "'vendor_kernel_v2'" in text and "register_custom_call('vendor_kernel_v2'" in text


def test_unknown_target_needs_a_declared_shape():
    with pytest.raises(HlortError, match="result shape must be given") as err:
        rule("vendor_kernel_v2", [shape.array("f32", [3])])
    assert err.value.code is ErrorCode.INVALID_ARGUMENT


# -- the registry ----------------------------------------------------------------------------------
def test_registered_target_checks_and_evaluates(scaled):
    x = np.array([1.0, -2.0, 0.5], np.float32)
    out = call("test.scale", [x], shape.array("f32", [3]), backend_config="4")
    assert out.tolist() == [4.0, -8.0, 2.0]
    assert "test.scale" in registered_custom_calls()
    assert lookup_custom_call("test.scale").shape_fn is not None


def test_registered_shape_fn_rejects_at_build_time(scaled):
    with pytest.raises(HlortError, match="test.scale needs a float operand, got s32") as err:
        rule("test.scale", [shape.array("s32", [3])], shape.array("s32", [3]))
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    with pytest.raises(HlortError, match="does not match the inferred shape f32"):
        rule("test.scale", [shape.array("f32", [3])], shape.array("f32", [4]))


def test_duplicate_replace_and_unregister(scaled):
    with pytest.raises(HlortError, match="already registered") as err:
        register_custom_call("test.scale", evaluate_fn=lambda ev, instr, x: x)
    assert err.value.code is ErrorCode.ALREADY_EXISTS
    register_custom_call("test.scale", evaluate_fn=lambda ev, instr, x: -x, replace=True)
    out = call("test.scale", [np.ones(2, np.float32)], shape.array("f32", [2]))
    assert out.tolist() == [-1, -1]
    with pytest.raises(HlortError) as err:
        unregister_custom_call("never.registered")
    assert err.value.code is ErrorCode.NOT_FOUND


def test_target_without_evaluate_fn_is_unimplemented():
    register_custom_call("test.shape_only", shape_fn=lambda q: q.operands[0])
    try:
        assert rule("test.shape_only", [shape.array("u8", [2])]) == shape.array("u8", [2])
        with pytest.raises(HlortError, match="without an evaluate_fn") as err:
            call("test.shape_only", [np.zeros(2, np.uint8)], None)
        assert err.value.code is ErrorCode.UNIMPLEMENTED
    finally:
        unregister_custom_call("test.shape_only")


def test_failing_target_is_reported_with_its_name():
    def boom(ev, instr, x):
        raise ZeroDivisionError("no")

    register_custom_call("test.boom", evaluate_fn=boom)
    try:
        with pytest.raises(HlortError, match="'test.boom' raised ZeroDivisionError: no"):
            call("test.boom", [np.zeros(2, np.float32)], shape.array("f32", [2]))
    finally:
        unregister_custom_call("test.boom")


@pytest.mark.parametrize("bad", [{"custom_call_target": ""}, {"custom_call_target": 3}])
def test_target_must_be_a_name(bad):
    with pytest.raises(HlortError, match="custom_call_target must be a non-empty string"):
        infer_shape(Opcode.CUSTOM_CALL, [], bad, shape.array("f32", []))


@pytest.mark.parametrize(
    "attrs, fragment",
    [
        ({"backend_config": 3}, "backend_config must be a string"),
        ({"api_version": "API_VERSION_BOGUS"}, "api_version must be one of"),
        ({"has_side_effect": "yes"}, "has_side_effect must be a bool"),
        ({"called_computations": ("f",)}, "called_computations must be a sequence"),
    ],
)
def test_attributes_are_checked(attrs, fragment):
    with pytest.raises(HlortError, match=fragment):
        rule("anything", [], shape.array("f32", []), **attrs)


def test_known_api_versions_are_accepted():
    for version in ("API_VERSION_ORIGINAL", "API_VERSION_TYPED_FFI", 2):
        rule("anything", [], shape.array("f32", []), api_version=version)


# -- shipped targets -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "target", ["Sharding", "annotate_device_placement", "MoveToHost", "MoveToDevice"]
)
def test_annotations_are_identities(target):
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    assert np.array_equal(call(target, [x], None), x)
    with pytest.raises(HlortError, match=f"target '{target}' takes 1 operand"):
        rule(target, [shape.array("s16", [2]), shape.array("s16", [2])])


def test_spmd_shape_annotations():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    for target in ("SPMDFullToShardShape", "SPMDShardToFullShape"):
        assert np.array_equal(call(target, [x], shape.array("f32", [2, 4])), x)
    shard = shape.array("f32", [2, 2])
    assert rule("SPMDFullToShardShape", [shape.array("f32", [2, 4])], shard) == shard
    with pytest.raises(HlortError, match="each dimension >= the operand's"):
        rule("SPMDShardToFullShape", [shape.array("f32", [2, 4])], shard)
    with pytest.raises(HlortError, match="each dimension <= the operand's"):
        rule("SPMDFullToShardShape", [shape.array("f32", [2, 4])], shape.array("f32", [2, 8]))
    with pytest.raises(HlortError, match="needs a partitioned backend") as err:
        call("SPMDFullToShardShape", [x], shard)
    assert err.value.code is ErrorCode.UNIMPLEMENTED


def test_allocate_buffer():
    out = call("AllocateBuffer", [], shape.array("bf16", [2, 3]))
    assert out.dtype == ml_dtypes.bfloat16 and out.shape == (2, 3) and not out.any()


@pytest.mark.parametrize("target", ["cu_threefry2x32", "cu_threefry2x32_ffi", "hip_threefry2x32"])
def test_jax_gpu_threefry(target):
    u32 = np.uint32
    keys0 = np.array([0, 0xFFFFFFFF, 0x13198A2E], u32)
    keys1 = np.array([0, 0xFFFFFFFF, 0x03707344], u32)
    count0 = np.array([0, 0xFFFFFFFF, 0x243F6A88], u32)
    count1 = np.array([0, 0xFFFFFFFF, 0x85A308D3], u32)
    s = shape.array("u32", [3])
    out0, out1 = call(target, [keys0, keys1, count0, count1], TupleShape((s, s)))
    assert out0.tolist() == [0x6B200159, 0x1CB996FC, 0xC4923A9C]
    assert out1.tolist() == [0x99BA4EFE, 0xBB002BE7, 0x483DF7A0]
    with pytest.raises(HlortError, match="one u32 shape"):
        rule(target, [s, s, s, shape.array("u32", [4])])


# -- StableHLO's check targets ---------------------------------------------------------------------
def expect(target, actual, expected):
    return call(target, [np.asarray(actual), np.asarray(expected)], None, has_side_effect=True)


def test_expect_eq():
    assert expect("check.expect_eq", [1, 2, 3], [1, 2, 3]) == ()
    assert expect("check.expect_eq", np.array([np.nan, 1.0]), np.array([np.nan, 1.0])) == ()
    with pytest.raises(ExpectationFailed, match=r"1 of 3 element\(s\).*at \[2\]: actual 4") as err:
        expect("check.expect_eq", np.int32([1, 2, 4]), np.int32([1, 2, 3]))
    assert err.value.code is ErrorCode.FAILED_PRECONDITION


def test_expect_almost_eq_tolerance_and_signs():
    f = np.float32
    expect("check.expect_almost_eq", f([1.0, 0.0, np.inf]), f([1.0009, 0.0, np.inf]))
    expect("check.expect_almost_eq", np.complex64([1 + 1j]), np.complex64([1.0005 + 0.9995j]))
    for actual, expected in [(1.0, 1.002), (1e-4, -1e-4), (np.inf, 1e30), (np.nan, 0.0)]:
        with pytest.raises(ExpectationFailed, match="by more than 0.001"):
            expect("check.expect_almost_eq", f([actual]), f([expected]))


def test_expect_close_counts_ulps():
    one = np.float32(1.0)
    three_up = np.nextafter(np.nextafter(np.nextafter(one, 2), 2), 2)
    expect("check.expect_close", np.float32([three_up]), np.float32([one]))
    with pytest.raises(ExpectationFailed, match="3 ULP"):
        expect("check.expect_close", np.float32([np.nextafter(three_up, 2)]), np.float32([one]))
    bf = ml_dtypes.bfloat16
    expect("check.expect_close", np.array([1.0, -0.0], bf), np.array([1.0078125, 0.0], bf))


def test_ulp_difference():
    f = np.float32
    tiny = np.nextafter(f(0), f(1))
    got = ulp_difference(
        f([1.0, 0.0, -tiny, np.nan, np.inf, np.inf]), f([1.0, -0.0, tiny, np.nan, 3.0, np.inf])
    )
    assert got.tolist() == [0, 0, 2, 0, 2**64 - 1, 0]
    assert ulp_difference(np.complex64([1 + 1j]), np.complex64([1 + 1j])).tolist() == [0]


def test_check_eq_returns_pred():
    b = call("check.eq", [np.float32([1, 2]), np.float32([1, 2.00001])], scalar("pred"))
    assert b.dtype == np.bool_ and b.shape == () and bool(b)
    assert not bool(call("check.eq", [np.int8([1, 2]), np.int8([1, 3])], scalar("pred")))


def test_check_shapes_must_match():
    with pytest.raises(HlortError, match="compares two values of one shape"):
        rule("check.expect_eq", [shape.array("f32", [2]), shape.array("f32", [3])])
    assert rule("check.expect_close", [shape.array("f32", [2])] * 2) == TupleShape(())


def test_side_effecting_expectation_runs_even_when_unused():
    b = Builder("unused")
    x = b.parameter(shape.array("s32", [2]))
    y = b.parameter(shape.array("s32", [2]))
    b.custom_call("check.expect_eq", [x, y], TupleShape(()), has_side_effect=True)
    module = b.build(x)
    assert evaluate(module, [np.int32([1, 2]), np.int32([1, 2])]).tolist() == [1, 2]
    with pytest.raises(ExpectationFailed):
        evaluate(module, [np.int32([1, 2]), np.int32([1, 5])])


def test_registration_is_explicit_by_the_layer_that_owns_the_targets():
    """``import hlort`` registers the shipped targets (through hlort.interpreter); the check.*
    targets belong to the testdata runner and are registered by importing hlort.testdata."""
    probe = (
        "import hlort, sys\n"
        "from hlort.ir.custom_calls import lookup_custom_call, evaluator_for\n"
        "assert lookup_custom_call('Sharding') is not None\n"
        "assert lookup_custom_call('lapack_spotrf_ffi') is not None\n"
        "assert 'hlort.testdata' not in sys.modules\n"
        "assert lookup_custom_call('check.expect_eq') is None\n"
        "try:\n"
        "    evaluator_for('check.expect_eq')\n"
        "except hlort.HlortError as err:\n"
        "    print(err.code.name, err)\n"
        "import hlort.testdata\n"
        "assert lookup_custom_call('check.expect_eq') is not None\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("UNIMPLEMENTED") and "import hlort.testdata" in run.stdout


# -- JAX's dce_sink -------------------------------------------------------------------------------
DCE_SINK = """
module @jit_f {
  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<2xf32>
    %0 = stablehlo.add %arg0, %cst : tensor<2xf32>
    stablehlo.custom_call @dce_sink(%0) {backend_config = "", has_side_effect = true, """ + (
    """operand_layouts = [dense<0> : tensor<1xindex>], result_layouts = []} : (tensor<2xf32>) -> ()
    %1 = stablehlo.multiply %arg0, %arg0 : tensor<2xf32>
    return %1 : tensor<2xf32>
  }
}
"""
)


@pytest.mark.parametrize("platform", ["interpreter", "cpu", "tpusim"])
def test_jax_dce_sink_runs_as_a_no_op(platform, monkeypatch):
    # what jax.lax.dce_sink(x + 1, prevent_mlir_dce=True) lowers to: no results, kept, no effect
    import hlort

    monkeypatch.setenv("HLORT_FALLBACK", "error")
    out = hlort.compile(DCE_SINK, platform)(np.array([2.0, -3.0], np.float32))
    np.testing.assert_array_equal(np.asarray(out), [4.0, 9.0])


def test_dce_sink_declares_no_results():
    assert rule("dce_sink", [scalar("f32")]) == TupleShape(())
    with pytest.raises(HlortError, match="no results"):
        rule("dce_sink", [scalar("f32")], scalar("f32"))
