"""Attributes hlort keeps as HLO text, written as the proto fields XLA has for them.

hlort does not interpret a module header's ``input_output_alias`` / ``buffer_donor`` nor an
instruction's ``extra_attrs`` (``sharding``, ``metadata``, layout constraints...), but XLA's
proto has fields for them and readers of an optimized program (jaxlib: shardings, aliasing)
rely on them, so they are parsed from their text form here. Text that does not parse is
INVALID_ARGUMENT naming the instruction, never dropped.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from hlort.errors import HlortError, InvalidArgument
from hlort.ir.opcodes import Opcode
from hlort.text import hlo_proto_values as V
from hlort.text.lexer import unescape
from hlort.text.protobuf_wire import Message

if TYPE_CHECKING:
    from hlort.ir.instruction import Instruction
    from hlort.ir.module import Module

_INDEX = r"\{\s*([\d\s,]*)\}"
_ALIAS = re.compile(_INDEX + r"\s*:\s*\(\s*(\d+)\s*,\s*" + _INDEX + r"\s*(?:,\s*([\w-]+)\s*)?\)")
_DONOR = re.compile(r"\(\s*(\d+)\s*,\s*" + _INDEX + r"\s*\)")
_ALIAS_KINDS = {"may-alias": 1, "must-alias": 2}


def _index(text: str) -> list[int]:
    return [int(v) for v in text.replace(" ", "").split(",") if v]


def header_fields(m: Message, module: Module) -> None:
    """``input_output_alias`` (field 8), ``buffer_donor`` (18), ``frontend_attributes`` (19)."""
    attrs = module.attributes
    alias = attrs.get("input_output_alias")
    if alias:
        entries = []
        for output, param, param_index, kind in _ALIAS.findall(alias):
            if kind and kind not in _ALIAS_KINDS:
                raise InvalidArgument(f"input_output_alias kind {kind!r} is not may- or must-alias")
            entry = Message().ints(1, _index(output)).int(2, int(param))
            entry.ints(3, _index(param_index)).int(4, _ALIAS_KINDS.get(kind or "may-alias"))
            entries.append(entry)
        if not entries and alias.strip("{} "):
            raise InvalidArgument(f"module {module.name}: cannot read input_output_alias={alias}")
        m.message(8, Message().messages(1, entries))
    donors = attrs.get("buffer_donor")
    if donors:
        entries = [Message().int(1, int(p)).ints(2, _index(i)) for p, i in _DONOR.findall(donors)]
        m.message(18, Message().messages(1, entries))
    frontend = attrs.get("frontend_attributes")
    if frontend:
        m.message(19, V.frontend_attributes_message(frontend))


def _top_level_items(text: str) -> list[str]:
    """``{a, b{1,0}, (c, d)}`` -> ``["a", "b{1,0}", "(c, d)"]``."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    items, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(body[start:i].strip())
            start = i + 1
    if body[start:].strip():
        items.append(body[start:].strip())
    return items


def extra_attribute_fields(m: Message, instr: Instruction, ids, by_name) -> None:
    """The instruction's text-kept attributes that have an HloInstructionProto field."""
    extra = instr.extra_attrs
    if not extra:
        return
    where = f"{instr.name} ({instr.opcode.value})"
    text = extra.get("metadata")
    if text:
        m.message(7, V.metadata_message(text))
    text = extra.get("sharding")
    if text:
        from hlort.text.sharding_syntax import parse_sharding

        m.message(40, V.sharding_message(parse_sharding(text, f"sharding of {instr.name}")), True)
    text = extra.get("frontend_attributes")
    if text:
        m.message(68, V.frontend_attributes_message(text))
    text = extra.get("backend_config")
    if text and instr.opcode is not Opcode.CUSTOM_CALL:
        raw = unescape(text[1:-1]) if text.startswith('"') and text.endswith('"') else text
        m.bytes(43, raw.encode("utf-8"))
    text = extra.get("control-predecessors")
    if text:
        names = [n.lstrip("%") for n in _top_level_items(text)]
        missing = [n for n in names if n not in by_name]
        if missing:
            raise InvalidArgument(
                f"{where}: control-predecessors {missing} are not in its computation"
            )
        m.ints(37, [ids[by_name[n]] for n in names])
    text = extra.get("parameter_replication")
    if text:
        flags = [v.strip() == "true" for v in _top_level_items(text)]
        m.message(61, Message().ints(1, flags))
    text = extra.get("operand_layout_constraints")
    if text:
        from hlort.text.parser import parse_shape

        try:
            shapes = [parse_shape(s) for s in _top_level_items(text)]
        except HlortError as err:
            raise InvalidArgument(
                f"{where}: cannot read operand_layout_constraints: {err}"
            ) from None
        m.int(56, True).messages(57, [V.shape_message(s) for s in shapes])
    text = extra.get("output_to_operand_aliasing")
    if text:
        entries = []
        for output, operand, operand_index, _ in _ALIAS.findall(text):
            entry = Message().ints(1, _index(output)).int(2, int(operand))
            entries.append(entry.ints(3, _index(operand_index)))
        m.messages(74, entries)
