"""Instruction attributes in HLO text: which keys each op has, how each value is spelled.

One table (:data:`OP_ATTRS`) lists, per opcode and in the order XLA prints them, the text key,
the ``instr.attrs`` key it fills and the value syntax. The parser and the printer both read it,
so the two cannot drift apart. Keys of the form ``group.field`` fill one field of a
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


def _true(v) -> bool:
    return bool(v)


def _not_one(v) -> bool:
    return v != 1


def _not_original(v) -> bool:
    return v not in (None, "", "API_VERSION_ORIGINAL")


_DIMS = "dims"
_S = AttrSpec
_DIMENSIONS = _S("dimensions", "dimensions", _DIMS)
_TO_APPLY = _S("to_apply", "to_apply", "comp")
_WINDOW = _S("window", "window", "window", _nonempty)
_PRECISION = _S("operand_precision", "operand_precision", "precision")
_DOT = "dot_dimension_numbers."
_GATHER = "gather_dimension_numbers."
_SCATTER = "scatter_dimension_numbers."

OP_ATTRS: dict[Opcode, tuple[AttrSpec, ...]] = {
    Opcode.IOTA: (_S("iota_dimension", "iota_dimension", "int"),),
    Opcode.COMPARE: (_S("direction", "direction", "direction"),
                     _S("type", "comparison_type", "comparison_type")),
    Opcode.REDUCE_PRECISION: (_S("exponent_bits", "exponent_bits", "int"),
                              _S("mantissa_bits", "mantissa_bits", "int")),
    Opcode.BROADCAST: (_DIMENSIONS,),
    Opcode.TRANSPOSE: (_DIMENSIONS,),
    Opcode.REVERSE: (_DIMENSIONS,),
    Opcode.CONCATENATE: (_DIMENSIONS,),
    Opcode.SLICE: (_S("slice", "slice", "slice"),),
    Opcode.DYNAMIC_SLICE: (_S("dynamic_slice_sizes", "dynamic_slice_sizes", _DIMS),),
    Opcode.PAD: (_S("padding", "padding", "padding"),),
    Opcode.REDUCE: (_DIMENSIONS, _TO_APPLY),
    Opcode.REDUCE_WINDOW: (_WINDOW, _TO_APPLY),
    Opcode.SELECT_AND_SCATTER: (_WINDOW, _S("select", "select", "comp"),
                                _S("scatter", "scatter", "comp")),
    Opcode.MAP: (_DIMENSIONS, _TO_APPLY),
    Opcode.SORT: (_DIMENSIONS, _S("is_stable", "is_stable", "bool", _true), _TO_APPLY),
    Opcode.TOPK: (_S("k", "k", "int"), _S("largest", "largest", "bool")),
    Opcode.DOT: (
        _S("lhs_batch_dims", _DOT + "lhs_batch_dims", _DIMS, _nonempty),
        _S("lhs_contracting_dims", _DOT + "lhs_contracting_dims", _DIMS),
        _S("rhs_batch_dims", _DOT + "rhs_batch_dims", _DIMS, _nonempty),
        _S("rhs_contracting_dims", _DOT + "rhs_contracting_dims", _DIMS),
        _PRECISION,
    ),
    Opcode.CONVOLUTION: (
        _WINDOW,
        _S("dim_labels", "dim_labels", "dim_labels"),
        _S("feature_group_count", "feature_group_count", "int", _not_one),
        _S("batch_group_count", "batch_group_count", "int", _not_one),
        _PRECISION,
    ),
    Opcode.GATHER: (
        _S("offset_dims", _GATHER + "offset_dims", _DIMS),
        _S("collapsed_slice_dims", _GATHER + "collapsed_slice_dims", _DIMS),
        _S("start_index_map", _GATHER + "start_index_map", _DIMS),
        _S("operand_batching_dims", _GATHER + "operand_batching_dims", _DIMS, _nonempty),
        _S("start_indices_batching_dims", _GATHER + "start_indices_batching_dims", _DIMS,
           _nonempty),
        _S("index_vector_dim", _GATHER + "index_vector_dim", "int"),
        _S("slice_sizes", "slice_sizes", _DIMS),
        _S("indices_are_sorted", "indices_are_sorted", "bool", _true),
    ),
    Opcode.SCATTER: (
        _S("update_window_dims", _SCATTER + "update_window_dims", _DIMS),
        _S("inserted_window_dims", _SCATTER + "inserted_window_dims", _DIMS),
        _S("scatter_dims_to_operand_dims", _SCATTER + "scatter_dims_to_operand_dims", _DIMS),
        _S("input_batching_dims", _SCATTER + "input_batching_dims", _DIMS, _nonempty),
        _S("scatter_indices_batching_dims", _SCATTER + "scatter_indices_batching_dims", _DIMS,
           _nonempty),
        _S("index_vector_dim", _SCATTER + "index_vector_dim", "int"),
        _S("indices_are_sorted", "indices_are_sorted", "bool", _true),
        _S("unique_indices", "unique_indices", "bool", _true),
        _TO_APPLY,
    ),
    Opcode.CHOLESKY: (_S("lower", "lower", "bool", _true),),
    Opcode.TRIANGULAR_SOLVE: (
        _S("left_side", "left_side", "bool", _true),
        _S("lower", "lower", "bool", _true),
        _S("unit_diagonal", "unit_diagonal", "bool", _true),
        _S("transpose_a", "transpose_a", "transpose"),
    ),
    Opcode.FFT: (_S("fft_type", "fft_type", "fft_type"), _S("fft_length", "fft_length", _DIMS)),
    Opcode.WHILE: (_S("condition", "condition", "comp"), _S("body", "body", "comp")),
    Opcode.CONDITIONAL: (_S("branch_computations", "branch_computations", "comps"),),
    Opcode.CALL: (_TO_APPLY,),
    Opcode.GET_TUPLE_ELEMENT: (_S("index", "index", "int"),),
    Opcode.CUSTOM_CALL: (
        _S("custom_call_target", "custom_call_target", "string"),
        _S("custom_call_has_side_effect", "has_side_effect", "bool", _true),
        _S("api_version", "api_version", "ident", _not_original),
        _S("called_computations", "called_computations", "comps", _nonempty),
        _S("backend_config", "backend_config", "backend_config", _nonempty),
    ),
    Opcode.FUSION: (_S("kind", "kind", "fusion_kind"), _S("calls", "calls", "comp_or_comps")),
    Opcode.RNG_BIT_GENERATOR: (_S("algorithm", "algorithm", "rng_algorithm"),),
}  # fmt: skip

# Spellings accepted on input only: XLA's pred-selected conditional, a list form of calls=.
PARSE_ALIASES: dict[Opcode, tuple[AttrSpec, ...]] = {
    Opcode.CONDITIONAL: (_S("true_computation", "branch_computations.0", "comp"),
                         _S("false_computation", "branch_computations.1", "comp")),
    Opcode.CUSTOM_CALL: (_S("calls", "called_computations", "comps"),),
    Opcode.CALL: (_S("calls", "to_apply", "comp"),),
}  # fmt: skip

_BY_TEXT_KEY: dict[Opcode, dict[str, AttrSpec]] = {}
for _op in Opcode:
    _table = {s.text_key: s for s in OP_ATTRS.get(_op, ())}
    _table.update({s.text_key: s for s in PARSE_ALIASES.get(_op, ())})
    _BY_TEXT_KEY[_op] = _table


def spec_for(opcode: Opcode, text_key: str) -> AttrSpec | None:
    return _BY_TEXT_KEY[opcode].get(text_key)


GROUPS: dict[str, type] = {
    "dot_dimension_numbers": A.DotDimensionNumbers,
    "gather_dimension_numbers": A.GatherDimensionNumbers,
    "scatter_dimension_numbers": A.ScatterDimensionNumbers,
}

# Values an absent attribute means. The parser fills them in, so parsed and built modules agree.
DEFAULTS: dict[Opcode, dict[str, Any]] = {
    Opcode.SORT: {"is_stable": False},
    Opcode.GATHER: {"indices_are_sorted": False},
    Opcode.SCATTER: {"indices_are_sorted": False, "unique_indices": False},
    Opcode.CONVOLUTION: {"window": (), "feature_group_count": 1, "batch_group_count": 1},
    Opcode.REDUCE_WINDOW: {"window": ()},
    Opcode.SELECT_AND_SCATTER: {"window": ()},
    Opcode.CHOLESKY: {"lower": False},
    Opcode.TRIANGULAR_SOLVE: {"left_side": False, "lower": False, "unit_diagonal": False,
                              "transpose_a": A.Transpose.NO_TRANSPOSE},
    Opcode.TOPK: {"largest": True},
    Opcode.RNG_BIT_GENERATOR: {"algorithm": A.RngAlgorithm.DEFAULT},
    Opcode.DOT: {"dot_dimension_numbers": A.DotDimensionNumbers()},
}  # fmt: skip

# Values that mean the same as leaving the attribute out (never filled in by the parser).
ABSENT_EQUIVALENTS: dict[Opcode, dict[str, Any]] = {
    Opcode.CUSTOM_CALL: {"has_side_effect": False, "api_version": "API_VERSION_ORIGINAL",
                         "called_computations": (), "backend_config": ""},
}  # fmt: skip


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
            lex.error(f"bad padding {tok.text!r}: each dimension is low_high or low_high_interior",
                      tok.pos)  # fmt: skip
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
    size, stride = _window_ints(lex, fields, "size", 1, n, pos), _window_ints(
        lex, fields, "stride", 1, n, pos)  # fmt: skip
    lhs = _window_ints(lex, fields, "lhs_dilate", 1, n, pos)
    rhs = _window_ints(lex, fields, "rhs_dilate", 1, n, pos)
    rev = _window_ints(lex, fields, "rhs_reversal", 0, n, pos)
    pads = [p.split("_") for p in fields.get("pad", ["0_0"] * n)]
    if len(pads) != n or not all(len(p) == 2 and all(_INT.fullmatch(v) for v in p) for p in pads):
        lex.error(f"bad window: pad= needs {n} low_high pairs separated by 'x'", pos)
    return tuple(
        A.WindowDim(size[i], stride[i], int(pads[i][0]), int(pads[i][1]), rhs[i], lhs[i],
                    bool(rev[i]))  # fmt: skip
        for i in range(n)
    )


_INT = LazyPattern(r"-?\d+")


def _window_ints(lex: Lexer, fields: dict[str, list[str]], key: str, default: int, n: int,
                 pos: int) -> list[int]:  # fmt: skip
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


VALUE_PARSERS: dict[str, Callable[[Lexer], Any]] = {
    "int": lambda lex: lex.integer(),
    "bool": _parse_bool,
    _DIMS: _parse_dims,
    "comp": _parse_comp,
    "comps": _parse_comps,
    "comp_or_comps": _parse_comp_or_comps,
    "string": lambda lex: lex.string(),
    "ident": _parse_ident,
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

    lhs = labels(d.input_batch_dimension, d.input_feature_dimension, d.input_spatial_dimensions,
                 "b", "f")  # fmt: skip
    rhs = labels(d.kernel_input_feature_dimension, d.kernel_output_feature_dimension,
                 d.kernel_spatial_dimensions, "i", "o")  # fmt: skip
    out = labels(d.output_batch_dimension, d.output_feature_dimension,
                 d.output_spatial_dimensions, "b", "f")  # fmt: skip
    return f"{lhs}_{rhs}->{out}"


def _padding_text(padding) -> str:
    interior = any(p.interior for p in padding)
    return "x".join(
        f"{p.low}_{p.high}" + (f"_{p.interior}" if interior else "") for p in padding
    )


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
    _DIMS: lambda v: "{" + ",".join(map(str, v)) + "}",
    "comp": _comp_name,
    "comps": lambda v: "{" + ", ".join(_comp_name(c) for c in v) + "}",
    "comp_or_comps": _comp_or_comps_text,
    "string": lambda v: '"' + escape(v) + '"',
    "ident": str,
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
}
