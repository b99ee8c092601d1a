"""scatter's shape rule: dimension numbers, batching dims, the update computation's signature."""

from __future__ import annotations

import pytest
from scatter_helpers import (
    BATCH_DN,
    SPEC_DN,
    A,
    S,
    binary,
    invalid,
    overwrite,
    spec_dn,
)

from hlort import Builder, shape
from hlort.ir import Opcode, infer_shape


# -- shape rule ------------------------------------------------------------------------------------
def test_shape_rule_accepts_spec_examples_and_variadic():
    b = Builder("m")
    add = binary(b, Opcode.ADD, "s64")
    attrs = {"scatter_dimension_numbers": SPEC_DN, "to_apply": add}
    ops = [A("s64", [3, 4, 2]), A("s32", [2, 3, 2]), A("s64", [2, 3, 2, 2])]
    assert infer_shape(Opcode.SCATTER, ops, attrs) == A("s64", [3, 4, 2])
    attrs = {"scatter_dimension_numbers": BATCH_DN, "to_apply": add}
    ops = [A("s64", [2, 3, 4, 2]), A("u16", [2, 2, 3, 2]), A("s64", [2, 2, 3, 2, 2])]
    assert infer_shape(Opcode.SCATTER, ops, attrs) == A("s64", [2, 3, 4, 2])
    pair = overwrite(b, "f32", "s8")
    attrs = {"scatter_dimension_numbers": SPEC_DN, "to_apply": pair}
    ops = [
        A("f32", [3, 4, 2]),
        A("s8", [3, 4, 2]),
        A("s32", [2, 3, 2]),
        A("f32", [2, 3, 2, 2]),
        A("s8", [2, 3, 2, 2]),
    ]
    assert infer_shape(Opcode.SCATTER, ops, attrs) == shape.tuple_of(
        A("f32", [3, 4, 2]), A("s8", [3, 4, 2])
    )


OPS = [A("f32", [3, 4, 2]), A("s32", [2, 3, 2]), A("f32", [2, 3, 2, 2])]


@pytest.mark.parametrize(
    "dn, operands, fragments",
    [
        (spec_dn(), OPS[:2], ["2N+1"]),
        (spec_dn(), [OPS[0], OPS[1], A("f16", [2, 3, 2, 2])], ["element type", "f16[2,3,2,2]"]),
        (spec_dn(), [OPS[0], A("f32", [2, 3, 2]), OPS[2]], ["integer", "f32[2,3,2]"]),
        (spec_dn(update_window_dims=(3, 2)), OPS, ["update_window_dims=[3, 2]", "ascending"]),
        (spec_dn(update_window_dims=(2, 4)), OPS, ["update_window_dims", "out of range"]),
        (spec_dn(update_window_dims=(2,)), OPS, ["must together have"]),
        (spec_dn(inserted_window_dims=(3,)), OPS, ["inserted_window_dims", "out of range"]),
        (
            spec_dn(scatter_dims_to_operand_dims=(1,)),
            OPS,
            ["scatter_dims_to_operand_dims=[1]", "2 entries"],
        ),
        (spec_dn(scatter_dims_to_operand_dims=(1, 1)), OPS, ["repeats"]),
        (spec_dn(index_vector_dim=5), OPS, ["index_vector_dim=5", "s32[2,3,2]"]),
        (spec_dn(), [OPS[0], OPS[1], A("f32", [2, 3, 2])], ["updates f32[2,3,2]"]),
        (
            spec_dn(update_window_dims=(2,), inserted_window_dims=(0, 1)),
            [OPS[0], OPS[1], A("f32", [2, 3, 2, 1])],
            ["rank 3"],
        ),
        (spec_dn(), [OPS[0], OPS[1], A("f32", [3, 3, 2, 2])], ["dimension 0 must have size 2"]),
        (spec_dn(), [OPS[0], OPS[1], A("f32", [2, 3, 5, 2])], ["larger than dimension 1"]),
        (
            spec_dn(
                inserted_window_dims=(),
                input_batching_dims=(0,),
                scatter_dims_to_operand_dims=(1, 2),
                scatter_indices_batching_dims=(0,),
            ),
            OPS,
            ["same size", "(size 3)"],
        ),
        (
            spec_dn(
                inserted_window_dims=(0,),
                input_batching_dims=(0,),
                scatter_indices_batching_dims=(0,),
            ),
            OPS,
            ["disjoint"],
        ),
        (
            spec_dn(
                inserted_window_dims=(),
                input_batching_dims=(0,),
                scatter_indices_batching_dims=(1,),
            ),
            OPS,
            ["must not contain"],
        ),
        (
            spec_dn(
                inserted_window_dims=(),
                input_batching_dims=(0,),
                scatter_dims_to_operand_dims=(1, 2),
                scatter_indices_batching_dims=(2,),
            ),
            OPS,
            ["index_vector_dim"],
        ),
    ],
)
def test_shape_rule_rejects(dn, operands, fragments):
    b = Builder("m")
    invalid(operands, dn, overwrite(b, "f32"), *fragments)


def test_shape_rule_checks_update_computation():
    b = Builder("m")
    ops = [A("f32", [3, 4, 2]), A("s32", [2, 3, 2]), A("f32", [2, 3, 2, 2])]
    invalid(ops, SPEC_DN, binary(b, Opcode.ADD, "f16"), "to_apply", "(f32[], f32[])")
    invalid(ops, SPEC_DN, overwrite(b, "f32", "f32"), "to_apply", "takes (f32[], f32[], f32[]")
    sub = b.sub("to_pred")
    x, y = sub.parameter(S("f32")), sub.parameter(S("f32"))
    cmp = b._comp(sub.finish(sub.compare(x, y, "LT")))
    invalid(ops, SPEC_DN, cmp, "returns pred[]", "must return f32[]")
    sub = b.sub("vec")
    sub.parameter(S("f32"))
    v = sub.parameter(A("f32", [1]))
    invalid(ops, SPEC_DN, b._comp(sub.finish(v)), "to_apply")
    two = [
        A("f32", [3, 4, 2]),
        A("s8", [3, 4, 2]),
        A("s32", [2, 3, 2]),
        A("f32", [2, 3, 2, 2]),
        A("s8", [2, 3, 2, 2]),
    ]
    sub = b.sub("bad_tuple")
    ps = [sub.parameter(S(d)) for d in ("f32", "s8", "f32", "s8")]
    swapped = b._comp(sub.finish(sub.tuple([ps[3], ps[2]])))
    invalid(two, SPEC_DN, swapped, "returns (s8[], f32[])", "(f32[], s8[])")
    invalid([two[0], A("s8", [3, 4, 1]), *two[2:]], SPEC_DN, overwrite(b, "f32", "s8"), "operand 1")
