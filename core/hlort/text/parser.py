"""The HLO text parser: what XLA and JAX print, into an hlort :class:`~hlort.ir.Module`.

Accepted: the ``HloModule name, key=value, ...`` header (values kept raw in
``module.attributes``; ``replica_count`` and ``num_partitions`` also read into
``module.config``); computations as ``%name (p: f32[2]) -> f32[2] { ... }`` or ``name { ... }``,
``ENTRY`` (else the last computation is the entry), ``ROOT`` (else the last instruction);
names with or without ``%``; operands with or without their shapes; every attribute of the ops
in the op table, typed (see :mod:`hlort.text.attribute_syntax`); any other attribute kept raw in
``instr.extra_attrs``. Computations may be called before they are defined; operands must be
defined before their users, as XLA prints them.
"""

from __future__ import annotations

import re
from typing import Any

from hlort.errors import HlortError, Unimplemented
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.op_def import GROUPS
from hlort.ir.opcodes import Opcode, from_hlo_name
from hlort.shape import Shape, TupleShape
from hlort.text.attribute_syntax import DEFAULTS, VALUE_PARSERS, ComputationRef, spec_for
from hlort.text.lazy_pattern import LazyPattern
from hlort.text.lexer import ARRAY_SHAPE_PATTERN, NAME_PATTERN, Lexer
from hlort.text.literals import parse_literal
from hlort.text.shapes import array_shape_from_token, parse_shape_at
from hlort.text.sharding_syntax import SHARDING_KEY, raw_sharding
from hlort.text.stack_frame_tables import parse_stack_frame_tables

# XLA ops outside hlort's op table: reported as UNIMPLEMENTED, not as syntax errors.
XLA_ONLY_OPS = frozenset(
    {
        "ragged-all-to-all",
        "send",
        "send-done",
        "recv",
        "recv-done",
        "infeed",
        "outfeed",
        "copy-start",
        "copy-done",
        "async-start",
        "async-update",
        "async-done",
        "dynamic-reshape",
        "domain",
        "add-dependency",
        "rng",
        "rng-get-and-update-state",
        "stochastic-convert",
        "batch-norm-training",
        "batch-norm-inference",
        "batch-norm-grad",
        "trace",
        "composite",
    }
)
_HINTS = {"rng": "; lower random numbers with rng-bit-generator (jax does)"}
_CONFIG_KEYS = {
    "replica_count": "num_replicas",
    "num_replicas": "num_replicas",
    "num_partitions": "num_partitions",
}
_COMPUTATION_ATTR = LazyPattern(r",\s*[A-Za-z_][\w\-]*\s*=")
# Fast paths for the common forms; anything else falls back to the token-by-token parser.
_HEAD = LazyPattern(
    rf"(ROOT\s+)?({NAME_PATTERN})\s*=\s*({ARRAY_SHAPE_PATTERN})\s+([a-z][a-z0-9\-]*)\("
)
_OPERAND = LazyPattern(rf"\s*(?:({ARRAY_SHAPE_PATTERN})\s+)?({NAME_PATTERN})\s*([,)])")


def parse_module(text: str, source_name: str = "<text>", verify: bool = True) -> Module:
    """Parse one ``HloModule``; with ``verify``, run the verifier (shape errors name the op)."""
    parser = _ModuleParser(text, source_name)
    module = parser.parse()
    if verify:
        parser.verify(module)
    return module


def parse_shape(text: str) -> Shape:
    """``"f32[2,3]{1,0}"`` -> ArrayShape; tuples and ``token[]`` too."""
    lex = Lexer(text, "<shape>")
    shape = parse_shape_at(lex)
    if not lex.at_end():
        lex.expected("the end of the shape")
    return shape


def parse_program_shape(text: str) -> tuple[list[Shape], Shape]:
    """``"(f32[2]{0}, s32[])->f32[2]{0}"`` (an entry_computation_layout) -> (params, result)."""
    lex = Lexer(text, "<layout>")
    lex.expect("(")
    params = lex.items_until(")", lambda: parse_shape_at(lex), "a parameter list")
    lex.expect("->")
    result = parse_shape_at(lex)
    if not lex.at_end():
        lex.expected("the end of the program shape")
    return params, result


def shapes_compatible(a: Shape, b: Shape) -> bool:
    """Equal ignoring layouts."""
    if isinstance(a, TupleShape) and isinstance(b, TupleShape):
        return len(a.elements) == len(b.elements) and all(
            shapes_compatible(x, y) for x, y in zip(a.elements, b.elements, strict=True)
        )
    return a == b


class _ModuleParser:
    def __init__(self, text: str, source_name: str):
        self.lex = Lexer(text, source_name)
        self.positions: dict[Instruction, int] = {}  # offset of each instruction's line
        self.refs: list[tuple[Instruction, str]] = []
        self.instruction_end = 0  # offset just past the last instruction's text

    # -- module ---------------------------------------------------------------------------------
    def parse(self) -> Module:
        lex = self.lex
        if not lex.keyword("HloModule"):
            lex.expected("'HloModule' starting the module")
        module = Module(lex.name("the module name"))
        while lex.accept(","):
            key = lex.name("a module attribute name")
            lex.expect("=", f"'=' after module attribute {key}")
            raw = lex.raw_value()
            module.attributes[key] = raw
            if key in _CONFIG_KEYS:
                try:
                    module.config[_CONFIG_KEYS[key]] = int(raw)
                except ValueError:
                    lex.error(f"{key} must be an integer, got {raw!r}")
        module.stack_frames = parse_stack_frame_tables(lex)  # current XLA dumps' tables
        computations: list[Computation] = []
        by_name: dict[str, Computation] = {}
        entry: Computation | None = None
        while not lex.at_end():
            start = lex.pos
            comp, is_entry = self.computation()
            if comp.name in by_name:
                lex.error(f"computation {comp.name!r} is defined twice", start)
            if is_entry:
                if entry is not None:
                    lex.error(
                        f"second ENTRY computation {comp.name}; {entry.name} is the entry", start
                    )
                entry = comp
            by_name[comp.name] = comp
            computations.append(comp)
        if not computations:
            lex.expected("a computation")
        self.resolve_computations(by_name)
        entry = entry or computations[-1]
        for comp in computations:
            module.add_computation(comp, entry=comp is entry)
        if not _callees_first(computations):
            module.sort_computations()
        return module

    def resolve_computations(self, by_name: dict[str, Computation]) -> None:
        def resolve(ref: ComputationRef) -> Computation:
            comp = by_name.get(ref.name)
            if comp is None:
                self.lex.error(f"no computation named {ref.name!r} in this module", ref.pos)
            return comp

        for instr, key in self.refs:
            value = instr.attrs[key]
            if isinstance(value, tuple):
                instr.attrs[key] = tuple(resolve(r) for r in value)
            else:
                instr.attrs[key] = resolve(value)
            if instr.opcode is Opcode.FUSION and key == "calls":
                for comp in instr.called_computations():
                    comp.is_fusion_computation = True

    def verify(self, module: Module) -> None:
        from hlort.ir.verifier import verify_module

        try:
            verify_module(module)
        except HlortError as err:
            where = self._locate(err.message, module)
            raise type(err)(f"{self.lex.source_name}{where}: {err.message}", err.code) from None

    def _locate(self, message: str, module: Module) -> str:
        positions = {
            instr.name: self.positions[instr]
            for comp in module.computations
            for instr in comp.instructions
            if instr in self.positions
        }
        # Shape rules say "<opcode> <name>: ..."; otherwise take the first name mentioned.
        named = [
            m.group(2)
            for m in re.finditer(r"([a-z][a-z0-9\-]*) (\S+?):", message)
            if from_hlo_name(m.group(1)) is not None
        ]
        for word in named + re.findall(r"[A-Za-z0-9_.\-]+", message):
            if word in positions:
                line, col = self.lex.line_col(positions[word])
                return f":{line}:{col}"
        return ""

    # -- computations ---------------------------------------------------------------------------
    def computation(self) -> tuple[Computation, bool]:
        lex = self.lex
        lex.skip()
        start = lex.pos
        is_entry = lex.keyword("ENTRY")
        name = lex.name("a computation name (or ENTRY)")
        declared_result = None
        if lex.accept("("):
            lex.items_until(")", self._declared_parameter, "the parameter list")
            lex.expect("->", "'->' before the result shape")
            declared_result = parse_shape_at(lex)
        lex.expect("{", f"'{{' opening the body of computation {name}")
        comp = Computation(name)
        scope: dict[str, Instruction] = {}
        root: Instruction | None = None
        while not lex.accept("}"):
            if lex.at_end():
                lex.error(f"computation {name} is not closed: expected '}}'", start)
            line_start = lex.pos
            instr, is_root = self.instruction(comp, scope)
            end = self.instruction_end
            if lex.peek_char() not in ("}", "") and "\n" not in lex.text[end : lex.pos]:
                lex.expected(f"',' or the end of instruction {instr.name}")
            if is_root:
                if root is not None:
                    lex.error(
                        f"second ROOT in computation {name}; {root.name} is the root", line_start
                    )
                root = instr
        if not comp.instructions:
            lex.error(f"computation {name} has no instructions", start)
        while lex.peek_char() == "," and _COMPUTATION_ATTR.match(lex.text, lex.pos):
            lex.accept(",")
            lex.name()
            lex.expect("=")
            lex.raw_value()  # execution_thread="..." and the like: not modelled by hlort
        comp.set_root(root if root is not None else comp.instructions[-1])
        if declared_result is not None and not shapes_compatible(declared_result, comp.root.shape):
            lex.error(
                f"computation {name} declares result {declared_result} but its root "
                f"{comp.root.name} has shape {comp.root.shape}",
                start,
            )
        return comp, is_entry

    # -- instructions ---------------------------------------------------------------------------
    def _declared_parameter(self) -> Shape:
        """``name: shape`` in a computation's signature (the parameters themselves define it)."""
        self.lex.name("a parameter name")
        self.lex.expect(":", "':' after the parameter name")
        return parse_shape_at(self.lex)

    def instruction(self, comp: Computation, scope: dict[str, Instruction]):
        lex = self.lex
        lex.skip()
        start = lex.pos
        head = _HEAD.match(lex.text, start)
        if head is not None:
            is_root = head.group(1) is not None
            name = head.group(2).removeprefix("%")
            shape = array_shape_from_token(lex, head.group(3), head.start(3))
            op_pos = head.start(4)
            op_name = head.group(4)
            lex.pos = head.end() - 1
        else:
            is_root = lex.keyword("ROOT")
            name = lex.name("an instruction name")
            lex.expect("=", f"'=' after instruction name {name}")
            shape = parse_shape_at(lex)
            lex.skip()
            op_pos = lex.pos
            op_name = lex.name("an opcode")
        if name in scope:
            lex.error(f"instruction name {name!r} is used twice in computation {comp.name}", start)
        opcode = from_hlo_name(op_name)
        if opcode is None:
            if op_name in XLA_ONLY_OPS:
                line, col = lex.line_col(op_pos)
                hint = _HINTS.get(op_name, "")
                raise Unimplemented(
                    f"{lex.source_name}:{line}:{col}: XLA op {op_name!r} is not supported by "
                    f"hlort (instruction {name}){hint}"
                )
            lex.error(f"unknown opcode {op_name!r}", op_pos)
        lex.expect("(", f"'(' after opcode {op_name}")
        literal = None
        parameter_number = None
        operands: list[Instruction] = []
        if opcode is Opcode.PARAMETER:
            parameter_number = lex.integer("a parameter number")
            lex.expect(")", "')' after the parameter number")
        elif opcode is Opcode.CONSTANT:
            literal = parse_literal(lex, shape)
            lex.expect(")", "')' after the literal")
        elif not lex.accept(")"):
            operands = self.operands(comp, scope, name)
        attrs, extra = self.attributes(opcode, op_pos, name)
        instr = Instruction(
            opcode,
            shape,
            operands,
            attrs,
            name,
            literal=literal,
            parameter_number=parameter_number,
            extra_attrs=extra,
        )
        comp.add_instruction(instr)
        scope[name] = instr
        self.positions[instr] = start
        for key, value in attrs.items():
            if isinstance(value, ComputationRef) or (
                isinstance(value, tuple) and value and isinstance(value[0], ComputationRef)
            ):
                self.refs.append((instr, key))
        return instr, is_root

    def operands(self, comp: Computation, scope: dict[str, Instruction], user: str):
        lex = self.lex
        operands = []
        text = lex.text
        while True:
            m = _OPERAND.match(text, lex.pos)
            if m is not None:
                name = m.group(2).removeprefix("%")
                operand = scope.get(name)
                if operand is None:
                    self._undefined(name, user, comp, m.start(2))
                if m.group(1) is not None:
                    declared = array_shape_from_token(lex, m.group(1), m.start(1))
                    if not shapes_compatible(declared, operand.shape):
                        self._mismatch(name, user, declared, operand, m.start(2))
                operands.append(operand)
                lex.pos = m.end()
                if m.group(3) == ")":
                    return operands
                continue
            declared = parse_shape_at(lex) if lex.at_shape() else None
            lex.skip()
            pos = lex.pos
            name = lex.name("an operand name")
            operand = scope.get(name)
            if operand is None:
                self._undefined(name, user, comp, pos)
            if declared is not None and not shapes_compatible(declared, operand.shape):
                self._mismatch(name, user, declared, operand, pos)
            operands.append(operand)
            if lex.accept(")"):
                return operands
            lex.expect(",", "',' or ')' after an operand")

    def _mismatch(self, name: str, user: str, declared: Shape, operand: Instruction, pos: int):
        self.lex.error(
            f"operand {name} of {user} is written with shape {declared} but {name} has shape "
            f"{operand.shape}",
            pos,
        )

    def _undefined(self, name: str, user: str, comp: Computation, pos: int):
        later = re.compile(rf"^\s*(?:ROOT\s+)?%?{re.escape(name)}\s*=", re.M)
        end = self.lex.text.find("\n}", pos)
        if later.search(self.lex.text, pos, end if end >= 0 else len(self.lex.text)):
            self.lex.error(
                f"operand {name} of {user} is used before its definition; HLO text defines "
                "each instruction before its users",
                pos,
            )
        self.lex.error(f"operand {name} of {user} is not defined in computation {comp.name}", pos)

    def attributes(self, opcode: Opcode, op_pos: int, name: str):
        lex = self.lex
        attrs: dict[str, Any] = {}
        extra: dict[str, str] = {}
        groups: dict[str, dict[str, Any]] = {}
        while True:
            self.instruction_end = lex.pos
            if not lex.accept(","):
                break
            lex.skip()
            key_pos = lex.pos
            key = lex.name("an attribute name")
            lex.expect("=", f"'=' after attribute {key}")
            spec = spec_for(opcode, key)
            if spec is None:
                if key in extra:
                    lex.error(f"attribute {key} is given twice", key_pos)
                extra[key] = raw_sharding(lex) if key == SHARDING_KEY else lex.raw_value()
                continue
            value = VALUE_PARSERS[spec.kind](lex)
            target = spec.attr_key
            if "." in target:
                group, field = target.split(".", 1)
                bucket = groups.setdefault(group, {})
                if field in bucket:
                    lex.error(f"attribute {key} is given twice", key_pos)
                bucket[field] = value
            else:
                if target in attrs:
                    lex.error(f"attribute {key} is given twice", key_pos)
                attrs[target] = value
        for group, fields in groups.items():
            if group == "branch_computations":
                if set(fields) != {"0", "1"}:
                    lex.error(
                        f"conditional {name} needs both true_computation and false_computation",
                        op_pos,
                    )
                attrs[group] = (fields["0"], fields["1"])
                continue
            try:
                attrs[group] = GROUPS[group](**fields)
            except TypeError:
                missing = [f for f in GROUPS[group].__dataclass_fields__ if f not in fields]
                lex.error(f"{opcode.value} {name} is missing {', '.join(missing)}", op_pos)
        for key, value in DEFAULTS.get(opcode, {}).items():
            attrs.setdefault(key, value)
        return attrs, extra


def _callees_first(computations: list[Computation]) -> bool:
    seen: set[Computation] = set()
    for comp in computations:
        for callee in comp.called_computations():
            if callee not in seen:
                return False
        seen.add(comp)
    return True
