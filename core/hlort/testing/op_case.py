"""Op cases: the (op, element type, variant) programs the suite runs on a backend.

Cases are generated from the op table: every :class:`~hlort.ir.opcodes.Opcode` has a generator
(registered with :func:`generates` in the ``cases_*`` modules) that, given an element type,
returns :class:`CaseSpec` objects (a builder function, optional inputs, a comparison kind). A
spec whose module the shape rules reject is not a case: that is how each op's element types
come from the shape rules rather than from a list kept here. ``tests/conformance`` checks that
no opcode is left without cases.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from hlort import dtypes
from hlort.builder import Builder
from hlort.dtypes import DType
from hlort.errors import HlortError
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.op_def import Numerics
from hlort.ir.op_registry import OpRegistry
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape
from hlort.testing.values import mixed, rng_for

BuildFn = Callable[[Builder], Instruction]
InputsFn = Callable[[np.random.Generator, Sequence[ArrayShape]], list[np.ndarray]]


@dataclass(frozen=True)
class CaseSpec:
    """One program for one op: ``build(b)`` adds parameters and ops and returns the root.

    ``inputs(rng, parameter_shapes)`` makes the arguments (default: random values with edge
    values in front); ``kind`` picks the comparison (default: by op, see :func:`default_kind`).
    """

    variant: str
    build: BuildFn
    inputs: InputsFn | None = None
    kind: str | None = None
    dtype_label: str | None = None


@dataclass
class OpCase:
    """A runnable case: the module, how to make its inputs, and how to compare its outputs."""

    op: str
    dtype: str
    variant: str
    module: Module
    kind: str
    inputs_fn: InputsFn | None = field(default=None, repr=False)

    @property
    def id(self) -> str:
        return f"{self.op}-{self.dtype}-{self.variant}"

    @property
    def opcodes(self) -> set[str]:
        """Every opcode the module uses (for capability and profile checks)."""
        return {i.opcode.value for c in self.module.computations for i in c.instructions}

    @property
    def dtypes(self) -> set[str]:
        """Every element type the module's instructions produce or take."""
        out: set[str] = set()
        for comp in self.module.computations:
            for instr in comp.instructions:
                for leaf in instr.shape.leaf_shapes():
                    if isinstance(leaf, ArrayShape):
                        out.add(leaf.dtype.name)
        return out

    def parameter_shapes(self) -> list[ArrayShape]:
        shapes: list[ArrayShape] = []
        for param in self.module.entry.parameters:
            shapes += [s for s in param.shape.leaf_shapes() if isinstance(s, ArrayShape)]
        return shapes

    def inputs(self) -> list[np.ndarray]:
        """The arguments, flattened; the same on every call (seeded by the case id)."""
        rng = rng_for(self.id)
        shapes = self.parameter_shapes()
        if self.inputs_fn is not None:
            return [np.asarray(a, order="C") for a in self.inputs_fn(rng, shapes)]
        return [mixed(s.dtype, s.dims, rng) for s in shapes]


CaseGenerator = Callable[[Opcode, DType], list[CaseSpec]]
GENERATORS: OpRegistry[Opcode, CaseGenerator] = OpRegistry(
    "case generator",
    modules=[
        "hlort.testing." + m
        for m in (
            "cases_collectives",
            "cases_data_movement",
            "cases_elementwise",
            "cases_linalg",
            "cases_reduction",
            "cases_structure",
        )
    ],
)

EXEMPT: dict[Opcode, str] = {
    Opcode.PARAMETER: "every case passes its inputs as parameters",
}
"""Opcodes without cases of their own, and why."""


def default_kind(opcode: Opcode, dt: DType) -> str:
    """The comparison for ``opcode``'s float results (integers are always bitwise): the op
    table's numerics class (``OpDef.numerics``)."""
    numerics = opcode.info.numerics
    if numerics is Numerics.ARITH and dt.is_complex:
        # complex products and quotients are not correctly rounded anywhere
        return Numerics.TRANSCENDENTAL.value
    return numerics.value


def generates(*opcodes: Opcode):
    """Register ``fn(opcode, dtype) -> [CaseSpec]`` as the case generator of ``opcodes``."""
    return GENERATORS.register(*opcodes)


def generator_for(opcode: Opcode):
    return GENERATORS.get(opcode)


def module_name(case_id: str) -> str:
    return "case_" + re.sub(r"[^A-Za-z0-9_]", "_", case_id)


def build_case(opcode: Opcode, dt: DType, spec: CaseSpec) -> OpCase | None:
    """The case, or None when the shape rules reject it (``dt`` is not one of the op's types)."""
    label = spec.dtype_label or dt.name
    case_id = f"{opcode.value}-{label}-{spec.variant}"
    b = Builder(module_name(case_id))
    try:
        module = b.build(spec.build(b))
    except HlortError:
        return None
    kind = spec.kind or default_kind(opcode, dt)
    return OpCase(opcode.value, label, spec.variant, module, kind, spec.inputs)


@cache
def cases_for(opcode: Opcode) -> tuple[OpCase, ...]:
    """Every case of ``opcode``, over every element type its shape rule accepts."""
    gen = generator_for(opcode)
    if gen is None:
        return ()
    out: list[OpCase] = []
    for dt in dtypes.ALL_DTYPES:
        for spec in gen(opcode, dt):
            case = build_case(opcode, dt, spec)
            if case is not None:
                out.append(case)
    ids = [c.id for c in out]
    if len(set(ids)) != len(ids):
        raise RuntimeError(f"duplicate case ids for {opcode.value}: {sorted(ids)}")
    return tuple(out)


_QUICK_PREFERENCE = ("f32", "s32", "pred", "bf16", "c64", "u8", "f16", "s8", "u32")


def quick_sample(cases: Sequence[OpCase], op: str) -> list[OpCase]:
    """At most two element types per op (f32 or the first preferred, plus a rotating one), two
    variants each: about a tenth of the cases, still covering every op."""
    by_dtype: dict[str, list[OpCase]] = {}
    for case in cases:
        by_dtype.setdefault(case.dtype, []).append(case)
    labels = list(by_dtype)
    first = next((d for d in _QUICK_PREFERENCE if d in by_dtype), labels[0] if labels else None)
    chosen = [first] if first is not None else []
    rest = [d for d in labels if d != first]
    if rest:
        chosen.append(rest[zlib.crc32(op.encode()) % len(rest)])
    return [c for d in chosen for c in by_dtype[d][:2]]


def all_cases(quick: bool = False) -> list[OpCase]:
    """Every op case, in op-table order (a sample of them with ``quick``)."""
    out: list[OpCase] = []
    for opcode in Opcode:
        cases = cases_for(opcode)
        out += quick_sample(cases, opcode.value) if quick else list(cases)
    return out
