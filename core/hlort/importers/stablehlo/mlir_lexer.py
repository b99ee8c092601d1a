"""A regex tokenizer for MLIR text.

One compiled alternation splits the whole file in a single pass, which keeps a megabyte of JAX
output well under a second. Two tokens are deliberately coarse so the parser stays fast and simple:
``dense<...>`` is one token holding its raw body (decoded later with NumPy), and ``tensor<2x3x``
is one token holding the dimension prefix (MLIR's own lexer treats ``2x3xf32`` specially too).
"""

from __future__ import annotations

import bisect
import re

from hlort import limits
from hlort.errors import ParseError
from hlort.lazy_dataclass import dataclass

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<dense>dense<(?P<dense_body>[^<>]*)>)
  | (?P<tensor>tensor<(?P<tensor_dims>(?:(?:\d+|\?)x)*))
  | (?P<value>%[A-Za-z0-9_.$\-]+(?:\#\d+)?)
  | (?P<symbol>@(?:[A-Za-z0-9_.$\-]+|"[^"\n]*"))
  | (?P<label>\^[A-Za-z0-9_.$\-]+)
  | (?P<hash>\#[A-Za-z_][A-Za-z0-9_.$]*)
  | (?P<bang>![A-Za-z_][A-Za-z0-9_.$]*)
  | (?P<hex>0x[0-9A-Fa-f]+)
  | (?P<float>[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+))
  | (?P<int>[-+]?\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<punct>->|::|[()\[\]{}<>,:=*?+\-|])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Token:
    """``kind`` is the regex group name; ``text`` the exact source; ``pos`` its offset."""

    kind: str
    text: str
    pos: int
    extra: str = ""  # dense: the body; tensor: the dims prefix


EOF = "eof"


class SourceMap:
    """Turns offsets into 1-based (line, column) for error messages."""

    def __init__(self, text: str, source_name: str):
        self.text = text
        self.source_name = source_name
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_col(self, pos: int) -> tuple[int, int]:
        index = bisect.bisect_right(self._starts, pos) - 1
        return index + 1, pos - self._starts[index] + 1

    def error(self, message: str, pos: int) -> ParseError:
        line, col = self.line_col(pos)
        return ParseError(message, line, col, self.source_name)


_OPENERS = frozenset("([{<")
_CLOSERS = frozenset(")]}>")


def tokenize(text: str, source: SourceMap) -> list[Token]:
    """All tokens of ``text`` (comments and whitespace dropped), ending with an ``eof`` token.

    Brackets may nest at most :func:`hlort.limits.max_nesting` deep: the parser and the
    converter recurse once per level, so deeper text is refused here with its line:col."""
    tokens: list[Token] = []
    append = tokens.append
    pos = 0
    depth = 0
    max_depth = limits.max_nesting()
    end = len(text)
    match = _TOKEN_RE.match
    while pos < end:
        m = match(text, pos)
        if m is None:
            raise source.error(f"unexpected character {text[pos]!r}", pos)
        kind = m.lastgroup
        if kind == "dense_body":
            kind = "dense"
        elif kind == "tensor_dims":
            kind = "tensor"
        if kind != "ws":
            if kind == "dense":
                append(Token(kind, m.group(), pos, m.group("dense_body")))
            elif kind == "tensor":
                append(Token(kind, m.group(), pos, m.group("tensor_dims")))
                depth += 1
                if depth > max_depth:
                    raise source.error(_too_deep(max_depth), pos)
            else:
                tok_text = m.group()
                append(Token(kind, tok_text, pos))
                if kind == "punct":
                    if tok_text in _OPENERS:
                        depth += 1
                        if depth > max_depth:
                            raise source.error(_too_deep(max_depth), pos)
                    elif tok_text in _CLOSERS and depth:
                        depth -= 1
        pos = m.end()
    append(Token(EOF, "", end))
    return tokens


def _too_deep(limit: int) -> str:
    return (
        f"brackets nested more than {limit} deep (types, regions or attributes); "
        "flatten the program, or raise HLORT_MAX_NESTING"
    )
