"""Custom-call layouts: which ones hlort's targets honour, and UNIMPLEMENTED for the rest.

A custom call may fix the physical layout of its operands and results (XLA's
``operand_layout_constraints`` and result shape layouts; StableHLO's ``operand_layouts`` /
``result_layouts``). hlort's values are logical arrays, so a layout matters only in what the
target computes: a kernel that reads bytes in one order gives another logical result when the
bytes come in another. hlort's targets compute on logical arrays as follows:

* the LAPACK targets (:mod:`hlort.interpreter.lapack_targets`) give LAPACK's result on the
  logical matrix, which is what XLA's kernels give under the layouts JAX emits: every matrix
  operand and result column-major with batch dimensions major (``{r-2, r-1, r-3, ..., 0}``),
  every vector (pivots, tau, singular and eigen values, gtsv's diagonals: any operand or result
  of lower rank than the call's highest-rank operand) and ``info`` row-major;
* every other target takes and gives row-major arrays (the default layout ``{r-1, ..., 0}``).

A call whose constraints name another layout would get a wrong result, so :func:`check_layouts`
(called by the StableHLO importer, by compile for every backend, and by the interpreter, for any
custom call with ``operand_layout_constraints``) raises UNIMPLEMENTED naming the operand or
result, the layout asked for and the one honoured. A call without constraints is taken
logically, as always.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from hlort.errors import InvalidArgument, Unimplemented
from hlort.ir.custom_calls import unsupported_lapack_routine
from hlort.shape import ArrayShape, Shape, TupleShape

CONSTRAINTS = "operand_layout_constraints"
# one operand's shape in XLA's spelling, ``f32[2,<=3]{0,1}``: its layout, if any
_SHAPE = re.compile(r"[a-z][a-z0-9]*\[[^\]]*\](?:\{([0-9,\s]*)\})?")
# a shape whose layout has more than the dimension order (tiling ``:T(8,128)``, memory space)
_ANNOTATED = re.compile(r"[a-z][a-z0-9]*\[[^\]]*\]\{.*\}")


def default_layout(rank: int) -> tuple[int, ...]:
    return tuple(range(rank - 1, -1, -1))


def column_major(rank: int) -> tuple[int, ...]:
    """A batch of column-major matrices: ``{r-2, r-1, r-3, ..., 0}``."""
    return (rank - 2, rank - 1, *range(rank - 3, -1, -1))


# JAX's TPU lowerings of a QR's two steps (hlort.interpreter.lapack_targets.TPU_QR's keys)
TPU_LAPACK_TARGETS = ("Qr", "ProductOfElementaryHouseholderReflectors")


def _is_lapack(target: str) -> bool:
    return target in TPU_LAPACK_TARGETS or (
        target.startswith("lapack_") and target.endswith("_ffi")
    )


def honoured_layout(target: str, shape: ArrayShape, matrix_rank: int) -> tuple[int, ...]:
    """The layout ``target`` computes its logical result for, for an operand or result of
    ``shape``; ``matrix_rank`` is the rank of the call's matrices (its highest operand rank)."""
    if _is_lapack(target) and shape.rank >= 2 and shape.rank == matrix_rank:
        return column_major(shape.rank)
    return default_layout(shape.rank)


def _arrays(shape: Shape) -> list[ArrayShape | None]:
    elements = shape.elements if isinstance(shape, TupleShape) else (shape,)
    return [e if isinstance(e, ArrayShape) else None for e in elements]


def check_layouts(
    where: str,
    target: str,
    operand_layouts: Sequence[tuple[int, ...] | None],
    operand_shapes: Sequence[Shape],
    result_shape: Shape,
) -> None:
    """UNIMPLEMENTED unless every given layout (operands': ``operand_layouts``, None for
    unconstrained; results': the layouts on ``result_shape``) is the one ``target`` honours."""
    lapack = unsupported_lapack_routine(target) if _is_lapack(target) else None
    if lapack is not None:
        raise lapack
    if operand_layouts and len(operand_layouts) != len(operand_shapes):
        raise InvalidArgument(
            f"{where}: custom call {target!r} gives {len(operand_layouts)} operand layout "
            f"constraint(s) for {len(operand_shapes)} operand(s); give one per operand"
        )
    # the matrices' rank: the highest operand rank (gtsv's b follows three vectors)
    matrix_rank = max((s.rank for s in operand_shapes if isinstance(s, ArrayShape)), default=-1)
    asked = [
        (f"operand {i}", shape, layout)
        for i, (shape, layout) in enumerate(
            zip(operand_shapes, operand_layouts or [None] * len(operand_shapes), strict=True)
        )
        if isinstance(shape, ArrayShape)
    ]
    results = _arrays(result_shape)
    for k, shape in enumerate(results):
        if shape is not None:
            name = "the result" if len(results) == 1 else f"result {k}"
            asked.append((name, shape, shape.layout))
    for what, shape, layout in asked:
        if layout is None or shape.rank < 2:
            continue
        want = honoured_layout(target, shape, matrix_rank)
        if tuple(layout) != want:
            spell = "{" + ",".join(map(str, layout)) + "}"
            honoured = "{" + ",".join(map(str, want)) + "}"
            raise Unimplemented(
                f"{where}: custom call {target!r} asks for layout {spell} of {what} "
                f"({replace(shape, layout=None)}), "
                f"but hlort computes this target on logical arrays as if laid out {honoured}, "
                f"so its result would be wrong; lay {what} out {honoured} (or drop the "
                "constraint), or run the program where the target's kernel is native"
            )


def constraint_layouts(text: str) -> list[tuple[int, ...] | None]:
    """The layouts of ``operand_layout_constraints={f32[2,2]{0,1}, s32[]}`` (None: none given;
    a tuple-shaped operand's constraint is not read). A layout with tiling or a memory space
    (``{1,0:T(8,128)}``) is UNIMPLEMENTED, never taken as unconstrained."""
    inner = text.strip()
    inner = inner[1:-1] if inner.startswith("{") and inner.endswith("}") else inner
    layouts: list[tuple[int, ...] | None] = []
    depth, start = 0, 0
    for i, ch in enumerate(inner + ","):
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            part, start = inner[start:i].strip(), i + 1
            if not part:
                continue
            found = _SHAPE.fullmatch(part)
            if found is None and _ANNOTATED.fullmatch(part):
                raise Unimplemented(
                    f"custom call operand layout constraint {part!r} has annotations beyond a "
                    "dimension order (tiling, memory space) that hlort does not honour; give "
                    "the plain dimension order (e.g. {1,0}) or drop the constraint"
                )
            if found is None or not found.group(1) or not found.group(1).strip():
                layouts.append(None)
            else:
                layouts.append(tuple(int(d) for d in found.group(1).split(",")))
    return layouts


def check_custom_call_layouts(instr) -> None:
    """:func:`check_layouts` for a custom-call instruction with ``operand_layout_constraints``
    (and its result layouts); nothing to check without constraints."""
    text = instr.extra_attrs.get(CONSTRAINTS)
    if not text:
        return
    target = instr.attrs.get("custom_call_target", "?")
    operands = [o.shape for o in instr.operands]
    check_layouts(instr.name, target, constraint_layouts(text), operands, instr.shape)


def check_module_custom_call_layouts(module) -> None:
    """:func:`check_custom_call_layouts` for every custom call of ``module`` (compile's check,
    so no backend computes a call for a layout its target does not honour)."""
    from hlort.ir.opcodes import Opcode

    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode is Opcode.CUSTOM_CALL and CONSTRAINTS in instr.extra_attrs:
                check_custom_call_layouts(instr)
