"""Structural equality of modules, the property round-trip tests assert.

Two modules are equal when their entries (and, pairwise, every computation they call) have the
same instructions in the same order: opcodes, shapes with layouts (no layout = the default
one), operands by position, attributes (an attribute left out equals its default), literals bit
for bit (so NaN payloads and -0 count), parameter numbers and raw extra attributes. Names are
compared only on request: parsing may rename to keep names unique in a module.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from hlort.ir.attributes import ComparisonType, Precision, default_comparison_type
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape
from hlort.text.attribute_syntax import ABSENT_EQUIVALENTS, DEFAULTS
from hlort.text.shapes import shape_text


def modules_equal(a: Module, b: Module, *, check_names: bool = False) -> bool:
    return module_difference(a, b, check_names=check_names) is None


def module_difference(a: Module, b: Module, *, check_names: bool = False) -> str | None:
    """The first difference between ``a`` and ``b`` in words, or None when they are equal."""
    if (a.entry is None) != (b.entry is None):
        return "one module has an entry computation and the other has none"
    if len(a.computations) != len(b.computations):
        return f"{len(a.computations)} computations vs {len(b.computations)}"
    for key in ("num_replicas", "num_partitions"):
        if a.config.get(key, 1) != b.config.get(key, 1):
            return f"config {key}: {a.config.get(key, 1)} vs {b.config.get(key, 1)}"
    paired: dict[Computation, Computation] = {}
    queue: list[tuple[Computation, Computation]] = []
    if a.entry is not None:
        queue.append((a.entry, b.entry))
    rest_a = [c for c in a.computations]
    rest_b = [c for c in b.computations]
    while True:
        while queue:
            ca, cb = queue.pop()
            if ca in paired:
                if paired[ca] is not cb:
                    return f"computation {ca.name} corresponds to two different computations"
                continue
            paired[ca] = cb
            diff = _computation_difference(ca, cb, queue, check_names)
            if diff is not None:
                return diff
        matched_b = set(paired.values())
        rest_a = [c for c in rest_a if c not in paired]
        rest_b = [c for c in rest_b if c not in matched_b]
        if not rest_a or not rest_b:
            break
        queue.append((rest_a[0], rest_b[0]))
    if rest_a or rest_b:
        return "the modules have different numbers of computations reachable from the entry"
    return None


def _computation_difference(ca: Computation, cb: Computation, queue, check_names: bool):
    if check_names and ca.name != cb.name:
        return f"computation names differ: {ca.name} vs {cb.name}"
    ia, ib = ca.post_order(), cb.post_order()
    if len(ia) != len(ib):
        return f"computation {ca.name}: {len(ia)} instructions vs {len(ib)} in {cb.name}"
    pos_a = {x: i for i, x in enumerate(ia)}
    pos_b = {y: i for i, y in enumerate(ib)}
    for x, y in zip(ia, ib, strict=True):
        where = f"computation {ca.name}, instruction {x.name} (vs {y.name})"
        if check_names and x.name != y.name:
            return f"{where}: names differ"
        if x.opcode is not y.opcode:
            return f"{where}: opcode {x.opcode.value} vs {y.opcode.value}"
        if shape_text(x.shape) != shape_text(y.shape):
            return f"{where}: shape {shape_text(x.shape)} vs {shape_text(y.shape)}"
        if [pos_a.get(o) for o in x.operands] != [pos_b.get(o) for o in y.operands]:
            return f"{where}: operands differ"
        if x.parameter_number != y.parameter_number:
            return f"{where}: parameter {x.parameter_number} vs {y.parameter_number}"
        if not _literals_same(x.literal, y.literal):
            return f"{where}: literals differ"
        na, nb = normalized_attrs(x), normalized_attrs(y)
        for key in sorted(set(na) | set(nb)):
            if key not in na or key not in nb or not _same(na[key], nb[key], queue):
                return f"{where}: attribute {key}: {na.get(key)!r} vs {nb.get(key)!r}"
        if x.extra_attrs != y.extra_attrs:
            return f"{where}: extra attributes {x.extra_attrs} vs {y.extra_attrs}"
    root_a = pos_a.get(ca.root)
    root_b = pos_b.get(cb.root)
    if root_a != root_b:
        return f"computation {ca.name}: roots differ"
    return None


def normalized_attrs(instr: Instruction) -> dict[str, Any]:
    """``instr.attrs`` with defaults filled in and values meaning 'absent' removed."""
    attrs = dict(DEFAULTS.get(instr.opcode, {}))
    attrs.update(instr.attrs)
    for key, absent in ABSENT_EQUIVALENTS.get(instr.opcode, {}).items():
        if key in attrs and _same(attrs[key], absent, []):
            del attrs[key]
    precision = attrs.get("operand_precision")
    if precision is not None and all(Precision(p) is Precision.DEFAULT for p in precision):
        del attrs["operand_precision"]
    if instr.opcode is Opcode.COMPARE and "comparison_type" in attrs and instr.operands:
        shape = instr.operands[0].shape
        if isinstance(shape, ArrayShape) and ComparisonType(
            attrs["comparison_type"]
        ) is default_comparison_type(shape.dtype):
            del attrs["comparison_type"]
    return attrs


def _same(va: Any, vb: Any, queue: list) -> bool:
    if isinstance(va, Computation) or isinstance(vb, Computation):
        if not (isinstance(va, Computation) and isinstance(vb, Computation)):
            return False
        queue.append((va, vb))
        return True
    if isinstance(va, (list, tuple)) or isinstance(vb, (list, tuple)):
        if not (isinstance(va, (list, tuple)) and isinstance(vb, (list, tuple))):
            return False
        return len(va) == len(vb) and all(_same(x, y, queue) for x, y in zip(va, vb, strict=True))
    if isinstance(va, np.ndarray) or isinstance(vb, np.ndarray):
        return _literals_same(va, vb)
    if isinstance(va, enum.Enum) and not isinstance(vb, enum.Enum):
        return va.value == vb
    if isinstance(vb, enum.Enum) and not isinstance(va, enum.Enum):
        return vb.value == va
    return va == vb


def _literals_same(la, lb) -> bool:
    if la is None or lb is None:
        return la is None and lb is None
    if isinstance(la, tuple) or isinstance(lb, tuple):
        return (
            isinstance(la, tuple)
            and isinstance(lb, tuple)
            and len(la) == len(lb)
            and all(_literals_same(x, y) for x, y in zip(la, lb, strict=True))
        )
    xa, xb = np.asarray(la), np.asarray(lb)
    return (
        xa.dtype == xb.dtype
        and xa.shape == xb.shape
        and np.ascontiguousarray(xa).tobytes() == np.ascontiguousarray(xb).tobytes()
    )
