"""What one row of the op table holds: :class:`OpDef`, its attribute schema and its classes.

Every property a pass, a backend, the text syntax, the verifier or the conformance suite asks of
an op is a field here, filled in once per opcode in :mod:`hlort.ir.opcodes`. The tables those
parts used to keep beside the op table (text syntax, numerics sets, fusion role sets, element
type families, tpusim's op classes) are derived from it where they are used.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

from hlort.ir import attributes as A
from hlort.lazy_dataclass import dataclass


class Numerics(enum.Enum):
    """How a backend's float results are compared with the interpreter's (the conformance suite's
    comparison kinds; integer results are always compared bit for bit)."""

    EXACT = "exact"  # equal values and sign of zero; any NaN matches any NaN
    BITS = "bits"  # moves or selects values: every bit equal, NaN payloads included
    ARITH = "arith"  # one IEEE rounding (add, divide...): 1 ulp (complex: as transcendental)
    TRANSCENDENTAL = "transcendental"  # libm quality: a few ulps
    ACCUMULATE = "accumulate"  # sums in an unspecified order: a relative tolerance per type


class FusionRole(enum.Enum):
    """How the fusion passes treat an op (see ``hlort.passes.instruction_fusion``)."""

    NONE = "-"  # never fused into a loop
    ELEMENTWISE = "elementwise"  # output element i from operand elements i
    INDEX_MAP = "index-map"  # one operand element at a computed index (or a generated value)
    INDEX_SELECT = "index-select"  # an index map choosing among operands or reading offsets
    REDUCE_HERO = "reduce-hero"  # the root of a kInput (reduction) fusion
    OUTPUT_HERO = "output-hero"  # the root of a kOutput (dot epilogue) fusion


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


REQUIRED = _Marker("REQUIRED")
"""An attribute without a default: the shape rule needs it."""
OPTIONAL = _Marker("OPTIONAL")
"""An attribute that may be absent, with no single value absence means (it depends on the
operands, as compare's comparison_type does)."""


class Shown(enum.Enum):
    """When the HLO printer writes an attribute that is present."""

    ALWAYS = "always"
    IF_SET = "if set"  # omitted when false or empty
    IF_NOT_DEFAULT = "if not default"  # omitted when equal to the default (or empty text)


class AttrDef(NamedTuple):
    """One attribute of an op.

    ``key`` is the key in ``instr.attrs``; ``group.field`` names one field of a dimension-numbers
    bundle stored under ``group`` (see :data:`GROUPS`), as XLA's text spells those out flat.
    ``type`` is a value type of :data:`ATTR_TYPES`. ``default`` is what an absent attribute means
    (:data:`REQUIRED`, :data:`OPTIONAL` or a value); ``fill`` says whether the parser writes the
    default in (False for values that only mean "absent"). ``text_key`` is the key in HLO text
    (the key's last part when empty). (A NamedTuple: cheap to define at import.)
    """

    key: str
    type: str
    default: Any = REQUIRED
    text_key: str = ""
    shown: Shown = Shown.ALWAYS
    fill: bool = True

    @property
    def text(self) -> str:
        return self.text_key or self.key.rsplit(".", 1)[-1]

    @property
    def has_default(self) -> bool:
        return self.default is not REQUIRED and self.default is not OPTIONAL


ATTR_TYPES: dict[str, str] = {
    "int": "an integer",
    "bool": "a bool",
    "dims": "a sequence of integers",
    "comp": "a Computation",
    "comps": "a sequence of Computations",
    "comp_or_comps": "a Computation or a sequence of Computations",
    "string": "a string",
    "api_version": "an API_VERSION_* name or 1..4",
    "direction": "a ComparisonDirection",
    "comparison_type": "a ComparisonType",
    "fusion_kind": "a FusionKind",
    "rng_algorithm": "an RngAlgorithm",
    "fft_type": "an FftType",
    "transpose": "a Transpose",
    "precision": "a sequence of Precision",
    "slice": "a sequence of SliceDim",
    "padding": "a sequence of PadDim",
    "window": "a sequence of WindowDim",
    "dim_labels": "a ConvDimensionNumbers",
    "backend_config": "a string (or a dict)",
    "replica_groups": "a sequence of id sequences or an IotaReplicaGroupList",
    "pairs": "a sequence of (source, target) id pairs",
}
"""Attribute value types and how errors describe them (checked in
:mod:`hlort.ir.op_def_checks`; spelled in text by :mod:`hlort.text.attribute_syntax`)."""

GROUPS: dict[str, type] = {
    "dot_dimension_numbers": A.DotDimensionNumbers,
    "gather_dimension_numbers": A.GatherDimensionNumbers,
    "scatter_dimension_numbers": A.ScatterDimensionNumbers,
}
"""Attribute keys holding a dimension-numbers dataclass, whose fields the schema lists."""

# Element-type families, by DType.kind.
ALL = frozenset({"pred", "sint", "uint", "float", "complex"})
NUMBER = frozenset({"sint", "uint", "float", "complex"})
INT = frozenset({"sint", "uint"})
BITS = frozenset({"pred", "sint", "uint"})
REAL = frozenset({"sint", "uint", "float"})
FLOAT = frozenset({"float"})
FLOAT_COMPLEX = frozenset({"float", "complex"})
SIGNED = frozenset({"sint", "float"})
SIGNED_COMPLEX = frozenset({"sint", "float", "complex"})


@dataclass(frozen=True, slots=True)
class OpDef:
    """Static properties of an opcode.

    ``arity`` is the exact operand count, or None when variadic.
    ``elementwise``: output element i depends only on operand elements i (fusable as a loop body).
    ``side_effect``: never removed by DCE nor merged by CSE.
    ``commutative``: operands may be swapped (CSE canonicalizes).
    ``called``: the attribute keys that hold called computations.
    ``attrs``: the attribute schema, in the order XLA prints them.
    ``types``: the element-type families (``DType.kind``) the operands may have, for ops whose
    shape rule checks one family set (the unary and binary elementwise ops); None otherwise.
    ``numerics``: the comparison class of float results.
    ``fusion``: the role in the fusion passes; ``reuses_operand``: reads an operand element for
    many output elements (an expensive producer is not fused into it).
    ``expensive``: costs far more than an add per element (a transcendental, a division, a
    called computation), so fusion does not recompute it and cost models count it apart.
    ``stablehlo``: StableHLO's op of the same name (``-`` spelled ``_``) converts one-to-one to
    this opcode (the importer's generic elementwise converter); other ops have their own.
    """

    arity: int | None
    elementwise: bool = False
    side_effect: bool = False
    commutative: bool = False
    called: tuple[str, ...] = ()
    attrs: tuple[AttrDef, ...] = ()
    types: frozenset[str] | None = None
    numerics: Numerics = Numerics.EXACT
    fusion: FusionRole = FusionRole.NONE
    reuses_operand: bool = False
    expensive: bool = False
    stablehlo: bool = False

    @property
    def transcendental(self) -> bool:
        """Counted as a transcendental by cost analysis."""
        return self.numerics is Numerics.TRANSCENDENTAL

    def attr(self, key: str) -> AttrDef | None:
        """The schema entry of ``key`` (``group.field`` for a bundle's field), or None."""
        for a in self.attrs:
            if a.key == key:
                return a
        return None
