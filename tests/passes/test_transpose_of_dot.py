"""transpose(dot(a, b)) -> dot(b, a): fires only for the swap of the free blocks (batch first),
only when the transpose is the dot's one user; results bit for bit on edge-value inputs (NaN,
infinities, signed zeros), for every element type a dot takes, empty and size-1 dimensions."""

from __future__ import annotations

import pytest

from hlort import shape
from hlort.builder import Builder
from hlort.ir import DotDimensionNumbers as Dn
from hlort.ir.opcodes import Opcode
from hlort.passes import AlgebraicSimplifier, DeadCodeElimination

SIMPLIFY = [AlgebraicSimplifier(), DeadCodeElimination()]

# (lhs dims, rhs dims, dimension numbers, permutation of the dot's result that folds)
FOLDING = [
    ((4, 3), (3, 5), Dn((1,), (0,)), (1, 0)),
    ((3, 4), (3, 5), Dn((0,), (0,)), (1, 0)),  # a weight gradient: x^T dy, then transposed
    ((4, 3), (5, 3), Dn((1,), (1,)), (1, 0)),
    ((2, 4, 3), (2, 3, 5), Dn((2,), (1,), (0,), (0,)), (0, 2, 1)),  # batched
    ((3, 2, 4), (2, 5, 3), Dn((0,), (2,), (1,), (0,)), (0, 2, 1)),  # batch dims not leading
    ((4, 6, 3), (3, 5, 2), Dn((2,), (0,)), (2, 3, 0, 1)),  # two free dims on each side
    ((1, 3), (3, 5), Dn((1,), (0,)), (1, 0)),  # size-1 free dim
    ((4, 1), (1, 5), Dn((1,), (0,)), (1, 0)),  # size-1 contraction
    ((0, 3), (3, 5), Dn((1,), (0,)), (1, 0)),  # empty free dim
    ((4, 0), (0, 5), Dn((1,), (0,)), (1, 0)),  # empty contraction
]


def _module(dtype, lhs_dims, rhs_dims, dn, perm, precision=None, out=None):
    b = Builder("transposed_dot")
    x = b.parameter(shape.array(dtype, lhs_dims))
    y = b.parameter(shape.array(dtype, rhs_dims))
    dot = b.dot_general(x, y, dn, precision=precision, preferred=out)
    return b.build(b.transpose(dot, perm))


@pytest.mark.parametrize("case", FOLDING)
@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16", "c64", "s32", "u8", "pred"])
def test_transpose_of_dot_folds(h, case, dtype):
    module = _module(dtype, *case)
    before = module.clone()
    h.run_passes(module, SIMPLIFY)
    root = module.entry.root
    if root.opcode is Opcode.DOT:
        lhs, rhs = (p.parameter_number for p in root.operands)
        assert (lhs, rhs) == (1, 0)
    else:  # a one-element contraction becomes a product first (algebraic_rules_structural)
        assert module.entry.instructions and h.count(module, Opcode.DOT) == 0
    assert h.count(module, Opcode.TRANSPOSE) == 0 or root.opcode is not Opcode.DOT
    h.check_same_results(before, module, seeds=range(4))
    assert not h.run_passes(module, SIMPLIFY), "a second run changed the module"


def test_precision_and_result_type_follow_the_operands(h):
    module = _module(
        "bf16", (4, 3), (3, 5), Dn((1,), (0,)), (1, 0), precision=["HIGH", "DEFAULT"], out="f32"
    )
    before = module.clone()
    h.run_passes(module, SIMPLIFY)
    root = module.entry.root
    assert root.opcode is Opcode.DOT and root.shape.dtype.name == "f32"
    assert [str(p).lower() for p in root.attrs["operand_precision"]][0].endswith("default")
    h.check_same_results(before, module, seeds=range(4))


@pytest.mark.parametrize(
    "case",
    [
        ((4, 6, 3), (3, 5), Dn((2,), (0,)), (2, 1, 0)),  # reverses a free block
        ((4, 6, 3), (3, 5), Dn((2,), (0,)), (1, 0, 2)),  # permutes inside the lhs block
        ((2, 4, 3), (2, 3, 5), Dn((2,), (1,), (0,), (0,)), (1, 0, 2)),  # moves the batch dim
    ],
)
def test_other_permutations_stay(h, case):
    module = _module("f32", *case)
    h.run_passes(module, SIMPLIFY)
    assert module.entry.root.opcode is Opcode.TRANSPOSE
    assert module.entry.root.operands[0].opcode is Opcode.DOT


def test_dot_with_another_user_stays(h):
    b = Builder("two_users")
    x = b.parameter(shape.array("f32", [4, 3]))
    y = b.parameter(shape.array("f32", [3, 5]))
    dot = b.dot_general(x, y, Dn((1,), (0,)))
    module = b.build(b.tuple([dot, b.transpose(dot, (1, 0))]))
    h.run_passes(module, SIMPLIFY)
    assert h.count(module, Opcode.DOT) == 1 and h.count(module, Opcode.TRANSPOSE) == 1


# -- transposed operands: dot(transpose(x), y) -> dot(x, y) ---------------------------------------
def _operand_module(dtype, x_dims, perm, y_dims, dn, side=0):
    b = Builder("dot_of_transpose")
    x = b.parameter(shape.array(dtype, x_dims))
    y = b.parameter(shape.array(dtype, y_dims))
    t = b.transpose(x, perm)
    return b.build(b.dot_general(t, y, dn) if side == 0 else b.dot_general(y, t, dn))


OPERAND_FOLDING = [  # x dims, permutation, other operand dims, dimension numbers, side
    ((3, 4), (1, 0), (3, 5), Dn((1,), (0,)), 0),  # x^T @ y
    ((5, 3), (1, 0), (4, 3), Dn((1,), (0,)), 1),  # y @ w^T
    ((2, 3, 4), (0, 2, 1), (2, 3, 5), Dn((2,), (1,), (0,), (0,)), 0),  # batched
    ((3, 4, 5), (2, 0, 1), (3, 4, 6), Dn((1, 2), (0, 1)), 0),  # two contracting dims
    ((4, 1), (1, 0), (4, 5), Dn((1,), (0,)), 0),  # size-1 free dim
    ((0, 4), (1, 0), (0, 5), Dn((1,), (0,)), 0),  # empty contraction
    ((4, 0), (1, 0), (4, 5), Dn((1,), (0,)), 0),  # empty free dim
]


@pytest.mark.parametrize("case", OPERAND_FOLDING)
@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16", "c64", "s32", "pred"])
def test_transposed_operand_folds(h, case, dtype):
    module = _operand_module(dtype, *case)
    before = module.clone()
    h.run_passes(module, SIMPLIFY)
    assert h.count(module, Opcode.TRANSPOSE) == 0
    h.check_same_results(before, module, seeds=range(4))
    assert not h.run_passes(module, SIMPLIFY), "a second run changed the module"


@pytest.mark.parametrize(
    "case",
    [
        ((4, 2, 3), (1, 0, 2), (2, 3, 5), Dn((2,), (1,), (0,), (0,)), 0),  # batch not leading
        ((3, 4, 5), (2, 1, 0), (3, 6), Dn((2,), (0,)), 0),  # free dims would reverse
        ((4, 3, 5), (0, 2, 1), (5, 3, 6), Dn((1, 2), (0, 1)), 0),  # contraction out of order
    ],
)
def test_transposed_operands_that_are_no_plain_matrix_stay(h, case):
    module = _operand_module("f32", *case)
    h.run_passes(module, SIMPLIFY)
    assert h.count(module, Opcode.TRANSPOSE) == 1
