"""Attribute values of MLIR text: dictionaries, numbers, strings, lists, ``array<...>``,
``dense<...>``, symbols, types, and the dialect attributes StableHLO uses (``#stablehlo<kind V>``
enums, ``#stablehlo.gather<k = v, ...>`` structs, ``#stablehlo.conv<[b, 0, f]x[...]->[...]>``).

A mixin of :class:`~.mlir_parser.Parser`: it uses the parser's token helpers.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.dense_literals import decode_dense
from hlort.importers.stablehlo.mlir_lexer import Token

if TYPE_CHECKING:
    from hlort.importers.stablehlo.mlir_parser import Parser

_SCALAR_TYPE_RE = re.compile(r"(?:i|ui|si)\d+|f\d+|bf16|tf32|index|f8E\w+")


class AttributeParser:
    """Attribute parsing for :class:`~.mlir_parser.Parser` (which provides the token helpers)."""

    # -- attributes ---------------------------------------------------------------------------
    def parse_attr_dict(self) -> dict[str, Any]:
        self.expect("{")
        return dict(self.items_until("}", self._attr_entry, "to close the attribute dictionary"))

    def _attr_entry(self) -> tuple[str, Any]:
        """``name = value`` (or a bare ``name``, meaning true) in an attribute dictionary."""
        tok = self.next()
        if tok.kind == "string":
            key = tok.text[1:-1]
        elif tok.kind == "ident":
            key = tok.text
        else:
            self.fail(f"expected an attribute name, got {self.describe(tok)}", tok)
        return key, self.parse_attr_value() if self.accept("=") else True

    def parse_attr_value(self) -> Any:
        tok = self.peek()
        kind = tok.kind
        if kind == "dense":
            self.next()
            self.expect(":", "after a dense literal (its type)")
            t = self.parse_type()
            fail = lambda msg: self.error(msg, tok.pos)  # noqa: E731
            return ast.DenseAttr(t, decode_dense(tok.extra, t, fail), tok.extra[:60])
        if kind in ("int", "float", "hex"):
            self.next()
            value: int | float = float(tok.text) if kind == "float" else int(tok.text, 0)
            if self.at(":") and _SCALAR_TYPE_RE.fullmatch(self.peek(1).text):
                self.next()
                t = self.parse_type()
                if kind == "float" or t.name.startswith(("f", "bf")):
                    value = float(value) if kind != "hex" else value
                elif isinstance(value, int):
                    value = ast.TypedInt(value, t.name)  # a typed-FFI attribute keeps its type
            return value
        if kind == "string":
            self.next()
            return _unescape(tok.text[1:-1])
        if kind == "symbol":
            self.next()
            name = self.symbol_name(tok)
            while self.accept("::"):
                name += "::" + self.symbol_name(self.expect_kind("symbol", "a nested symbol"))
            return ast.SymbolRef(name)
        if kind == "hash":
            return self.parse_dialect_attr()
        if self.at("["):
            self.next()
            return self.items_until("]", self.parse_attr_value, "to close the list")
        if self.at("{"):
            return self.parse_attr_dict()
        if kind == "ident":
            if tok.text in ("true", "false"):
                self.next()
                return tok.text == "true"
            if tok.text == "unit":
                self.next()
                return True
            if tok.text == "array" and self.at("<", 1):
                return self.parse_dense_array()
            if tok.text == "loc" and self.at("(", 1):
                self.skip_location()
                return None
            if tok.text in ("dense_resource", "affine_map", "sparse"):
                self.fail(f"{tok.text}<...> attributes are not supported")
        if kind in ("tensor", "ident", "bang") or self.at("("):
            return ast.TypeAttr(self.parse_type())
        self.fail(f"expected an attribute value, got {self.describe()}")

    def parse_dense_array(self) -> tuple:
        """``array<i64: 1, 2>`` -> (1, 2); ``array<i1: true>`` -> (True,)."""
        self.next()
        self.expect("<")
        element = self.parse_type()
        if not self.accept(":"):
            self.expect(">", "to close array<...>")
            return ()

        def value() -> Any:
            tok = self.next()
            if tok.kind == "int" or tok.kind == "hex":
                return int(tok.text, 0)
            if tok.kind == "float":
                return float(tok.text)
            if tok.text in ("true", "false"):
                return tok.text == "true"
            self.fail(f"bad element {self.describe(tok)} in array<{element}: ...>", tok)

        return tuple(self.items_until(">", value, "to close array<...>"))

    def parse_dialect_attr(self) -> Any:
        """``#stablehlo<kind VALUE>``, ``#stablehlo.conv<...>``, ``#x.y<key = value, ...>``."""
        tok = self.next()
        name = tok.text[1:]
        if not self.at("<"):
            return ast.StructAttr(name, {})  # an alias like #loc1: nothing to interpret
        self.next()
        if "." not in name:
            kind = self.expect_kind("ident", "an enum kind").text
            value = self.next().text
            self.expect(">", f"to close #{name}<{kind} ...>")
            return ast.EnumAttr(name, kind, value)
        if name.endswith(".conv"):
            return self.parse_conv_dims(tok)
        if not (
            self.peek().kind == "ident" and (self.at("=", 1) or self.at(",", 1) or self.at(">", 1))
        ):
            return self._opaque_dialect_attr(name)  # e.g. #sdy.sharding<@mesh, [{}, {}]>

        def field() -> tuple[str, Any]:
            key = self.next()
            if key.kind != "ident":
                self.fail(f"expected a field name in #{name}<...>, got {self.describe(key)}", key)
            return key.text, self.parse_attr_value() if self.accept("=") else True

        return ast.StructAttr(name, dict(self.items_until(">", field, f"to close #{name}<...>")))

    def _opaque_dialect_attr(self, name: str) -> ast.StructAttr:
        """Skip a dialect attribute hlort does not interpret, keeping its text."""
        start = self.peek().pos
        depth = 1
        while depth:
            tok = self.next()
            if tok.kind == "eof":
                self.fail(f"unterminated #{name}<...>")
            if tok.kind == "punct" and tok.text == "<":
                depth += 1
            elif tok.kind == "punct" and tok.text == ">":
                depth -= 1
        text = self.source.text[start : self.toks[self.i - 1].pos]
        return ast.StructAttr(name, {"raw": text})

    def parse_conv_dims(self, tok: Token) -> ast.ConvDimsAttr:
        if self.accept("raw"):

            def field() -> tuple[str, Any]:
                key = self.expect_kind("ident", "a field name").text
                self.expect("=")
                return key, self.parse_attr_value()

            return conv_dims_from_fields(self, dict(self.items_until(">", field)), tok)
        lists = [self.parse_conv_labels()]
        self.expect("x", "between the input and kernel dimension labels")
        lists.append(self.parse_conv_labels())
        self.expect("->")
        lists.append(self.parse_conv_labels())
        self.expect(">", "to close #stablehlo.conv<...>")
        return ast.ConvDimsAttr(*lists)

    def parse_conv_labels(self) -> tuple[str, ...]:
        self.expect("[")
        return tuple(self.items_until("]", lambda: self.next().text))


def conv_dims_from_fields(p: Parser, fields: dict[str, Any], tok: Token) -> ast.ConvDimsAttr:
    """The ``raw`` spelling of conv dimension numbers, turned into label lists."""
    try:
        rank = 2 + len(fields["input_spatial_dimensions"])
        inp, ker, out = ["?"] * rank, ["?"] * rank, ["?"] * rank
        inp[fields["input_batch_dimension"]] = "b"
        inp[fields["input_feature_dimension"]] = "f"
        ker[fields["kernel_input_feature_dimension"]] = "i"
        ker[fields["kernel_output_feature_dimension"]] = "o"
        out[fields["output_batch_dimension"]] = "b"
        out[fields["output_feature_dimension"]] = "f"
        for labels, key in ((inp, "input"), (ker, "kernel"), (out, "output")):
            for n, d in enumerate(fields[f"{key}_spatial_dimensions"]):
                labels[d] = str(n)
    except (KeyError, IndexError, TypeError) as err:
        p.fail(f"bad raw convolution dimension numbers: {err}", tok)
    return ast.ConvDimsAttr(tuple(inp), tuple(ker), tuple(out))


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in '"\\':
                out.append(nxt)
                i += 2
                continue
            if nxt == "n":
                out.append("\n")
                i += 2
                continue
            hexpair = text[i + 1 : i + 3]
            if len(hexpair) == 2 and all(ch in "0123456789abcdefABCDEF" for ch in hexpair):
                out.append(chr(int(hexpair, 16)))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)
