"""The stack-frame tables of XLA's HLO dumps (``FileNames`` ... ``StackFrames``), parsed.

Between the ``HloModule`` header and the first computation, current XLA
(``jax.jit(f).lower(x).compile().as_text()``, ``--xla_dump_to``) prints::

    FileNames
    1 "model.py"
    FunctionNames
    1 "loss"
    FileLocations
    1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=8 end_column=31}
    StackFrames
    1 {file_location_id=1 parent_frame_id=1}

Each table is a keyword and rows ``ID VALUE``; a location or frame is ``{key=int ...}``
(space-separated; keys this parser does not know are skipped, so a newer XLA's extra fields
load). The result is :class:`hlort.ir.stack_frames.StackFrameIndex`.
"""

from __future__ import annotations

from dataclasses import fields

from hlort.ir.stack_frames import FileLocation, StackFrame, StackFrameIndex
from hlort.text.lexer import Lexer

TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_LOCATION_FIELDS = {f.name for f in fields(FileLocation)}
_FRAME_FIELDS = {f.name for f in fields(StackFrame)}
_LOCATION_NEEDS = {"file_name_id", "function_name_id"}


def parse_stack_frame_tables(lex: Lexer) -> StackFrameIndex | None:
    """The tables at the cursor (any order, each once), or None when there are none."""
    index = StackFrameIndex()
    seen: set[str] = set()
    while True:
        lex.skip()
        table_pos = lex.pos
        table = _table_keyword(lex)
        if table is None:
            break
        if table in seen:
            lex.error(f"the {table} table is given twice", table_pos)
        seen.add(table)
        while lex.peek_char().isdigit():
            row_pos = lex.pos
            row_id = lex.integer(f"a {table} row id")
            rows = _rows(index, table)
            if row_id in rows:
                lex.error(f"{table} row {row_id} is given twice", row_pos)
            if table in ("FileNames", "FunctionNames"):
                rows[row_id] = lex.string(f"the quoted name of {table} row {row_id}")
            elif table == "FileLocations":
                values = _record(lex, table, row_id, row_pos, _LOCATION_FIELDS, _LOCATION_NEEDS)
                rows[row_id] = FileLocation(**values)
            else:
                values = _record(lex, table, row_id, row_pos, _FRAME_FIELDS, _FRAME_FIELDS)
                rows[row_id] = StackFrame(**values)
    return index if seen else None


def _table_keyword(lex: Lexer) -> str | None:
    """A table's keyword, consumed, when one is next (not a computation of that name)."""
    start = lex.pos
    for table in TABLES:
        if lex.keyword(table):
            nxt = lex.peek_char()
            if nxt.isdigit() or nxt == "" or _next_is_table(lex):
                return table
            lex.pos = start  # e.g. a computation called FileNames: "FileNames (p: f32[]) ..."
            return None
    return None


def _next_is_table(lex: Lexer) -> bool:
    return any(lex.text.startswith(t, lex.pos) for t in TABLES)


def _rows(index: StackFrameIndex, table: str) -> dict:
    return {
        "FileNames": index.file_names,
        "FunctionNames": index.function_names,
        "FileLocations": index.file_locations,
        "StackFrames": index.frames,
    }[table]


def _record(
    lex: Lexer, table: str, row_id: int, row_pos: int, known: set[str], needed: set[str]
) -> dict[str, int]:
    lex.expect("{", f"'{{' opening {table} row {row_id}")
    values: dict[str, int] = {}
    while not lex.accept("}"):
        key = lex.name(f"a field of {table} row {row_id} or '}}'")
        lex.expect("=", f"'=' after {key} in {table} row {row_id}")
        value = lex.integer(f"the integer value of {key} in {table} row {row_id}")
        if key in known:
            values[key] = value
    missing = sorted(needed - set(values))
    if missing:
        lex.error(f"{table} row {row_id} lacks {', '.join(missing)}", row_pos)
    return values
