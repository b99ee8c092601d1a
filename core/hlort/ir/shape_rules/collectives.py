"""Shape rules: all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
collective-broadcast and the async start/done pairs.

The group form of the attributes (ids, duplicates, sizes, the mode) is checked here through
:func:`hlort.ir.collective_groups.check_groups_form`; whether the ids fit the replica and
partition counts is checked when those are known (the verifier, with the module's header, and
the compile). all-gather's and reduce-scatter's results depend on the group size, which the
attributes alone give only in some modes: otherwise the declared shape is needed and checked
for a consistent factor.
"""

from __future__ import annotations

from hlort import dtypes
from hlort.ir.collective_groups import check_groups_form, static_group_size
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.ir.shape_rules.reduction import check_called
from hlort.shape import ArrayShape, Shape, TupleShape, scalar


def _check_form(q: ShapeQuery) -> None:
    probe = Instruction(q.opcode, scalar(dtypes.F32), [], dict(q.attrs), q.name or q.opcode.value)
    check_groups_form(probe)


def _arrays(q: ShapeQuery) -> list[ArrayShape]:
    if not q.operands:
        q.fail("takes at least one operand")
    return [q.array(i) for i in range(len(q.operands))]


def _pack(shapes: list[ArrayShape]) -> Shape:
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


def _leaves(shape: Shape | None) -> list | None:
    if shape is None:
        return None
    return list(shape.elements) if isinstance(shape, TupleShape) else [shape]


def _check_reducer(q: ShapeQuery, operands: list[ArrayShape]) -> None:
    kinds = {s.dtype for s in operands}
    if len(kinds) != 1:
        q.fail(
            f"operands must share one element type to share to_apply, got {sorted(map(str, kinds))}"
        )
    s = scalar(operands[0].dtype)
    check_called(q, "to_apply", [s, s], s)


@shape_rule(Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START)
def _all_reduce(q: ShapeQuery) -> Shape:
    _check_form(q)
    operands = _arrays(q)
    _check_reducer(q, operands)
    return _pack(operands)


def _dimension(q: ShapeQuery, operand: ArrayShape) -> int:
    dims = q.attr("dimensions")
    if len(dims) != 1 or not 0 <= dims[0] < operand.rank:
        q.fail(f"dimensions={{{','.join(map(str, dims))}}} must name one dimension of {operand}")
    return dims[0]


def _scaled(
    q: ShapeQuery, operands: list[ArrayShape], declared: list | None, gather: bool
) -> list[ArrayShape]:
    """all-gather (``gather``: dim times the group size) or reduce-scatter (divided by it)."""
    size = static_group_size(q.attrs, q.opcode)
    if declared is not None and len(declared) != len(operands):
        q.fail(f"declares {len(declared)} result(s) for {len(operands)} operand(s)")
    out = []
    for k, operand in enumerate(operands):
        dim = _dimension(q, operand)
        n = operand.dims[dim]
        if size is not None:
            if not gather and n % size:
                q.fail(f"dimension {dim} of {operand} does not split into {size} parts")
            new = n * size if gather else n // size
        elif declared is None:
            q.fail(
                "the group size depends on the replica/partition counts here: give the result shape"
            )
        else:
            shape = declared[k]
            if not isinstance(shape, ArrayShape) or shape.rank != operand.rank:
                q.fail(f"result {k} must be an array of rank {operand.rank}, got {shape}")
            new = shape.dims[dim]
            whole, part = (new, n) if gather else (n, new)
            if part == 0 and whole != 0 or part and whole % part:
                q.fail(
                    f"result {shape} is not {operand} scaled along dimension {dim} by a group size"
                )
        dims = list(operand.dims)
        dims[dim] = new
        out.append(ArrayShape(operand.dtype, tuple(dims)))
    return out


@shape_rule(Opcode.ALL_GATHER)
def _all_gather(q: ShapeQuery) -> Shape:
    _check_form(q)
    operands = _arrays(q)
    return _pack(_scaled(q, operands, _leaves(q.declared), gather=True))


@shape_rule(Opcode.ALL_GATHER_START)
def _all_gather_start(q: ShapeQuery) -> Shape:
    """XLA's async form: ``(operand(s), result(s))``."""
    _check_form(q)
    operands = _arrays(q)
    declared = q.declared
    results = None
    if declared is not None:
        if not isinstance(declared, TupleShape) or len(declared.elements) != 2:
            q.fail(f"result must be the tuple (operand, gathered result), got {declared}")
        results = _leaves(declared.elements[1])
    gathered = _scaled(q, operands, results, gather=True)
    return TupleShape((_pack(operands), _pack(gathered)))


@shape_rule(Opcode.REDUCE_SCATTER)
def _reduce_scatter(q: ShapeQuery) -> Shape:
    _check_form(q)
    operands = _arrays(q)
    _check_reducer(q, operands)
    return _pack(_scaled(q, operands, _leaves(q.declared), gather=False))


@shape_rule(Opcode.ALL_TO_ALL)
def _all_to_all(q: ShapeQuery) -> Shape:
    """Array form (``dimensions={d}``: split along d, concatenated back along d) or tuple form
    (no dimensions: one operand per participant, same shapes out)."""
    _check_form(q)
    operands = _arrays(q)
    if q.attrs.get("dimensions"):
        if len(operands) != 1:
            q.fail("with dimensions= all-to-all takes one operand (the tuple form takes none)")
        dim = _dimension(q, operands[0])
        size = static_group_size(q.attrs, q.opcode)
        if size is not None and operands[0].dims[dim] % size:
            q.fail(f"dimension {dim} of {operands[0]} does not split into {size} parts")
        return operands[0]
    size = static_group_size(q.attrs, q.opcode)
    if size is not None and size != len(operands):
        q.fail(f"the tuple form needs one operand per participant ({size}), got {len(operands)}")
    if len({s for s in operands}) != 1:
        q.fail("the tuple form needs operands of one shape")
    return TupleShape(tuple(operands))


@shape_rule(Opcode.COLLECTIVE_PERMUTE, Opcode.COLLECTIVE_BROADCAST)
def _same_shape(q: ShapeQuery) -> Shape:
    _check_form(q)
    return q.array(0)


@shape_rule(Opcode.COLLECTIVE_PERMUTE_START)
def _permute_start(q: ShapeQuery) -> Shape:
    """XLA's async form: ``(operand, result, u32[], u32[])`` (the two scalars are contexts
    hlort does not use; a declared shape may leave them out)."""
    _check_form(q)
    operand = q.array(0)
    declared = q.declared
    if declared is None:
        return TupleShape((operand, operand, scalar(dtypes.U32), scalar(dtypes.U32)))
    elements = declared.elements if isinstance(declared, TupleShape) else ()
    if len(elements) < 2 or elements[0] != operand or elements[1] != operand:
        q.fail(f"result must be the tuple ({operand}, {operand}, u32[], u32[]), got {declared}")
    if any(not isinstance(e, ArrayShape) or e.rank for e in elements[2:]):
        q.fail(f"the elements after the first two of {declared} must be scalars (contexts)")
    return declared


@shape_rule(Opcode.ALL_REDUCE_DONE)
def _all_reduce_done(q: ShapeQuery) -> Shape:
    return q.operands[0]


@shape_rule(Opcode.ALL_GATHER_DONE, Opcode.COLLECTIVE_PERMUTE_DONE)
def _second_element(q: ShapeQuery) -> Shape:
    start = q.operands[0]
    if not isinstance(start, TupleShape) or len(start.elements) < 2:
        q.fail(f"operand must be the tuple an async start gives, got {start}")
    return start.elements[1]
