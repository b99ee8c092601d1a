"""The HLO text printer, in XLA's style, so that text parsed from XLA prints back close to it.

``%name = f32[2,3]{1,0} add(f32[2,3]{1,0} %a, f32[2,3]{1,0} %b), metadata={...}``: every array
of rank >= 1 carries a layout (the default descending one when the shape has none), operands
carry their shapes, typed attributes come in XLA's order from the table in
:mod:`hlort.text.attribute_syntax`, and the raw ``extra_attrs`` (metadata, sharding...) come
last, with a custom-call's ``backend_config`` after them as XLA does. ``include_metadata=False``
leaves the raw attributes out (and the header's, but for the entry layout and aliasing): that
is the canonical text :meth:`Module.fingerprint` hashes.
Typed attributes outside the table are not printed (they have no text form).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hlort.errors import HlortError
from hlort.ir.computation import callees_first
from hlort.ir.fingerprint import SEMANTIC_HEADER_KEYS
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape, Shape, TupleShape
from hlort.text.attribute_syntax import OP_ATTRS, VALUE_PRINTERS
from hlort.text.literals import format_literal
from hlort.text.shapes import shape_text

if TYPE_CHECKING:
    from hlort.ir.computation import Computation
    from hlort.ir.instruction import Instruction
    from hlort.ir.module import Module


def print_module(module: Module, include_metadata: bool = True) -> str:
    """The whole module: header, computations callees first, the entry last."""
    printer = _Printer(include_metadata)
    parts = [_header(module, include_metadata)]
    for comp in _print_order(module):
        parts.append(printer.computation(comp))
    return "\n\n".join(parts) + "\n"


def print_computation(comp: Computation, include_metadata: bool = True) -> str:
    return _Printer(include_metadata).computation(comp)


def print_instruction(instr: Instruction, include_metadata: bool = True) -> str:
    """One instruction, without indentation or ``ROOT``."""
    return _Printer(include_metadata).instruction(instr)


def entry_computation_layout(module: Module) -> str:
    """``{(f32[2]{0}, s32[])->f32[2]{0}}`` for the entry computation's signature."""
    entry = module.entry
    params = TupleShape(tuple(p.shape for p in entry.parameters))
    return "{" + shape_text(params) + "->" + shape_text(entry.root.shape) + "}"


# Header attributes that change what a program computes; the only ones kept without metadata.
_SEMANTIC_HEADER_KEYS = SEMANTIC_HEADER_KEYS


def _header(module: Module, include_metadata: bool = True) -> str:
    attrs = dict(module.attributes)
    if not include_metadata:
        attrs = {k: v for k, v in attrs.items() if k in _SEMANTIC_HEADER_KEYS}
    if module.entry is not None and module.entry.root is not None:
        layout = attrs.get("entry_computation_layout")
        fresh = entry_computation_layout(module)
        if layout != fresh and (layout is None or _stale_layout(module, layout)):
            if layout is None:
                items = list(attrs.items())
                at = 1 if items and items[0][0] == "is_scheduled" else 0
                items.insert(at, ("entry_computation_layout", fresh))
                attrs = dict(items)
            else:
                attrs["entry_computation_layout"] = fresh
    for config_key, text_key in (
        ("num_replicas", "replica_count"),
        ("num_partitions", "num_partitions"),
    ):
        value = module.config.get(config_key, 1)
        if value != 1 or text_key in attrs:
            attrs[text_key] = str(value)
    return "HloModule " + ", ".join([module.name] + [f"{k}={v}" for k, v in attrs.items()])


def _stale_layout(module: Module, layout: str) -> bool:
    from hlort.text.parser import parse_program_shape, shapes_compatible

    try:
        params, result = parse_program_shape(layout.strip()[1:-1])
    except HlortError:
        return True
    entry = module.entry
    shapes = [p.shape for p in entry.parameters]
    return not (
        len(params) == len(shapes)
        and all(shapes_compatible(a, b) for a, b in zip(params, shapes, strict=True))
        and shapes_compatible(result, entry.root.shape)
    )


def _print_order(module: Module) -> list[Computation]:
    """Module order, adjusted so every callee precedes its callers and the entry is last."""
    others = [c for c in module.computations if c is not module.entry]
    return callees_first(others + ([module.entry] if module.entry is not None else []))


class _Printer:
    def __init__(self, include_metadata: bool):
        self.include_metadata = include_metadata
        # keyed by id, not by the shape: equal shapes (layout is not compared) can print
        # differently; the entry keeps its shape alive, so the id is never reused meanwhile
        self._shapes: dict[int, tuple[Shape, str]] = {}

    def shape(self, shape: Shape) -> str:
        hit = self._shapes.get(id(shape))
        if hit is not None and hit[0] is shape:
            return hit[1]
        text = shape_text(shape)
        self._shapes[id(shape)] = (shape, text)
        return text

    def computation(self, comp: Computation) -> str:
        is_entry = comp.parent is not None and comp.parent.entry is comp
        params = ", ".join(f"{p.name}: {shape_text(p.shape, False)}" for p in comp.parameters)
        result = shape_text(comp.root.shape, False) if comp.root is not None else "()"
        lines = [f"{'ENTRY ' if is_entry else ''}%{comp.name} ({params}) -> {result} {{"]
        for instr in comp.post_order():
            prefix = "  ROOT " if instr is comp.root else "  "
            lines.append(prefix + self.instruction(instr))
        lines.append("}")
        return "\n".join(lines)

    def instruction(self, instr: Instruction) -> str:
        opcode = instr.opcode
        if opcode is Opcode.PARAMETER:
            inside = str(instr.parameter_number)
        elif opcode is Opcode.CONSTANT:
            inside = format_literal(instr.literal, instr.shape)
        else:
            parts = []
            for i, op in enumerate(instr.operands):
                prefix = f"/*index={i}*/" if i and i % 5 == 0 else ""
                parts.append(f"{prefix}{self.shape(op.shape)} %{op.name}")
            inside = ", ".join(parts)
        text = f"%{instr.name} = {self.shape(instr.shape)} {opcode.value}({inside})"
        attrs = self.attributes(instr)
        return text + ", " + ", ".join(attrs) if attrs else text

    def attributes(self, instr: Instruction) -> list[str]:
        out = []
        values = instr.attrs
        last = []
        if instr.opcode is Opcode.CONDITIONAL and _pred_selected(instr):
            true_comp, false_comp = values["branch_computations"]
            out.append(f"true_computation=%{true_comp.name}")
            out.append(f"false_computation=%{false_comp.name}")
        else:
            for spec in OP_ATTRS.get(instr.opcode, ()):
                key = spec.attr_key
                if "." in key:
                    group, field = key.split(".", 1)
                    bundle = values.get(group)
                    if bundle is None:
                        continue
                    value = getattr(bundle, field)
                elif key in values:
                    value = values[key]
                else:
                    continue
                if value is None or (spec.show is not None and not spec.show(value)):
                    continue
                item = f"{spec.text_key}={VALUE_PRINTERS[spec.kind](value)}"
                (last if spec.kind == "backend_config" else out).append(item)
        if self.include_metadata:
            out.extend(f"{k}={v}" for k, v in instr.extra_attrs.items())
        return out + last


def _pred_selected(instr: Instruction) -> bool:
    selector = instr.operands[0].shape if instr.operands else None
    branches = instr.attrs.get("branch_computations") or ()
    return isinstance(selector, ArrayShape) and selector.dtype.is_pred and len(branches) == 2
