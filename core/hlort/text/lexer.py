"""A cursor over HLO text: regex-driven tokens, raw value capture, and positioned errors.

The parser asks for the token it expects at the current position, so most steps are one
compiled-regex match in C; nothing walks the text character by character in Python. Comments
(``/* ... */``, as XLA prints ``/*index=5*/``, and ``// ...``) count as whitespace.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn, TypeVar

from hlort.errors import ParseError
from hlort.text.lazy_pattern import LazyPattern

_SKIP = LazyPattern(r"(?:\s+|/\*.*?\*/|//[^\n]*)*", re.S)
_MAY_SKIP = frozenset(" \t\n\r\f\v/")  # "" is not in it: nothing to skip at the end

ARRAY_SHAPE_PATTERN = r"[a-z][a-z0-9]*\[[^\]\n]*\](?:\{[^{}=%\"\n]*\})?"  # f32[2]{0:T(8)}
NAME_PATTERN = r"%?[A-Za-z_][A-Za-z0-9_.]*(?:-(?!>)[A-Za-z0-9_.]+)*|%[A-Za-z0-9_.][A-Za-z0-9_.\-]*"

# One token; the group name is the kind. Order matters: the longer, more specific forms first.
_TOKEN = LazyPattern(
    rf"""
    (?P<shape>{ARRAY_SHAPE_PATTERN})
   |(?P<dim_labels>[0-9a-z?]+_[0-9a-z?]+->[0-9a-z?]+)
   |(?P<pad>-?\d+_-?\d+(?:_-?\d+)?(?:x-?\d+_-?\d+(?:_-?\d+)?)*)
   |(?P<dxd>\d+(?:x\d+)+)
   |(?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
   |(?P<name>{NAME_PATTERN})
   |(?P<string>"(?:[^"\\]|\\.)*")
   |(?P<arrow>->)
   |(?P<punct>[{{}}()\[\],=:*])
    """,
    re.X,
)
_STRING = LazyPattern(r'"(?:[^"\\]|\\.)*"', re.S)
_FLAT_BRACES = LazyPattern(r'\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}')
_BRACE_OR_QUOTE = LazyPattern(r'[{}"]')
_BARE_VALUE = LazyPattern(r"(?:[^\s,{}()\[\]]|\[[^\]\n]*\])+")  # [2,2]<=[4] is one value
_NAME = LazyPattern(NAME_PATTERN)
_SHAPE_START = LazyPattern(r"[a-z][a-z0-9]*\[")

Item = TypeVar("Item")


class Token:
    """One token: ``kind`` is the regex group name, ``text`` the source, ``pos`` its offset."""

    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind: str, text: str, pos: int):
        self.kind = kind
        self.text = text
        self.pos = pos

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.text!r})"


def describe(text: str, pos: int) -> str:
    """What the reader sees at ``pos``, for 'expected X, found Y' messages."""
    if pos >= len(text):
        return "end of input"
    m = _TOKEN.match(text, pos)
    snippet = m.group() if m else text[pos : pos + 12].split("\n")[0]
    if len(snippet) > 40:
        snippet = snippet[:37] + "..."
    return repr(snippet)


class Lexer:
    """Position in ``text`` plus the token primitives the parser builds on."""

    def __init__(self, text: str, source_name: str = "<text>"):
        self.text = text
        self.source_name = source_name
        self.pos = 0

    # -- errors -------------------------------------------------------------------------------
    def line_col(self, pos: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, pos) + 1
        col = pos - self.text.rfind("\n", 0, pos)
        return line, col

    def error(self, message: str, pos: int | None = None) -> NoReturn:
        if pos is None:
            self.skip()
            pos = self.pos
        line, col = self.line_col(pos)
        raise ParseError(message, line, col, self.source_name)

    def error_here(self, message: str) -> ParseError:
        """The error ``message`` at the cursor, for a caller that raises it."""
        self.skip()
        line, col = self.line_col(self.pos)
        return ParseError(message, line, col, self.source_name)

    def expected(self, what: str, pos: int | None = None) -> NoReturn:
        if pos is None:
            self.skip()
            pos = self.pos
        self.error(f"expected {what}, found {describe(self.text, pos)}", pos)

    # -- primitives ---------------------------------------------------------------------------
    def skip(self) -> None:
        if self.text[self.pos : self.pos + 1] in _MAY_SKIP:
            self.pos = _SKIP.match(self.text, self.pos).end()

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def peek_char(self) -> str:
        self.skip()
        return self.text[self.pos : self.pos + 1]

    def accept(self, punct: str) -> bool:
        """Consume ``punct`` (a literal string) if it is next."""
        self.skip()
        if self.text.startswith(punct, self.pos):
            self.pos += len(punct)
            return True
        return False

    def expect(self, punct: str, what: str | None = None) -> None:
        if not self.accept(punct):
            self.expected(what or repr(punct))

    def items_until(self, close: str, parse_item: Callable[[], Item], what: str) -> list[Item]:
        """``item, item, ...`` up to and including ``close`` (the opening bracket is already
        consumed); a missing separator is reported as "',' or ``close`` in ``what``"."""
        items: list[Item] = []
        if self.accept(close):
            return items
        while True:
            items.append(parse_item())
            if self.accept(close):
                return items
            self.expect(",", f"',' or '{close}' in {what}")

    def peek(self) -> Token | None:
        self.skip()
        m = _TOKEN.match(self.text, self.pos)
        if m is None:
            return None
        return Token(m.lastgroup, m.group(), self.pos)

    def next(self, kind: str, what: str) -> Token:
        """Consume a token of ``kind`` or fail with 'expected ``what``'."""
        self.skip()
        m = _TOKEN.match(self.text, self.pos)
        if m is None or m.lastgroup != kind:
            self.expected(what)
        tok = Token(kind, m.group(), self.pos)
        self.pos = m.end()
        return tok

    def name(self, what: str = "a name") -> str:
        """A name with or without its leading ``%``; returns it without."""
        self.skip()
        m = _NAME.match(self.text, self.pos)
        if m is None:
            self.expected(what)
        self.pos = m.end()
        text = m.group()
        return text[1:] if text[0] == "%" else text

    def keyword(self, word: str) -> bool:
        """Consume ``word`` if the next name is exactly it."""
        self.skip()
        if self.text.startswith(word, self.pos):
            end = self.pos + len(word)
            m = _NAME.match(self.text, self.pos)
            if m is not None and m.end() == end:
                self.pos = end
                return True
        return False

    def at_shape(self) -> bool:
        """Whether a shape starts here: ``(`` of a tuple or ``type[``."""
        self.skip()
        return self.text.startswith("(", self.pos) or bool(_SHAPE_START.match(self.text, self.pos))

    def integer(self, what: str = "an integer") -> int:
        tok = self.next("number", what)
        try:
            return int(tok.text)
        except ValueError:
            self.expected(what, tok.pos)

    def string(self, what: str = "a quoted string") -> str:
        """A C-escaped string literal; returns its decoded value."""
        tok = self.next("string", what)
        return unescape(tok.text[1:-1])

    def raw_value(self) -> str:
        """The source text of one attribute value: a ``{...}`` group, a string or a bare word."""
        self.skip()
        text, pos = self.text, self.pos
        ch = text[pos : pos + 1]
        if ch == "{":
            end = self.brace_end(pos)
        elif ch == '"':
            m = _STRING.match(text, pos)
            if m is None:
                self.error("unterminated string")
            end = m.end()
        else:
            m = _BARE_VALUE.match(text, pos)
            if m is None:
                self.expected("an attribute value")
            end = m.end()
        self.pos = end
        return text[pos:end]

    def literal_brace_end(self, pos: int) -> int:
        """Like :meth:`brace_end` for text without strings (literals): one step per ``}``."""
        text = self.text
        depth = 0
        i = pos
        while True:
            j = text.find("}", i)
            if j < 0:
                self.error("unbalanced '{': no matching '}'", pos)
            depth += text.count("{", i, j) - 1
            i = j + 1
            if depth <= 0:
                return i

    def brace_end(self, pos: int) -> int:
        """Offset just past the ``}`` matching the ``{`` at ``pos`` (strings may hold braces)."""
        text = self.text
        m = _FLAT_BRACES.match(text, pos)
        if m is not None:
            return m.end()
        depth = 0
        i = pos
        while True:
            m = _BRACE_OR_QUOTE.search(text, i)
            if m is None:
                self.error("unbalanced '{': no matching '}'", pos)
            ch = m.group()
            if ch == '"':
                s = _STRING.match(text, m.start())
                if s is None:
                    self.error("unterminated string", m.start())
                i = s.end()
                continue
            depth += 1 if ch == "{" else -1
            i = m.end()
            if depth == 0:
                return i


_SIMPLE_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    '"': '"',
    "'": "'",
    "\\": "\\",
    "?": "?",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
}
_ESCAPE = LazyPattern(r"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|(.))", re.S)


def unescape(body: str) -> str:
    """Undo C escaping (XLA's CEscape: octal bytes for non-ASCII, so decode as UTF-8 bytes)."""
    if "\\" not in body:
        return body
    out = bytearray()
    i = 0
    for m in _ESCAPE.finditer(body):
        out += body[i : m.start()].encode()
        octal, hexa, char = m.groups()
        if octal is not None:
            out.append(int(octal, 8) & 0xFF)
        elif hexa is not None:
            out.append(int(hexa, 16))
        else:
            out += _SIMPLE_ESCAPES.get(char, "\\" + char).encode()
        i = m.end()
    out += body[i:].encode()
    return out.decode("utf-8", errors="surrogateescape")


def escape(value: str) -> str:
    """C-escape ``value`` the way XLA's CEscape does (non-printable and non-ASCII as octal)."""
    out = []
    for byte in value.encode("utf-8", errors="surrogateescape"):
        ch = chr(byte)
        if ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch in "\"'\\":
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)
