"""Interpreter: custom-call, dispatched to its target's ``evaluate_fn``
(:mod:`hlort.ir.custom_calls`).

An unregistered target raises UNIMPLEMENTED naming it and how to register it, and so does a
call whose layout constraints the target would not honour (:mod:`hlort.ir.custom_call_layouts`).
"""

from __future__ import annotations

from hlort.errors import HlortError
from hlort.interpreter.registry import evaluates
from hlort.ir.custom_call_layouts import CONSTRAINTS, check_layouts
from hlort.ir.custom_calls import evaluator_for
from hlort.ir.opcodes import Opcode


@evaluates(Opcode.CUSTOM_CALL)
def _custom_call(ev, instr, *operands):
    target = instr.attrs["custom_call_target"]
    check_custom_call_layouts(instr)  # UNIMPLEMENTED for a layout the target would get wrong
    fn = evaluator_for(target)
    try:
        return fn(ev, instr, *operands)
    except HlortError:
        raise
    except Exception as err:  # a user's target failing is reported with the call site
        raise HlortError(
            f"{instr.name}: custom-call target {target!r} raised {type(err).__name__}: {err}"
        ) from err


def check_custom_call_layouts(instr) -> None:
    """:func:`~hlort.ir.custom_call_layouts.check_layouts` for a custom call with
    ``operand_layout_constraints`` (XLA's spelling: shapes with layouts) and its result
    layouts; nothing to check without constraints."""
    text = instr.extra_attrs.get(CONSTRAINTS)
    if not text:
        return
    from hlort.shape import ArrayShape
    from hlort.text.parser import parse_shape

    inner = text.strip()
    inner = inner[1:-1] if inner.startswith("{") and inner.endswith("}") else inner
    try:
        shapes = [parse_shape(part) for part in _split_top_level(inner)]
    except HlortError as err:
        raise HlortError(
            f"{instr.name}: cannot read {CONSTRAINTS}={text}: {err.message}", err.code
        ) from None
    layouts = [s.layout if isinstance(s, ArrayShape) else None for s in shapes]
    target = instr.attrs.get("custom_call_target", "?")
    check_layouts(instr.name, target, layouts, [o.shape for o in instr.operands], instr.shape)


def _split_top_level(text: str) -> list[str]:
    """``"f32[2,2]{0,1}, s32[]"`` -> its shapes (commas inside brackets and braces kept)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts
