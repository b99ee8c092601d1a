"""Shapes in HLO text: ``f32[2,3]{1,0}``, ``(f32[], (s32[2], token[]))``, and their printing.

Layouts keep only the minor-to-major order; tiling, element size and memory space suffixes
(``{1,0:T(8,128)S(1)}``) are parsed and dropped, because hlort computes in row-major order and
keeps layouts only so that printed text stays close to what was read. Parsed array shapes are
cached by their text: a module repeats the same few shapes thousands of times.
"""

from __future__ import annotations

from hlort import dtypes, limits
from hlort.errors import Unimplemented
from hlort.shape import TOKEN, ArrayShape, Shape, TupleShape
from hlort.text.lexer import Lexer

# XLA element types hlort does not have: named in UNIMPLEMENTED errors, not called syntax errors.
XLA_ONLY_TYPES = frozenset(
    {
        "s1",
        "s2",
        "u1",
        "u2",
        "f4e2m1fn",
        "f8e3m4",
        "f8e4m3",
        "f8e4m3fnuz",
        "f8e4m3b11fnuz",
        "f8e5m2fnuz",
        "f8e8m0fnu",
        "opaque",
    }
)

_CACHE: dict[str, Shape] = {}


def array_shape_from_token(lex: Lexer, text: str, pos: int) -> Shape:
    """The shape spelled by one ``shape`` token (``f32[2,3]{1,0:T(8,128)}`` or ``token[]``)."""
    shape = _CACHE.get(text)
    if shape is not None:
        return shape
    bracket = text.index("[")
    type_name = text[:bracket]
    close = text.index("]", bracket)
    dims_text = text[bracket + 1 : close].strip()
    layout_text = text[close + 1 :]
    if type_name == "token":
        if dims_text:
            lex.error("token shapes have no dimensions: write token[]", pos)
        shape = TOKEN
    else:
        if not dtypes.is_hlo_name(type_name):
            if type_name in XLA_ONLY_TYPES:
                _unimplemented(lex, f"element type {type_name} is not supported by hlort", pos)
            lex.error(f"unknown element type {type_name!r} in shape {text}", pos)
        dims: tuple[int, ...] = ()
        dynamic: tuple[bool, ...] = ()
        if dims_text:
            parts = [p.strip() for p in dims_text.split(",")]
            dynamic = tuple(p.startswith("<=") for p in parts)
            try:
                dims = tuple(int(p[2:] if p.startswith("<=") else p) for p in parts)
            except ValueError:
                if "?" in parts:
                    _unimplemented(
                        lex,
                        f"unbounded dynamic dimension '?' in shape {text}: HLO text needs a "
                        "bound (<=N); StableHLO programs with '?' are refined to their "
                        "argument shapes (hlort.compile)",
                        pos,
                    )
                lex.error(f"bad dimensions in shape {text}", pos)
            if any(d < 0 for d in dims):
                lex.error(f"negative dimension in shape {text}", pos)
        layout = _layout(lex, layout_text, len(dims), text, pos)
        shape = ArrayShape(
            dtypes.from_hlo_name(type_name), dims, layout, dynamic if any(dynamic) else None
        )
    if len(_CACHE) > 100_000:  # a long-lived process parsing many modules
        _CACHE.clear()
    _CACHE[text] = shape
    return shape


def _layout(lex: Lexer, layout_text: str, rank: int, text: str, pos: int):
    if not layout_text:
        return None
    body = layout_text[1:-1].split(":", 1)[0].strip()
    if rank == 0:
        return None
    if not body:
        return None
    try:
        order = tuple(int(p) for p in body.split(","))
    except ValueError:
        lex.error(f"bad layout in shape {text}", pos)
    if sorted(order) != list(range(rank)):
        lex.error(f"layout of {text} is not a permutation of its {rank} dimensions", pos)
    return order


def _unimplemented(lex: Lexer, message: str, pos: int):
    line, col = lex.line_col(pos)
    raise Unimplemented(f"{lex.source_name}:{line}:{col}: {message}")


def parse_shape_at(lex: Lexer, depth: int = 0) -> Shape:
    """A shape at the cursor: an array, ``token[]`` or a (nested) tuple, at most
    :func:`hlort.limits.max_nesting` tuples deep (deeper text is refused, not recursed into)."""
    lex.skip()
    if lex.text.startswith("(", lex.pos):
        if depth >= limits.max_nesting():
            lex.error(
                f"tuple shape nested more than {limits.max_nesting()} deep; flatten the "
                "tuple, or raise HLORT_MAX_NESTING"
            )
        lex.pos += 1
        items = lex.items_until(")", lambda: parse_shape_at(lex, depth + 1), "a tuple shape")
        return TupleShape(tuple(items))
    tok = lex.next("shape", "a shape such as f32[2,3]")
    return array_shape_from_token(lex, tok.text, tok.pos)


# -- printing -------------------------------------------------------------------------------
def default_layout(rank: int) -> tuple[int, ...]:
    return tuple(range(rank - 1, -1, -1))


def shape_text(shape: Shape, with_layout: bool = True) -> str:
    """XLA's spelling; arrays of rank >= 1 get their layout, the default ``{n-1,...,0}`` if none."""
    if isinstance(shape, ArrayShape):
        flags = shape.dynamic or (False,) * len(shape.dims)
        dims = ",".join(f"<={d}" if b else str(d) for d, b in zip(shape.dims, flags, strict=True))
        text = f"{shape.dtype.name}[{dims}]"
        if with_layout and shape.dims:
            layout = shape.layout if shape.layout is not None else default_layout(len(shape.dims))
            text += "{" + ",".join(map(str, layout)) + "}"
        return text
    if isinstance(shape, TupleShape):
        parts = []
        for i, element in enumerate(shape.elements):
            prefix = f"/*index={i}*/" if i and i % 5 == 0 else ""
            parts.append(prefix + shape_text(element, with_layout))
        return "(" + ", ".join(parts) + ")"
    return "token[]"
