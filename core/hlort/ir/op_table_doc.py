"""docs/ops.md's op table, generated from the op table (one row per OpDef).

``python -m hlort.ir.op_table_doc docs/ops.md`` rewrites the part between the markers;
``--check`` exits 1 when the committed page is stale (tests/ir/test_op_table.py checks it too).
"""

from __future__ import annotations

import sys
from pathlib import Path

from hlort.ir.op_def import BITS, INT, NUMBER, OPTIONAL, AttrDef, OpDef
from hlort.ir.opcodes import Opcode

BEGIN = (
    "<!-- op table: generated from hlort.ir.opcodes by "
    "`python -m hlort.ir.op_table_doc docs/ops.md`; edit the table there -->"
)
END = "<!-- end of the generated op table -->"

_FAMILY_ORDER = ("pred", "sint", "uint", "float", "complex")


def describe_types(types: frozenset[str] | None) -> str:
    """``{"sint", "uint", "pred"}`` -> ``bits`` (the family words of the page's conventions)."""
    if types is None:
        return "see below"
    words = [k for k in _FAMILY_ORDER if k in types]
    if set(types) >= NUMBER:
        words = ["number"] + (["pred"] if "pred" in types else [])
    elif set(types) >= BITS:
        words = ["bits"] + [w for w in words if w not in BITS]
    elif set(types) >= INT:
        words = ["int"] + [w for w in words if w not in INT]
    return ", ".join(words)


def _attr_text(a: AttrDef) -> str:
    text = f"`{a.key}: {a.type}"
    if a.has_default:
        text += f" = {_value_text(a.default)}"
    elif a.default is OPTIONAL:
        text += "?"
    text += "`"
    if a.text != a.key.rsplit(".", 1)[-1]:
        text += f" (text `{a.text}`)"
    return text


def _value_text(value) -> str:
    if hasattr(value, "value") and isinstance(value.value, str):
        return value.value
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value).lower() if isinstance(value, bool) else repr(value)


def _properties(d: OpDef) -> str:
    flags = [
        name.replace("_", " ")
        for name in ("commutative", "side_effect", "expensive", "reuses_operand")
        if getattr(d, name)
    ]
    if d.stablehlo:
        flags.append("stablehlo 1:1")
    return ", ".join(flags) or "-"


def _row(op: Opcode) -> str:
    d = op.info
    operands = "variadic" if d.arity is None else str(d.arity)
    attrs = "<br>".join(_attr_text(a) for a in d.attrs) or "-"
    called = ", ".join(f"`{c}`" for c in d.called) or "-"
    fusion = d.fusion.value
    cells = [
        f"`{op.value}`",
        operands,
        attrs,
        called,
        describe_types(d.types),
        d.numerics.value,
        fusion,
        _properties(d),
    ]
    return "| " + " | ".join(cells) + " |"


def op_table_markdown() -> str:
    """The generated table, markers included."""
    lines = [
        BEGIN,
        "",
        "| op | operands | attributes (`key: type = default`, `?` optional) | calls "
        "| element types | numerics | fusion | properties |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [_row(op) for op in Opcode]
    lines += ["", END]
    return "\n".join(lines)


def render(page: str) -> str:
    """``page`` with the text between the markers replaced by the current table."""
    start = page.find(BEGIN)
    end = page.find(END)
    if start < 0 or end < start:
        raise ValueError("the page has no generated op table markers")
    return page[:start] + op_table_markdown() + page[end + len(END) :]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"] or ["docs/ops.md"]
    stale = False
    for path in map(Path, paths):
        page = path.read_text()
        new = render(page)
        if new != page:
            stale = True
            if not check:
                path.write_text(new)
    if check and stale:
        print("docs/ops.md's op table is stale: run python -m hlort.ir.op_table_doc docs/ops.md")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
