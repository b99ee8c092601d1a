"""Literals of ``constant(...)``: parsing into NumPy arrays and printing the way XLA does.

Array literals are converted in bulk: braces and comments are blanked out (keeping offsets, so
errors still point at the right column) and the numbers are read by NumPy in C. Only literals
holding what NumPy cannot read (``-nan``, ``nan(0x...)`` payloads, hex floats, out-of-range
values) take the per-element path, which is also what reports a bad element precisely.

Floats print in the shortest form that reads back to the same bits; NaNs keep their sign
(``-nan``) and a non-default payload (``nan(0x1)``), as XLA's RoundTripFpToString does.
An elided literal (``{...}``, which XLA prints when large constants are not requested) parses
as zeros: the values are not in the text.
"""

from __future__ import annotations

import math
import re

import numpy as np

from hlort import limits
from hlort.dtypes import DType, finfo, iinfo
from hlort.shape import ArrayShape, Shape, TupleShape
from hlort.text.lazy_pattern import LazyPattern
from hlort.text.lexer import Lexer

_SCALAR = LazyPattern(
    r"[-+]?(?:nan(?:\(0x[0-9a-fA-F]+\))?|inf|true|false|0[xX][0-9a-fA-F.]+(?:[pP][-+]?\d+)?"
    r"|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
)
_ELEMENT = LazyPattern(r"[^\s,]+")
_PAIR = LazyPattern(rf"\(\s*({_SCALAR.pattern})\s*,\s*({_SCALAR.pattern})\s*\)")
_COMMENT = LazyPattern(r"/\*.*?\*/", re.S)
_BLANK_BRACES = str.maketrans("{}", "  ")
_BLANK_PARENS = str.maketrans("()", "  ")
_NAN = LazyPattern(r"([-+]?)nan(?:\((0x[0-9a-fA-F]+)\))?$")


# -- parsing --------------------------------------------------------------------------------
def parse_literal(lex: Lexer, shape: Shape):
    """The literal at the cursor for a constant of ``shape``: an ndarray, or a tuple of them."""
    if isinstance(shape, TupleShape):
        lex.expect("(", "'(' opening a tuple literal")
        values = []
        for i, element in enumerate(shape.elements):
            if i:
                lex.expect(",", f"',' before element {i} of the tuple literal")
            values.append(parse_literal(lex, element))
        lex.expect(")", "')' closing the tuple literal")
        return tuple(values)
    if not isinstance(shape, ArrayShape):
        lex.error(f"constants of shape {shape} are not supported")
    lex.skip()
    if not shape.dims:
        return _parse_scalar_at(lex, shape.dtype)
    limits.check_constant_size(shape.nbytes, f"constant of shape {shape}", fail=lex.error_here)
    pos = lex.pos
    if lex.text.startswith("{...}", pos):
        lex.pos += 5
        return np.zeros(shape.dims, dtype=shape.dtype.numpy)
    if not lex.text.startswith("{", pos):
        lex.expected(f"'{{' opening the literal of {shape}")
    end = lex.literal_brace_end(pos)
    lex.pos = end
    return array_from_text(lex, lex.text[pos:end], pos, shape)


def _parse_scalar_at(lex: Lexer, dt: DType) -> np.ndarray:
    if dt.is_complex:
        lex.expect("(", f"'(' opening a {dt.name} value such as (1, 2)")
        real = _scalar_token(lex)
        lex.expect(",", "',' between the real and imaginary parts")
        imag = _scalar_token(lex)
        lex.expect(")", "')' closing the complex value")
        comp = dt.component
        out = np.empty((), dtype=dt.numpy)
        out.real = _element_array([real], comp, lex)[0]
        out.imag = _element_array([imag], comp, lex)[0]
        return out
    lex.skip()
    start = lex.pos
    tok = _scalar_token(lex)
    return _element_array([tok], dt, lex, [start]).reshape(())


def _scalar_token(lex: Lexer) -> str:
    lex.skip()
    m = _SCALAR.match(lex.text, lex.pos)
    if m is None:
        lex.expected("a number, true/false, nan or inf")
    lex.pos = m.end()
    return m.group()


def array_from_text(lex: Lexer, body: str, pos: int, shape: ArrayShape) -> np.ndarray:
    """Convert the brace-nested literal ``body`` (found at ``pos``) to an array of ``shape``."""
    dt = shape.dtype
    size = math.prod(shape.dims)
    if "/*" in body:
        body = _COMMENT.sub(lambda m: " " * len(m.group()), body)
    _check_nesting(lex, body, pos, shape, size)
    flat = body.translate(_BLANK_BRACES)
    if dt.is_complex:
        values = _fast_convert(flat.translate(_BLANK_PARENS), dt, 2 * size)
        if values is None:
            tokens, offsets = _complex_tokens(lex, flat, pos)
    else:
        values = _fast_convert(flat, dt, size)
        if values is None:
            tokens, offsets = [], []
            for m in _ELEMENT.finditer(flat):
                tokens.append(m.group())
                offsets.append(pos + m.start())
    if values is None:
        per = 2 if dt.is_complex else 1
        if len(tokens) != size * per:
            lex.error(f"literal of {shape} has {len(tokens) // per} elements; expected {size}", pos)
        values = _element_array(tokens, dt.component, lex, offsets)
    if dt.is_complex:
        pairs = values.reshape(-1, 2)
        out = np.empty(size, dtype=dt.numpy)
        out.real = pairs[:, 0]
        out.imag = pairs[:, 1]
        values = out
    return values.reshape(shape.dims)


def _complex_tokens(lex: Lexer, flat: str, pos: int) -> tuple[list[str], list[int]]:
    tokens, offsets = [], []
    for m in _PAIR.finditer(flat):
        tokens += [m.group(1), m.group(2)]
        offsets += [pos + m.start(1), pos + m.start(2)]
    junk = re.search(r"[^\s,]", _PAIR.sub(lambda m: " " * len(m.group()), flat))
    if junk is not None:
        lex.error("expected complex values written (real, imag)", pos + junk.start())
    return tokens, offsets


def _check_nesting(lex: Lexer, body: str, pos: int, shape: ArrayShape, size: int) -> None:
    braces = np.frombuffer("".join(re.findall(r"[{}]", body)).encode(), dtype=np.uint8)
    depth = np.cumsum(np.where(braces == ord("{"), 1, -1))
    deepest = int(depth.max()) if depth.size else 0
    if deepest > shape.rank or (size and deepest != shape.rank):
        lex.error(
            f"literal nests braces {deepest} deep; a literal of {shape} nests {shape.rank} deep",
            pos,
        )


def _fast_convert(flat: str, dt: DType, count: int) -> np.ndarray | None:
    """Bulk conversion in C, or None when the text needs the per-element path."""
    try:
        if dt.is_pred:
            tokens = flat.replace(",", " ").split()
            arr = np.array(tokens)
            if arr.size != count or not np.isin(arr, ("true", "false", "1", "0")).all():
                return None
            return ((arr == "true") | (arr == "1")).astype(np.bool_)
        if dt.is_integer:
            if dt.name == "u64":
                if "-" in flat:
                    return None
                arr = np.fromstring(flat, dtype=np.uint64, sep=",")
                big = np.iinfo(np.uint64).max
                if arr.size != count or (arr == big).any():
                    return None
                return arr
            arr = np.fromstring(flat, dtype=np.int64, sep=",")
            info = iinfo(dt)
            if arr.size != count or (arr.size and (arr.min() < info.min or arr.max() > info.max)):
                return None
            if dt.name == "s64" and ((arr == info.max) | (arr == info.min)).any():
                return None  # NumPy saturates on overflow; recheck exactly
            return arr.astype(dt.numpy)
        if "nan" in flat or "x" in flat:
            return None
        arr = np.fromstring(flat, dtype=np.float64, sep=",")
        if arr.size != count:
            return None
        comp = dt.component.numpy
        with np.errstate(over="ignore"):
            out = arr.astype(comp)
        if not np.array_equal(np.isinf(out), np.isinf(arr)):
            return None
        return out
    except ValueError:
        return None


def _element_array(
    tokens: list[str], dt: DType, lex: Lexer, offsets: list[int] | None = None
) -> np.ndarray:
    """Per-element conversion with exact range checks; errors point at the element."""
    out = np.empty(len(tokens), dtype=dt.numpy)
    for i, tok in enumerate(tokens):
        where = offsets[i] if offsets else None
        if not _SCALAR.fullmatch(tok):
            lex.error(f"{tok!r} is not a {dt.name} value", where)
        if dt.is_pred:
            if tok not in ("true", "false", "1", "0"):
                lex.error(f"{tok!r} is not a pred value; write true or false", where)
            out[i] = tok in ("true", "1")
        elif dt.is_integer:
            try:
                value = int(tok, 0) if tok.lstrip("+-").startswith(("0x", "0X")) else int(tok)
            except ValueError:
                lex.error(f"{tok!r} is not an integer ({dt.name})", where)
            info = iinfo(dt)
            if not info.min <= value <= info.max:
                lex.error(f"{tok} is out of range for {dt.name} [{info.min}, {info.max}]", where)
            out[i] = value
        else:
            nan = _NAN.match(tok)
            if nan is not None:
                out[i : i + 1] = _nan(dt, nan.group(1) == "-", nan.group(2))
                continue
            body = tok.lstrip("+-")
            try:
                value = float.fromhex(tok) if body.startswith(("0x", "0X")) else float(tok)
            except ValueError:
                lex.error(f"{tok!r} is not a {dt.name} value", where)
            with np.errstate(over="ignore"):
                out[i] = value
            if math.isfinite(value) and not np.isfinite(out[i]):
                lex.error(f"{tok} is out of range for {dt.name}", where)
    return out


def _float_layout(dt: DType) -> tuple[int, int]:
    """(total bits, mantissa bits) of a floating type."""
    info = finfo(dt)
    return dt.itemsize * 8, int(info.nmant)


def _uint(bits: int) -> type:
    return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]


def _nan(dt: DType, negative: bool, payload: str | None) -> np.ndarray:
    canonical = np.array([np.nan], dtype=np.float64).astype(dt.numpy)
    bits, nmant = _float_layout(dt)
    raw = int(canonical.view(_uint(bits))[0])
    if payload is not None and _has_payload(dt):
        exp_mask = ((1 << bits) - 1) ^ ((1 << nmant) - 1) ^ (1 << (bits - 1))
        value = int(payload, 16) & ((1 << nmant) - 1)
        raw = exp_mask | (value or (1 << (nmant - 1)))
    if negative:
        raw |= 1 << (bits - 1)
    else:
        raw &= ~(1 << (bits - 1))
    return np.array([raw], dtype=_uint(bits)).view(dt.numpy)


def _has_payload(dt: DType) -> bool:
    """Whether XLA prints NaN payloads for ``dt`` (IEEE-like types with an inf encoding)."""
    return dt.name in ("f16", "bf16", "f32", "f64", "f8e5m2")


# -- printing -------------------------------------------------------------------------------
def format_literal(value, shape: Shape) -> str:
    """The text inside ``constant(...)`` for ``value`` of ``shape``."""
    if isinstance(shape, TupleShape):
        parts = [format_literal(v, s) for v, s in zip(value, shape.elements, strict=True)]
        return "(" + ", ".join(parts) + ")"
    arr = np.asarray(value)
    strings = element_strings(arr.reshape(-1), shape.dtype)
    if not shape.dims:
        return strings[0]
    return _nest(strings, shape.dims)


def _nest(strings: list[str], dims: tuple[int, ...]) -> str:
    if len(dims) == 1:
        return "{" + ", ".join(strings) + "}"
    row = dims[-1]
    groups = [strings[i : i + row] for i in range(0, len(strings), row)] if row else []
    if not row:
        groups = [[] for _ in range(math.prod(dims[:-1]))]
    level = ["{ " + ", ".join(g) + " }" if g else "{}" for g in groups]
    for d in reversed(dims[:-1]):
        if d == 0:
            return "{}"
        level = ["{ " + ", ".join(level[i : i + d]) + " }" for i in range(0, len(level), d)]
    return level[0]


def element_strings(flat: np.ndarray, dt: DType) -> list[str]:
    """Each element of a 1-D array as XLA prints it."""
    if dt.is_pred:
        return np.where(flat, "true", "false").tolist()
    if dt.is_integer:
        return list(map(str, flat.tolist()))
    if dt.is_complex:
        comp = dt.component
        re_s = element_strings(np.ascontiguousarray(flat.real), comp)
        im_s = element_strings(np.ascontiguousarray(flat.imag), comp)
        return [f"({r}, {i})" for r, i in zip(re_s, im_s, strict=True)]
    if dt.itemsize <= 2:
        bits = flat.view(_uint(dt.itemsize * 8))
        unique, inverse = np.unique(bits, return_inverse=True)
        texts = [_float_text(v, dt) for v in unique.view(dt.numpy)]
        return [texts[i] for i in inverse.reshape(-1).tolist()]
    return [_float_text(v, dt) for v in flat]


def _float_text(v, dt: DType) -> str:
    x = float(v)
    if math.isnan(x):
        return _nan_text(v, dt)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    if dt.name == "f64":
        text = repr(x)
    elif dt.name == "f32":
        text = str(np.float32(v))
    else:
        text = _shortest(x, dt)
    return text[:-2] if text.endswith(".0") else text


def _shortest(x: float, dt: DType) -> str:
    """Fewest significant digits that read back as the same value of ``dt``."""
    target = np.array([x]).astype(dt.numpy)
    with np.errstate(over="ignore"):
        for digits in range(1, 18):
            text = f"{x:.{digits}g}"
            if np.array([float(text)]).astype(dt.numpy)[0] == target[0]:
                break
    exponent = math.floor(math.log10(abs(x)))
    if -4 <= exponent < 16 and "e" in text:
        text = f"{x:.{max(digits, exponent + 1)}g}"
    return text


def _nan_text(v, dt: DType) -> str:
    bits, nmant = _float_layout(dt)
    raw = int(np.array([v], dtype=dt.numpy).view(_uint(bits))[0])
    text = "-nan" if raw >> (bits - 1) else "nan"
    if _has_payload(dt):
        payload = raw & ((1 << nmant) - 1)
        if payload != 1 << (nmant - 1):
            text += f"(0x{payload:x})"
    return text
