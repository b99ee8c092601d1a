"""Algebraic rules that remove structure: trivial reductions, trivial dots, short while loops.

Each is exact for the interpreter's definition of the op it removes:
- ``reduce`` over no elements is its init value; over exactly one element it is
  ``reducer(init, x)`` (for the ufunc reducers add, multiply, and, or, xor, and integer max/min,
  in types the reduction computes in directly).
- ``dot`` whose contraction has one element is a product of broadcasts; a float dot sums from
  ``+0.0``, so the product is added to ``+0.0`` (turning ``-0.0`` into ``+0.0`` as the dot does).
- ``transpose(dot(a, b))`` that puts the rhs's free dimensions before the lhs's is ``dot(b, a)``
  (XLA's transpose folding: (A B)^T = B^T A^T). JAX writes every weight gradient this way; the
  transpose would be a strided pass over the product. The same products are summed in the same
  contraction order (only the factors of each product swap, which IEEE multiplication allows).
- ``dot(transpose(x), y)`` (either operand) is a dot of ``x`` with the dimension numbers mapped
  through the permutation (XLA's transpose folding into dot operands), when ``x`` then reads as a
  plain [batch, rows, cols] matrix: batch dimensions leading in order, free and contracting
  dimensions each consecutive and in order (so a BLAS backend takes it as a view, row-major or
  transposed). Same products, same order: contracting dimensions pair up by position.
- ``while`` whose induction variable starts from a constant and is compared with a constant runs a
  provable number of times; zero trips is the initial state, one trip is the body inlined.
"""

from __future__ import annotations

import math

import numpy as np

from hlort.ir.attributes import ComparisonDirection, DotDimensionNumbers
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import binary_reducer_opcode
from hlort.passes.call_inlining import inline_computation
from hlort.passes.rewriter import Rewriter, splat
from hlort.shape import ArrayShape

_ALWAYS_EXACT_REDUCERS = frozenset({Opcode.ADD, Opcode.MULTIPLY, Opcode.AND, Opcode.OR, Opcode.XOR})
_INTEGER_EXACT_REDUCERS = frozenset({Opcode.MAXIMUM, Opcode.MINIMUM})
_DIRECT_FLOATS = frozenset({"f32", "f64", "c64", "c128"})  # reduced without widening


# -- reduce ---------------------------------------------------------------------------------------
def _reduce(instr: Instruction, rw: Rewriter) -> Instruction | None:
    n = len(instr.operands) // 2
    arrays, inits = instr.operands[:n], instr.operands[n:]
    dims = instr.attrs["dimensions"]
    reduced = math.prod(arrays[0].shape.dims[d] for d in dims)
    if reduced == 0:
        outs = [rw.broadcast_scalar(i, _result_leaf(instr, k)) for k, i in enumerate(inits)]
        return outs[0] if n == 1 else rw.make(Opcode.TUPLE, outs)
    if reduced != 1 or n != 1:
        return None
    x, init = arrays[0], inits[0]
    dt = x.shape.dtype
    op = binary_reducer_opcode(instr.to_apply)
    exact = op in _ALWAYS_EXACT_REDUCERS or (
        op in _INTEGER_EXACT_REDUCERS and not dt.is_floating_or_complex
    )
    if not exact or (dt.is_floating_or_complex and dt.name not in _DIRECT_FLOATS):
        return None
    shape = instr.shape
    values = x if x.shape.dims == shape.dims else rw.make(Opcode.RESHAPE, [x], shape)
    return rw.make(op, [rw.broadcast_scalar(init, shape), values])


def _result_leaf(instr: Instruction, k: int) -> ArrayShape:
    shape = instr.shape
    return shape.elements[k] if shape.is_tuple else shape


# -- dot ------------------------------------------------------------------------------------------
def _dot(instr: Instruction, rw: Rewriter) -> Instruction | None:
    """A dot contracting one element is ``lhs * rhs`` over broadcasts (plus +0.0 for floats)."""
    lhs, rhs = instr.operands
    dn = instr.attrs["dot_dimension_numbers"]
    dt = instr.shape.dtype
    if not (lhs.shape.dtype == rhs.shape.dtype == dt) or not (dt.is_float or dt.is_integer):
        return None
    if math.prod(lhs.shape.dims[d] for d in dn.lhs_contracting_dims) != 1:
        return None
    shape = instr.shape
    nb = len(dn.lhs_batch_dims)
    lhs_free = _free_dims(lhs, dn.lhs_batch_dims, dn.lhs_contracting_dims)
    rhs_free = _free_dims(rhs, dn.rhs_batch_dims, dn.rhs_contracting_dims)
    left = _spread(
        rw,
        lhs,
        dn.lhs_batch_dims,
        lhs_free,
        dn.lhs_contracting_dims,
        shape,
        list(range(nb + len(lhs_free))),
    )
    right_dims = list(range(nb)) + list(range(nb + len(lhs_free), shape.rank))
    right = _spread(
        rw, rhs, dn.rhs_batch_dims, rhs_free, dn.rhs_contracting_dims, shape, right_dims
    )
    product = rw.make(Opcode.MULTIPLY, [left, right])
    if not dt.is_float:
        return product
    zero = rw.constant(np.zeros((), dt.numpy))
    return rw.make(Opcode.ADD, [product, rw.broadcast_scalar(zero, shape)])


def _free_dims(x: Instruction, batch, contracting) -> list[int]:
    return [d for d in range(x.shape.rank) if d not in batch and d not in contracting]


def _spread(
    rw: Rewriter,
    x: Instruction,
    batch,
    free,
    contracting,
    shape: ArrayShape,
    result_dims: list[int],
) -> Instruction:
    """``x`` with its (size-1) contracting dims dropped, broadcast into the dot's result."""
    perm = [*batch, *free, *contracting]
    if perm != list(range(len(perm))):
        x = rw.make(Opcode.TRANSPOSE, [x], dimensions=tuple(perm))
    kept = tuple(x.shape.dims[: len(batch) + len(free)])
    if kept != x.shape.dims:
        x = rw.make(Opcode.RESHAPE, [x], x.shape.with_dims(kept))
    return rw.make(
        Opcode.BROADCAST, [x], shape.with_dtype(x.shape.dtype), dimensions=tuple(result_dims)
    )


def _dot_of_transpose(instr: Instruction, rw: Rewriter) -> Instruction | None:
    """dot(transpose(x), y) -> dot(x, y) (and for the rhs) where x reads as a plain matrix."""
    dn = instr.attrs["dot_dimension_numbers"]
    operands = list(instr.operands)
    dims = {
        0: (list(dn.lhs_batch_dims), list(dn.lhs_contracting_dims)),
        1: (list(dn.rhs_batch_dims), list(dn.rhs_contracting_dims)),
    }
    changed = False
    for side in (0, 1):
        t = operands[side]
        if t.opcode is not Opcode.TRANSPOSE:
            continue
        perm = tuple(t.attrs["dimensions"])
        batch, contracting = dims[side]
        new_batch = [perm[d] for d in batch]
        new_contracting = [perm[d] for d in contracting]
        free = [perm[d] for d in _free_dims(t, batch, contracting)]
        if not _plain_matrix(new_batch, free, new_contracting):
            continue
        operands[side] = t.operands[0]
        dims[side] = (new_batch, new_contracting)
        changed = True
    if not changed:
        return None
    attrs = dict(instr.attrs)
    attrs["dot_dimension_numbers"] = DotDimensionNumbers(
        lhs_contracting_dims=tuple(dims[0][1]),
        rhs_contracting_dims=tuple(dims[1][1]),
        lhs_batch_dims=tuple(dims[0][0]),
        rhs_batch_dims=tuple(dims[1][0]),
    )
    return rw.make(Opcode.DOT, operands, instr.shape, **attrs)


def _plain_matrix(batch: list[int], free: list[int], contracting: list[int]) -> bool:
    """Batch dims are 0..nb-1 in order; free dims keep their order (the result's order) and are
    consecutive; contracting dims are consecutive and in order."""

    def run(ds: list[int]) -> bool:
        return all(b == a + 1 for a, b in zip(ds, ds[1:], strict=False))

    return batch == list(range(len(batch))) and run(free) and run(contracting)


def _transpose_of_dot(instr: Instruction, rw: Rewriter) -> Instruction | None:
    """transpose(dot(a, b)) -> dot(b, a) when the permutation keeps the batch dimensions first
    and swaps the lhs-free block with the rhs-free block (each in its order); only when the
    transpose is the dot's one user, so no product is computed twice."""
    dot = instr.operands[0]
    if dot.opcode is not Opcode.DOT or rw.graph.user_count(dot) != 1 or rw.graph.is_root(dot):
        return None
    lhs, rhs = dot.operands
    dn = dot.attrs["dot_dimension_numbers"]
    nb = len(dn.lhs_batch_dims)
    n_lhs = len(_free_dims(lhs, dn.lhs_batch_dims, dn.lhs_contracting_dims))
    rank = dot.shape.rank
    swapped = (*range(nb), *range(nb + n_lhs, rank), *range(nb, nb + n_lhs))
    if tuple(instr.attrs["dimensions"]) != swapped or swapped == tuple(range(rank)):
        return None
    attrs = dict(dot.attrs)
    attrs["dot_dimension_numbers"] = DotDimensionNumbers(
        lhs_contracting_dims=dn.rhs_contracting_dims,
        rhs_contracting_dims=dn.lhs_contracting_dims,
        lhs_batch_dims=dn.rhs_batch_dims,
        rhs_batch_dims=dn.lhs_batch_dims,
    )
    precision = attrs.get("operand_precision")
    if precision:
        attrs["operand_precision"] = tuple(reversed(tuple(precision)))
    return rw.make(Opcode.DOT, [rhs, lhs], instr.shape, **attrs)


# -- while ----------------------------------------------------------------------------------------
_COMPARE = {
    ComparisonDirection.EQ: np.equal,
    ComparisonDirection.NE: np.not_equal,
    ComparisonDirection.LT: np.less,
    ComparisonDirection.LE: np.less_equal,
    ComparisonDirection.GT: np.greater,
    ComparisonDirection.GE: np.greater_equal,
}


def _is_state_element(instr: Instruction, comp: Computation) -> int | None:
    """k when ``instr`` is ``get-tuple-element(parameter 0 of comp, k)``."""
    if instr.opcode is not Opcode.GET_TUPLE_ELEMENT:
        return None
    source = instr.operands[0]
    if source.opcode is not Opcode.PARAMETER or source.parent is not comp:
        return None
    return instr.attrs["index"]


def _loop_test(cond: Computation):
    """(k, test) when the condition is ``compare(state[k], constant)`` (either order) on an
    integer scalar; ``test(value)`` evaluates it for a value of state[k]."""
    root = cond.root
    if root.opcode is not Opcode.COMPARE:
        return None
    a, b = root.operands
    direction = ComparisonDirection(root.attrs["direction"])
    for var, other, var_left in ((a, b, True), (b, a, False)):
        k = _is_state_element(var, cond)
        bound = splat(other)
        if k is None or bound is None or not var.shape.dtype.is_integer or var.shape.dims:
            continue
        compare = _COMPARE[direction]

        def test(value, _bound=bound, _left=var_left, _cmp=compare) -> bool:
            return bool(_cmp(value, _bound) if _left else _cmp(_bound, value))

        return k, test
    return None


def _loop_step(body: Computation, k: int) -> np.ndarray | None:
    """The constant the body adds to state[k] each trip (0 when it passes it through)."""
    root = body.root
    if root.opcode is not Opcode.TUPLE:
        return None
    update = root.operands[k]
    if _is_state_element(update, body) == k:
        return np.zeros((), update.shape.dtype.numpy)
    if update.opcode not in (Opcode.ADD, Opcode.SUBTRACT):
        return None
    x, c = update.operands
    if _is_state_element(x, body) != k and update.opcode is Opcode.ADD:
        x, c = c, x
    step = splat(c)
    if _is_state_element(x, body) != k or step is None:
        return None
    if update.opcode is Opcode.SUBTRACT:
        with np.errstate(all="ignore"):
            step = np.negative(step)
    return step


def _while(instr: Instruction, rw: Rewriter) -> Instruction | None:
    init = instr.operands[0]
    cond, body = instr.attrs["condition"], instr.attrs["body"]
    if init.opcode is not Opcode.TUPLE or rw.graph.effects.of_computation(cond):
        return None
    loop_test = _loop_test(cond)
    if loop_test is None:
        return None
    k, test = loop_test
    start = splat(init.operands[k])
    if start is None:
        return None
    if not test(start):
        return init
    step = _loop_step(body, k)
    if step is None:
        return None
    with np.errstate(all="ignore"):
        after_one = np.add(start, step, dtype=start.dtype)
    if test(after_one):
        return None
    root, _ = inline_computation(rw.graph, body, [init])
    return root


RULES: dict[Opcode, tuple] = {
    Opcode.REDUCE: (_reduce,),
    Opcode.DOT: (_dot, _dot_of_transpose),
    Opcode.WHILE: (_while,),
    Opcode.TRANSPOSE: (_transpose_of_dot,),
}
