"""Instruction attributes in HLO text: which keys each op has, how each value is spelled.

The keys, their order (XLA's), defaults and when the printer omits a value come from the op
table's attribute schema (:attr:`hlort.ir.op_def.OpDef.attrs`); this module derives the text
view of it (:data:`OP_ATTRS`) and spells each value type. The parser and the printer both read
it, so the two cannot drift apart. Keys of the form ``group.field`` fill one field of a
dimension-numbers dataclass (dot, gather, scatter), as XLA spells those out flat.

Attributes not in the table for an op (``metadata``, ``sharding``, ``frontend_attributes``...)
are kept verbatim in ``instr.extra_attrs`` by the parser.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from hlort.errors import HlortError
from hlort.ir import attributes as A
from hlort.ir.op_def import ATTR_TYPES, GROUPS, AttrDef, Shown
from hlort.ir.opcodes import Opcode
from hlort.text.lazy_pattern import LazyPattern
from hlort.text.lexer import Lexer, escape


class ComputationRef:
    """A computation named in an attribute, resolved once every computation is parsed."""

    __slots__ = ("name", "pos")

    def __init__(self, name: str, pos: int):
        self.name = name
        self.pos = pos


class AttrSpec(NamedTuple):
    """One attribute of an op's text form (a NamedTuple: ~1 ms cheaper to define at import
    than a dataclass, and every process that prints a module imports this)."""

    text_key: str
    attr_key: str
    kind: str
    show: Callable[[Any], bool] | None = None  # the printer omits the value when this is False


def _nonempty(v) -> bool:
    return bool(v)


def _show_for(attr: AttrDef) -> Callable[[Any], bool] | None:
    if attr.shown is Shown.IF_SET:
        return _nonempty
    if attr.shown is Shown.IF_NOT_DEFAULT:
        default = attr.default
        return lambda v: v != default and v != ""
    return None


_S = AttrSpec


class PerOpcode:
    """``{opcode: value}`` for the opcodes whose ``make(opcode)`` is not empty, each made on
    first lookup: a process that prints or parses a few ops does not derive all ~100 rows (and
    make the dimension-number bundles their defaults hold) when it imports this module."""

    __slots__ = ("_make", "_made")

    def __init__(self, make: Callable[[Opcode], Any]):
        self._make = make
        self._made: dict[Opcode, Any] = {}

    def _value(self, op: Opcode):
        try:
            return self._made[op]
        except KeyError:
            value = self._made[op] = self._make(op)
            return value

    def get(self, op: Opcode, default=None):
        value = self._value(op)
        return value if value else default

    def __getitem__(self, op: Opcode):
        value = self._value(op)
        if not value:
            raise KeyError(op)
        return value

    def __contains__(self, op) -> bool:
        return isinstance(op, Opcode) and bool(self._value(op))

    def items(self) -> list[tuple[Opcode, Any]]:
        return [(op, v) for op in Opcode if (v := self._value(op))]


def _op_attrs(op: Opcode) -> tuple[AttrSpec, ...]:
    return tuple(_S(a.text, a.key, a.type, _show_for(a)) for a in op.info.attrs)


OP_ATTRS: PerOpcode = PerOpcode(_op_attrs)  # Opcode -> tuple[AttrSpec, ...]

# Spellings accepted on input only: XLA's pred-selected conditional, a list form of calls=.
PARSE_ALIASES: dict[Opcode, tuple[AttrSpec, ...]] = {
    Opcode.CONDITIONAL: (
        _S("true_computation", "branch_computations.0", "comp"),
        _S("false_computation", "branch_computations.1", "comp"),
    ),
    Opcode.CUSTOM_CALL: (_S("calls", "called_computations", "comps"),),
    Opcode.CALL: (_S("calls", "to_apply", "comp"),),
}


def _by_text_key(op: Opcode) -> dict[str, AttrSpec]:
    table = {s.text_key: s for s in OP_ATTRS.get(op, ())}
    table.update({s.text_key: s for s in PARSE_ALIASES.get(op, ())})
    return table


_BY_TEXT_KEY = PerOpcode(_by_text_key)


def spec_for(opcode: Opcode, text_key: str) -> AttrSpec | None:
    return _BY_TEXT_KEY.get(opcode, {}).get(text_key)


def _defaults(op: Opcode, fill: bool) -> dict[str, Any]:
    """The schema's defaults the parser fills in (``fill``), or those meaning only 'absent'; a
    dimension-numbers group whose fields all have defaults defaults to the empty bundle."""
    out: dict[str, Any] = {}
    grouped: dict[str, bool] = {}
    for a in op.info.attrs:
        if "." in a.key:
            group = a.key.split(".", 1)[0]
            grouped[group] = grouped.get(group, True) and a.has_default
        elif a.has_default and a.fill == fill:
            out[a.key] = a.default
    if fill:
        out.update({g: GROUPS[g]() for g, all_default in grouped.items() if all_default})
    return out


# Values an absent attribute means. The parser fills them in, so parsed and built modules agree.
DEFAULTS: PerOpcode = PerOpcode(lambda op: _defaults(op, True))  # Opcode -> dict

# Values that mean the same as leaving the attribute out (never filled in by the parser).
ABSENT_EQUIVALENTS: PerOpcode = PerOpcode(lambda op: _defaults(op, False))  # Opcode -> dict


# -- value parsers ----------------------------------------------------------------------------
_DIMS_RE = LazyPattern(r"\{\s*(-?\d+(?:\s*,\s*-?\d+)*)?\s*\}")
_SLICE_RE = LazyPattern(r"\[\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?\]")


def _parse_dims(lex: Lexer) -> tuple[int, ...]:
    lex.skip()
    m = _DIMS_RE.match(lex.text, lex.pos)
    if m is None:
        lex.expected("a list of integers such as {0,1}")
    lex.pos = m.end()
    body = m.group(1)
    return tuple(int(x) for x in body.split(",")) if body else ()


def _parse_bool(lex: Lexer) -> bool:
    lex.skip()
    pos = lex.pos
    word = lex.name("true or false")
    if word not in ("true", "false"):
        lex.expected("true or false", pos)
    return word == "true"


def _parse_comp(lex: Lexer) -> ComputationRef:
    lex.skip()
    pos = lex.pos
    return ComputationRef(lex.name("a computation name"), pos)


def _parse_comps(lex: Lexer) -> tuple[ComputationRef, ...]:
    lex.expect("{", "'{' opening a list of computations")
    return tuple(lex.items_until("}", lambda: _parse_comp(lex), "the list of computations"))


def _parse_comp_or_comps(lex: Lexer):
    if lex.peek_char() == "{":
        refs = _parse_comps(lex)
        return refs[0] if len(refs) == 1 else refs
    return _parse_comp(lex)


def _enum_parser(enum_cls: type[enum.Enum], what: str, upper: bool = False):
    def parse(lex: Lexer):
        lex.skip()
        pos = lex.pos
        word = lex.name(what)
        try:
            return enum_cls(word.upper() if upper else word)
        except ValueError:
            known = ", ".join(e.value.lower() if upper else e.value for e in enum_cls)
            lex.error(f"unknown {what} {word!r}; expected one of {known}", pos)

    return parse


_parse_precision_name = _enum_parser(A.Precision, "precision", upper=True)


def _parse_precision(lex: Lexer) -> tuple[A.Precision, ...]:
    lex.expect("{", "'{' opening operand_precision")
    return tuple(lex.items_until("}", lambda: _parse_precision_name(lex), "operand_precision"))


def _parse_slice(lex: Lexer) -> tuple[A.SliceDim, ...]:
    lex.skip()
    pos = lex.pos
    if lex.peek_char() != "{":
        lex.expected("'{' opening a slice such as {[0:4:2], [1:3]}")
    body = lex.raw_value()[1:-1]
    dims = [A.SliceDim(int(a), int(b), int(c) if c else 1) for a, b, c in _SLICE_RE.findall(body)]
    if _SLICE_RE.sub("", body).replace(",", "").strip():
        lex.error("bad slice: write {[start:limit:stride], ...}", pos)
    return tuple(dims)


def _parse_padding(lex: Lexer) -> tuple[A.PadDim, ...]:
    tok = lex.peek()
    if tok is None or tok.kind not in ("pad", "number"):
        if lex.peek_char() in (",", "}", ""):
            return ()  # a rank-0 pad prints an empty padding
        lex.expected("padding such as 0_0x1_1_0")
    lex.pos = tok.pos + len(tok.text)
    if re.match(r"[\w.\-]", lex.text[lex.pos : lex.pos + 1]):
        lex.expected("padding such as 0_0x1_1_0", tok.pos)
    out = []
    for part in tok.text.split("x"):
        nums = [int(n) for n in re.findall(r"-?\d+", part)]
        if len(nums) not in (2, 3):
            lex.error(
                f"bad padding {tok.text!r}: each dimension is low_high or low_high_interior",
                tok.pos,
            )
        out.append(A.PadDim(*nums))
    return tuple(out)


_WINDOW_KEYS = ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal")


def _parse_window(lex: Lexer) -> tuple[A.WindowDim, ...]:
    lex.skip()
    pos = lex.pos
    if lex.peek_char() != "{":
        lex.expected("'{' opening a window such as {size=3x3 stride=2x2}")
    body = lex.raw_value()[1:-1].split()
    fields: dict[str, list[str]] = {}
    for item in body:
        key, _, value = item.partition("=")
        if key not in _WINDOW_KEYS or not value:
            lex.error(f"bad window item {item!r}; keys are {', '.join(_WINDOW_KEYS)}", pos)
        fields[key] = value.split("x")
    if not fields:
        return ()
    if "size" not in fields:
        lex.error("window needs size=", pos)
    n = len(fields["size"])
    size, stride = (
        _window_ints(lex, fields, "size", 1, n, pos),
        _window_ints(lex, fields, "stride", 1, n, pos),
    )
    lhs = _window_ints(lex, fields, "lhs_dilate", 1, n, pos)
    rhs = _window_ints(lex, fields, "rhs_dilate", 1, n, pos)
    rev = _window_ints(lex, fields, "rhs_reversal", 0, n, pos)
    pads = [p.split("_") for p in fields.get("pad", ["0_0"] * n)]
    if len(pads) != n or not all(len(p) == 2 and all(_INT.fullmatch(v) for v in p) for p in pads):
        lex.error(f"bad window: pad= needs {n} low_high pairs separated by 'x'", pos)
    return tuple(
        A.WindowDim(
            size[i], stride[i], int(pads[i][0]), int(pads[i][1]), rhs[i], lhs[i], bool(rev[i])
        )
        for i in range(n)
    )


_INT = LazyPattern(r"-?\d+")


def _window_ints(
    lex: Lexer, fields: dict[str, list[str]], key: str, default: int, n: int, pos: int
) -> list[int]:
    raw = fields.get(key)
    if raw is None:
        return [default] * n
    if len(raw) != n or not all(_INT.fullmatch(v) for v in raw):
        lex.error(f"bad window: {key}= needs {n} integers separated by 'x'", pos)
    return [int(v) for v in raw]


def _parse_dim_labels(lex: Lexer) -> A.ConvDimensionNumbers:
    tok = lex.next("dim_labels", "dim_labels such as b01f_01io->b01f")
    try:
        return dim_labels_from_text(tok.text)
    except ValueError as err:
        lex.error(f"bad dim_labels {tok.text!r}: {err}", tok.pos)


def dim_labels_from_text(text: str) -> A.ConvDimensionNumbers:
    lhs, rest = text.split("_", 1)
    rhs, out = rest.split("->")
    n = len(lhs) - 2

    def roles(labels: str, a: str, b: str) -> tuple[int, int, tuple[int, ...]]:
        expected = sorted([a, b] + [str(i) for i in range(n)])
        if len(labels) != n + 2 or sorted(labels) != expected:
            raise ValueError(f"{labels!r} must hold {a}, {b} and the digits 0..{n - 1} once each")
        return labels.index(a), labels.index(b), tuple(labels.index(str(i)) for i in range(n))

    ib, if_, isp = roles(lhs, "b", "f")
    ki, ko, ksp = roles(rhs, "i", "o")
    ob, of, osp = roles(out, "b", "f")
    return A.ConvDimensionNumbers(ib, if_, isp, ki, ko, ksp, ob, of, osp)


def _parse_backend_config(lex: Lexer) -> str:
    raw = lex.raw_value()
    if raw.startswith('"'):
        from hlort.text.lexer import unescape

        return unescape(raw[1:-1])
    return raw


def _parse_ident(lex: Lexer) -> str:
    return lex.name("a name")


_IOTA_GROUPS_RE = LazyPattern(
    r"\[\s*(\d+)\s*,\s*(\d+)\s*\]\s*<=\s*\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]"
    r"(?:\s*T\(\s*(\d+(?:\s*,\s*\d+)*)\s*\))?"
)


def _parse_id_lists(lex: Lexer, what: str) -> tuple[tuple[int, ...], ...]:
    """``{{0,1},{2,3}}`` (``{}``: none)."""
    lex.expect("{", f"'{{' opening {what} such as {{{{0,1}},{{2,3}}}}")
    return tuple(lex.items_until("}", lambda: _parse_dims(lex), what))


def _parse_replica_groups(lex: Lexer):
    """``{{0,1},{2,3}}`` or XLA's iota form ``[2,2]<=[4]`` / ``[2,2]<=[2,2]T(1,0)``."""
    lex.skip()
    if lex.peek_char() != "[":
        return _parse_id_lists(lex, "replica_groups")
    pos = lex.pos
    m = _IOTA_GROUPS_RE.match(lex.text, pos)
    if m is None:
        lex.expected("replica groups such as {{0,1},{2,3}} or [2,2]<=[4]")
    lex.pos = m.end()
    dims = tuple(int(v) for v in m.group(3).split(","))
    perm = tuple(int(v) for v in m.group(4).split(",")) if m.group(4) else ()
    return A.IotaReplicaGroupList(int(m.group(1)), int(m.group(2)), dims, perm)


def _parse_pairs(lex: Lexer) -> tuple[tuple[int, ...], ...]:
    pos = lex.pos
    pairs = _parse_id_lists(lex, "source_target_pairs")
    if any(len(p) != 2 for p in pairs):
        lex.error("source_target_pairs must be pairs such as {{0,1},{1,0}}", pos)
    return pairs


VALUE_PARSERS: dict[str, Callable[[Lexer], Any]] = {
    "int": lambda lex: lex.integer(),
    "bool": _parse_bool,
    "dims": _parse_dims,
    "comp": _parse_comp,
    "comps": _parse_comps,
    "comp_or_comps": _parse_comp_or_comps,
    "string": lambda lex: lex.string(),
    "api_version": _parse_ident,
    "direction": _enum_parser(A.ComparisonDirection, "comparison direction"),
    "comparison_type": _enum_parser(A.ComparisonType, "comparison type"),
    "fusion_kind": _enum_parser(A.FusionKind, "fusion kind"),
    "rng_algorithm": _enum_parser(A.RngAlgorithm, "rng algorithm"),
    "fft_type": _enum_parser(A.FftType, "fft type"),
    "transpose": _enum_parser(A.Transpose, "transpose"),
    "precision": _parse_precision,
    "slice": _parse_slice,
    "padding": _parse_padding,
    "window": _parse_window,
    "dim_labels": _parse_dim_labels,
    "backend_config": _parse_backend_config,
    "replica_groups": _parse_replica_groups,
    "pairs": _parse_pairs,
}


# -- value printers ---------------------------------------------------------------------------
def _comp_name(comp) -> str:
    return "%" + comp.name


def window_text(window) -> str:
    if not window:
        return "{}"
    parts = ["size=" + "x".join(str(w.size) for w in window)]
    if any(w.stride != 1 for w in window):
        parts.append("stride=" + "x".join(str(w.stride) for w in window))
    if any(w.padding_low or w.padding_high for w in window):
        parts.append("pad=" + "x".join(f"{w.padding_low}_{w.padding_high}" for w in window))
    if any(w.base_dilation != 1 for w in window):
        parts.append("lhs_dilate=" + "x".join(str(w.base_dilation) for w in window))
    if any(w.window_dilation != 1 for w in window):
        parts.append("rhs_dilate=" + "x".join(str(w.window_dilation) for w in window))
    if any(w.window_reversal for w in window):
        parts.append("rhs_reversal=" + "x".join("1" if w.window_reversal else "0" for w in window))
    return "{" + " ".join(parts) + "}"


def dim_labels_text(d: A.ConvDimensionNumbers) -> str:
    def labels(a: int, b: int, spatial, ca: str, cb: str) -> str:
        out = [""] * (len(spatial) + 2)
        out[a], out[b] = ca, cb
        for i, s in enumerate(spatial):
            out[s] = str(i)
        return "".join(out)

    lhs = labels(
        d.input_batch_dimension, d.input_feature_dimension, d.input_spatial_dimensions, "b", "f"
    )
    rhs = labels(
        d.kernel_input_feature_dimension,
        d.kernel_output_feature_dimension,
        d.kernel_spatial_dimensions,
        "i",
        "o",
    )
    out = labels(
        d.output_batch_dimension, d.output_feature_dimension, d.output_spatial_dimensions, "b", "f"
    )
    return f"{lhs}_{rhs}->{out}"


def _padding_text(padding) -> str:
    interior = any(p.interior for p in padding)
    return "x".join(f"{p.low}_{p.high}" + (f"_{p.interior}" if interior else "") for p in padding)


def _slice_text(spec) -> str:
    parts = [
        f"[{s.start}:{s.limit}]" if s.stride == 1 else f"[{s.start}:{s.limit}:{s.stride}]"
        for s in spec
    ]
    return "{" + ", ".join(parts) + "}"


def _comp_or_comps_text(value) -> str:
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(_comp_name(c) for c in value) + "}"
    return _comp_name(value)


def _id_lists_text(value) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in value) + "}"


def _replica_groups_text(value) -> str:
    if isinstance(value, A.IotaReplicaGroupList):
        text = (
            f"[{value.num_groups},{value.group_size}]<=[{','.join(map(str, value.reshape_dims))}]"
        )
        if value.transpose_perm:
            text += f"T({','.join(map(str, value.transpose_perm))})"
        return text
    return _id_lists_text(value)


def _backend_config_text(value: str) -> str:
    """JSON (XLA's proto configs) prints bare, as XLA does; anything else as a quoted string."""
    if value.startswith("{") and value.endswith("}") and "\n" not in value:
        try:
            if Lexer(value).brace_end(0) == len(value):
                return value
        except HlortError:
            pass
    return '"' + escape(value) + '"'


VALUE_PRINTERS: dict[str, Callable[[Any], str]] = {
    "int": str,
    "bool": lambda v: "true" if v else "false",
    "dims": lambda v: "{" + ",".join(map(str, v)) + "}",
    "comp": _comp_name,
    "comps": lambda v: "{" + ", ".join(_comp_name(c) for c in v) + "}",
    "comp_or_comps": _comp_or_comps_text,
    "string": lambda v: '"' + escape(v) + '"',
    "api_version": str,
    "direction": lambda v: A.ComparisonDirection(v).value,
    "comparison_type": lambda v: A.ComparisonType(v).value,
    "fusion_kind": lambda v: A.FusionKind(v).value,
    "rng_algorithm": lambda v: A.RngAlgorithm(v).value,
    "fft_type": lambda v: A.FftType(v).value,
    "transpose": lambda v: A.Transpose(v).value,
    "precision": lambda v: "{" + ",".join(A.Precision(p).value.lower() for p in v) + "}",
    "slice": _slice_text,
    "padding": _padding_text,
    "window": window_text,
    "dim_labels": dim_labels_text,
    "backend_config": _backend_config_text,
    "replica_groups": _replica_groups_text,
    "pairs": _id_lists_text,
}


assert set(VALUE_PARSERS) == set(VALUE_PRINTERS) == set(ATTR_TYPES), "a value type lacks a spelling"
