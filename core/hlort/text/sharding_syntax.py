"""The text form of shardings: ``sharding={devices=[2,1]0,1}`` on HLO instructions.

Accepted, as XLA prints them: ``{replicated}``, ``{manual}``, ``{unknown}``,
``{maximal device=N}``, ``{devices=[a,b,...]d0,d1,...}`` with an explicit device list or an
iota list ``<=[N]`` / ``<=[r0,r1]T(p0,p1)``, followed by ``last_tile_dim_replicate`` or
``last_tile_dims={replicated, manual}``; tuples ``{{...}, {...}}``. ``metadata={...}`` inside a
sharding (XLA's op-name provenance) is accepted and dropped. Printing is
:meth:`HloSharding.to_text`; parse(print(s)) == s.
"""

from __future__ import annotations

import re

import numpy as np

from hlort.errors import HlortError, ParseError
from hlort.ir.instruction import Instruction
from hlort.ir.sharding import HloSharding
from hlort.text.lexer import Lexer

_WS = re.compile(r"\s*")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT_LIST = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)*)?\s*\]")
_DEVICE_LIST = re.compile(r"\d+(?:\s*,\s*\d+)*")
_TRANSPOSE = re.compile(r"T\(\s*(\d+(?:\s*,\s*\d+)*)\s*\)")
_INT = re.compile(r"-?\d+")
_PROVENANCE = re.compile(r"(metadata|shard_as|shard_like)\s*=\s*")

SHARDING_KEY = "sharding"


def parse_sharding(text: str, source_name: str = "<sharding>") -> HloSharding:
    """``"{devices=[2,1]0,1}"`` -> HloSharding; PARSE error with line and column otherwise."""
    lex = Lexer(text, source_name)
    sharding = parse_sharding_at(lex)
    lex.skip()
    if not lex.at_end():
        lex.expected("the end of the sharding")
    return sharding


def parse_sharding_at(lex: Lexer) -> HloSharding:
    """One sharding at the cursor (which must be at its ``{``); the cursor moves past it."""
    return _ShardingParser(lex).sharding()


def format_sharding(sharding: HloSharding) -> str:
    return sharding.to_text()


def sharding_of(instr: Instruction) -> HloSharding | None:
    """The instruction's ``sharding=`` attribute, parsed (None when it has none)."""
    raw = instr.extra_attrs.get(SHARDING_KEY)
    if raw is None:
        return None
    return parse_sharding(raw, f"sharding of {instr.name}")


def set_sharding(instr: Instruction, sharding: HloSharding | None) -> None:
    if sharding is None:
        instr.extra_attrs.pop(SHARDING_KEY, None)
    else:
        instr.extra_attrs[SHARDING_KEY] = sharding.to_text()


class _ShardingParser:
    def __init__(self, lex: Lexer):
        self.lex = lex
        self.text = lex.text

    def skip(self) -> None:
        self.lex.pos = _WS.match(self.text, self.lex.pos).end()

    def at(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.lex.pos)

    def expect(self, s: str, what: str) -> None:
        if not self.at(s):
            self.lex.expected(what)
        self.lex.pos += len(s)

    def match(self, pattern: re.Pattern, what: str) -> re.Match:
        self.skip()
        m = pattern.match(self.text, self.lex.pos)
        if m is None:
            self.lex.expected(what)
        self.lex.pos = m.end()
        return m

    def sharding(self) -> HloSharding:
        self.expect("{", "'{' opening a sharding")
        if self.at("{"):  # a tuple sharding
            elements = [self.sharding()]
            while self.at(","):
                self.lex.pos += 1
                elements.append(self.sharding())
            self.expect("}", "',' or '}' closing the tuple sharding")
            return HloSharding.tuple_of(elements)
        if self.at("}"):
            self.lex.pos += 1
            return HloSharding.tuple_of(())
        start = self.lex.pos
        word = self.match(_WORD, "replicated, maximal, manual, unknown or devices=[...]").group()
        if word in ("replicated", "manual", "unknown"):
            result = {
                "replicated": HloSharding.replicate,
                "manual": HloSharding.manual,
                "unknown": HloSharding.unknown,
            }[word]()
        elif word == "maximal":
            self.match(re.compile(r"device\s*="), "'device=' after maximal")
            result = HloSharding.maximal(int(self.match(_INT, "a device id").group()))
        elif word == "devices":
            result = self.tiled(start)
        else:
            self.lex.error(
                f"unknown sharding {word!r}; expected replicated, maximal, manual, unknown or "
                "devices=[...]",
                start,
            )
        self.trailing_attributes()
        self.expect("}", "'}' closing the sharding")
        return result

    def tiled(self, start: int) -> HloSharding:
        self.expect("=", "'=' after devices")
        dims = _ints(self.match(_INT_LIST, "the tile shape [a,b,...]").group(1))
        if not dims:
            self.lex.error("a tiled sharding needs a tile shape with at least one dimension")
        iota = None
        devices: list[int] = []
        if self.at("<="):
            self.lex.pos += 2
            reshape = _ints(self.match(_INT_LIST, "the iota dims [n,...] after '<='").group(1))
            perm = None
            if self.at("T("):
                perm = _ints(self.match(_TRANSPOSE, "a transpose T(p0,p1,...)").group(1))
            iota = (reshape, perm)
        else:
            devices = _ints(
                self.match(_DEVICE_LIST, "the device list after the tile shape").group()
            )
        kinds: tuple[str, ...] = ()
        if self.at("last_tile_dim_replicate"):
            self.lex.pos += len("last_tile_dim_replicate")
            kinds = ("replicated",)
        elif self.at("last_tile_dims"):
            self.lex.pos += len("last_tile_dims")
            self.expect("=", "'=' after last_tile_dims")
            self.expect("{", "'{' opening last_tile_dims")
            names = [self.match(_WORD, "a subgroup kind (replicated, manual)").group()]
            while self.at(","):
                self.lex.pos += 1
                names.append(self.match(_WORD, "a subgroup kind (replicated, manual)").group())
            self.expect("}", "'}' closing last_tile_dims")
            kinds = tuple(names)
        try:
            if iota is not None:
                return HloSharding.iota_tiled(dims, iota[0], iota[1], kinds)
            count = 1
            for d in dims:
                count *= d
            if len(devices) != count:
                self.lex.error(
                    f"tile shape {list(dims)} needs {count} device ids, got {len(devices)}", start
                )
            return HloSharding.tiled(np.asarray(devices).reshape(dims), kinds)
        except HlortError as err:
            if isinstance(err, ParseError):
                raise
            self.lex.error(err.message, start)

    def trailing_attributes(self) -> None:
        """``metadata={...}`` (and other ``key={...}`` provenance) inside a sharding: dropped."""
        while True:
            self.skip()
            m = _PROVENANCE.match(self.text, self.lex.pos)
            if m is None:
                return
            self.lex.pos = m.end()
            if self.at("{"):
                self.lex.pos = self.lex.brace_end(self.lex.pos)
            else:
                self.match(_INT, "a value")


def _ints(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    return tuple(int(v) for v in text.split(","))


def raw_sharding(lex: Lexer) -> str:
    """The parser's hook: check the ``sharding=`` value at the cursor (a bad one is a parse
    error at its position) and return its source text, kept raw so printing gives it back."""
    lex.skip()
    start = lex.pos
    parse_sharding_at(lex)
    return lex.text[start : lex.pos]
