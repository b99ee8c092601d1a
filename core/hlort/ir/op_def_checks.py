"""The verifier's attribute check: every key in ``instr.attrs`` is in the op's schema and holds a
value of the schema's type.

A misspelled or misplaced attribute used to be ignored (the op then ran with its default, or the
shape rule failed on a missing key far from the cause); now it is INVALID_ARGUMENT naming the
op, the instruction and the key. Values are checked for their type only: ranges and the
relations between attributes and shapes are the shape rules' business.
"""

from __future__ import annotations

import enum
import numbers
from collections.abc import Callable

import numpy as np

from hlort.errors import InvalidArgument
from hlort.ir import attributes as A
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.op_def import ATTR_TYPES, GROUPS, REQUIRED, AttrDef
from hlort.ir.opcodes import Opcode

Check = Callable[[object], bool]


def _int(v) -> bool:
    return type(v) is int or (isinstance(v, numbers.Integral) and not isinstance(v, bool))


def _seq(item: Check) -> Check:
    return lambda v: isinstance(v, (tuple, list)) and all(map(item, v))


def _instance(cls) -> Check:
    return lambda v: isinstance(v, cls)


def _enum(cls: type[enum.Enum]) -> Check:
    """An enum member or its spelling (the printer and the rules accept both)."""

    def check(v) -> bool:
        if isinstance(v, cls):
            return True
        try:
            cls(v)
        except (ValueError, TypeError):
            return False
        return True

    return check


def _comp(v) -> bool:
    return isinstance(v, Computation)


_CHECKS: dict[str, Check] = {
    "int": _int,
    "bool": _instance((bool, np.bool_)),
    "dims": _seq(_int),
    "comp": _comp,
    "comps": _seq(_comp),
    "comp_or_comps": lambda v: _comp(v) or _seq(_comp)(v),
    "string": _instance(str),
    "api_version": lambda v: isinstance(v, str) or _int(v),
    "direction": _enum(A.ComparisonDirection),
    "comparison_type": _enum(A.ComparisonType),
    "fusion_kind": _enum(A.FusionKind),
    "rng_algorithm": _enum(A.RngAlgorithm),
    "fft_type": _enum(A.FftType),
    "transpose": _enum(A.Transpose),
    "precision": _seq(_enum(A.Precision)),
    "slice": _seq(_instance(A.SliceDim)),
    "padding": _seq(_instance(A.PadDim)),
    "window": _seq(_instance(A.WindowDim)),
    "dim_labels": _instance(A.ConvDimensionNumbers),
    "backend_config": lambda v: isinstance(v, (str, dict)),
    "replica_groups": lambda v: isinstance(v, A.IotaReplicaGroupList) or _seq(_seq(_int))(v),
    "pairs": lambda v: _seq(_seq(_int))(v) and all(len(p) == 2 for p in v),
}
assert set(_CHECKS) == set(ATTR_TYPES), "every attribute value type needs a check"


def _keys(op: Opcode) -> dict[str, tuple[Check, str, bool]]:
    """Per ``instr.attrs`` key: the check, the expected value in words, whether None passes."""
    out: dict[str, tuple[Check, str, bool]] = {}
    for a in op.info.attrs:
        if "." in a.key:
            group = a.key.split(".", 1)[0]
            cls = GROUPS[group]
            out[group] = (_instance(cls), f"a {cls.__name__}", False)
        else:
            out[a.key] = (_CHECKS[a.type], ATTR_TYPES[a.type], _may_be_none(a))
    return out


def _may_be_none(a: AttrDef) -> bool:
    return a.default is not REQUIRED


_BY_OPCODE: dict[Opcode, dict[str, tuple[Check, str, bool]]] = {}  # filled on first use


def check_attributes(comp: Computation, instr: Instruction) -> None:
    """INVALID_ARGUMENT when ``instr`` has an attribute its op does not take, or one of the
    wrong type."""
    if not instr.attrs:
        return
    known = _BY_OPCODE.get(instr.opcode)
    if known is None:
        known = _BY_OPCODE[instr.opcode] = _keys(instr.opcode)
    for key, value in instr.attrs.items():
        entry = known.get(key)
        if entry is None:
            takes = ", ".join(known) if known else "no attributes"
            raise InvalidArgument(
                f"{_where(comp, instr)}: unknown attribute {key!r}; {instr.opcode.value} takes "
                f"{takes} (keep other information in extra_attrs)"
            )
        check, expected, none_ok = entry
        if value is None and none_ok:
            continue
        if not check(value):
            raise InvalidArgument(
                f"{_where(comp, instr)}: attribute {key!r} must be {expected}, got "
                f"{type(value).__name__} {_short(value)}"
            )


def _where(comp: Computation, instr: Instruction) -> str:
    return f"in computation {comp.name}: {instr.opcode.value} {instr.name}"


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
