"""parameter, constant, iota, replica-id and partition-id: shape rules and interpreter values."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import Builder, dtypes, evaluate, shape
from hlort.errors import ErrorCode, HlortError
from hlort.interpreter.evaluator import Evaluator
from hlort.ir import Opcode, infer_shape

A = shape.array
NON_PRED = [d for d in dtypes.ALL_DTYPES if not d.is_pred]


def invalid(opcode, operands, attrs, declared, *fragments):
    with pytest.raises(HlortError) as err:
        infer_shape(opcode, operands, attrs, declared)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    for fragment in fragments:
        assert fragment in err.value.message, err.value.message


# -- iota ------------------------------------------------------------------------------------------
def test_iota_shape_rule():
    out = infer_shape(Opcode.IOTA, [], {"iota_dimension": 1}, A("f32", [2, 3]))
    assert out == A("f32", [2, 3])
    assert infer_shape(Opcode.IOTA, [], {"iota_dimension": 0}, A("s32", [0])) == A("s32", [0])
    invalid(Opcode.IOTA, [], {"iota_dimension": 2}, A("s32", [2, 3]), "iota_dimension=2", "rank 2")
    invalid(Opcode.IOTA, [], {"iota_dimension": -1}, A("s32", [2]), "iota_dimension=-1")
    invalid(Opcode.IOTA, [], {"iota_dimension": 0}, A("s32", []), "rank >= 1")
    invalid(Opcode.IOTA, [], {"iota_dimension": 0}, A("pred", [2]), "pred")
    invalid(Opcode.IOTA, [], {"iota_dimension": 0}, None, "result shape must be given")
    invalid(Opcode.IOTA, [], {}, A("s32", [2]), "iota_dimension")


@pytest.mark.parametrize("dt", NON_PRED, ids=str)
def test_iota_every_type(dt):
    b = Builder("iota")
    module = b.build(b.iota(A(dt, [2, 3]), 1))
    got = evaluate(module)
    want = np.broadcast_to(np.arange(3), (2, 3)).astype(dt.numpy)
    assert got.dtype == dt.numpy and got.shape == (2, 3)
    np.testing.assert_array_equal(got.astype(np.complex128), want.astype(np.complex128))


def test_iota_along_each_dimension_and_empty():
    b = Builder("iota")
    module = b.build(
        b.tuple([b.iota(A("s32", [2, 3, 2]), d) for d in range(3)] + [b.iota(A("f32", [0, 4]), 1)])
    )
    *got, empty = evaluate(module)
    for d, g in enumerate(got):
        np.testing.assert_array_equal(g, np.indices((2, 3, 2))[d].astype(np.int32))
    assert empty.shape == (0, 4) and empty.dtype == np.float32


# -- constant --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", dtypes.ALL_DTYPES, ids=str)
def test_constant_every_type_scalar_and_empty(dt):
    b = Builder("c")
    values = np.array([[0, 1, 1]]).astype(dt.numpy)
    module = b.build(
        b.tuple([b.constant(values), b.constant(values[0, 1]), b.constant(values[:0])])
    )
    full, scalar, empty = evaluate(module)
    assert full.dtype == dt.numpy and full.shape == (1, 3)
    np.testing.assert_array_equal(full.view(np.uint8), values.view(np.uint8))
    assert scalar.shape == () and empty.shape == (0, 3)


def test_builder_constant_types():
    """Python numbers default to f32 / s32; NumPy scalars keep their type (regression: an
    np.int64 scalar became s32 and wrapped, an np.float64 one was rounded to f32)."""
    b = Builder("c")
    assert b.constant(2.5).shape == shape.scalar("f32")
    assert b.constant([1, 2]).shape == A("s32", [2])
    big = b.constant(np.int64(2**40))
    assert big.shape == shape.scalar("s64") and big.literal == 2**40
    assert b.constant(np.float64(0.1)).shape == shape.scalar("f64")
    assert b.constant(np.uint8(7)).shape == shape.scalar("u8")
    assert b.constant(1, dtype="u16").shape == shape.scalar("u16")


def test_constant_keeps_nan_inf_and_negative_zero_bits():
    values = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0], np.float32)
    b = Builder("c")
    got = evaluate(b.build(b.constant(values)))
    np.testing.assert_array_equal(got.view(np.uint32), values.view(np.uint32))


def test_constant_shape_rule():
    literal = np.zeros((2,), np.float32)
    out = infer_shape(Opcode.CONSTANT, [], {"literal": literal}, A("f32", [2]))
    assert out == A("f32", [2])
    invalid(Opcode.CONSTANT, [], {"literal": literal}, A("f32", [3]), "does not match", "f32[3]")
    invalid(Opcode.CONSTANT, [], {"literal": literal}, A("s32", [2]), "does not match")
    invalid(Opcode.CONSTANT, [], {}, None, "result shape must be given")


# -- parameter, replica-id, partition-id -----------------------------------------------------------
def test_parameter_needs_its_shape_and_takes_no_operands():
    assert infer_shape(Opcode.PARAMETER, [], {}, shape.TOKEN) == shape.TOKEN
    invalid(Opcode.PARAMETER, [], {}, None, "result shape must be given")
    invalid(Opcode.PARAMETER, [A("f32", [])], {}, A("f32", []), "takes 0 operand")


@pytest.mark.parametrize("opcode", [Opcode.REPLICA_ID, Opcode.PARTITION_ID])
def test_device_ids(opcode):
    assert infer_shape(opcode, [], {}) == shape.scalar("u32")
    invalid(opcode, [], {}, shape.scalar("s32"), "declared shape s32[]", "u32[]")
    b = Builder("ids")
    module = b.build(b.op(opcode))
    got = evaluate(module)
    assert got.shape == () and got.dtype == np.uint32 and got == 0
    ev = Evaluator(replica_id=3, partition_id=5)
    assert ev.run(module, []) == (3 if opcode is Opcode.REPLICA_ID else 5)
