"""Test cases of a StableHLO testdata corpus: files, ``// -----`` chunks, and their names.

Two styles exist: JAX-generated files (one ``@main`` per file, comparing with ``@expected()``)
and hand-written interpreter tests (several ``func.func @name`` cases split at ``// -----``).
A file whose interpreter ``RUN`` line is written ``RUN-DISABLED`` is skipped, as StableHLO does.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

_SPLIT = re.compile(r"^// -----.*$", re.MULTILINE)
_DISABLED = re.compile(r"^//\s*RUN-DISABLED(?:\(([^)]*)\))?", re.MULTILINE)
_RUN_INTERPRET = re.compile(r"^//\s*RUN:.*--interpret", re.MULTILINE)
_FUNC = re.compile(r"func\.func\s+(?:public\s+|private\s+)?@([\w.$-]+)")
_DTYPE_WORDS = re.compile(
    r"^(?:bool|u?int\d+|float\d+|bfloat16|complex\d+|f\d+|bf16|i\d+|ui\d+|c\d+|dynamic|shape|"
    r"q[iu]\d+|\d+)$"
)


@dataclass
class Case:
    """One runnable unit: a whole file, or one ``// -----`` chunk of it."""

    path: str  # as given (or found under a given directory)
    relpath: str  # relative to the corpus root, for reports
    index: int  # chunk number (0 for single-case files)
    count: int  # chunks in the file
    name: str  # the case's function name, or the file stem
    text: str  # padded with newlines so line numbers match the file
    skipped: str | None = None  # why it is skipped (RUN-DISABLED reason)

    @property
    def id(self) -> str:
        return self.relpath if self.count == 1 else f"{self.relpath}#{self.index}"

    @property
    def op(self) -> str:
        return op_name(self.relpath)


def op_name(relpath: str) -> str:
    """The op a file tests, from its name: ``abs_float32_20_20.mlir`` -> ``abs``,
    ``reduce_window_add_bfloat16_4_6.mlir`` -> ``reduce_window_add``, ``chlo/mulhi.mlir`` ->
    ``mulhi``."""
    stem = Path(relpath).stem
    words = stem.split("_")
    kept = []
    for word in words:
        if kept and _DTYPE_WORDS.match(word):
            break
        kept.append(word)
    return "_".join(kept) or stem


def find_files(paths: list[str], root: str | None = None) -> list[tuple[str, str]]:
    """``(path, relpath)`` of every ``.mlir`` file under ``paths`` (files taken as given),
    sorted. ``relpath`` is relative to ``root`` when given, else to each directory's parent."""
    found: list[tuple[str, str]] = []

    def rel(full: Path, default_base: Path) -> str:
        base = Path(root) if root is not None else default_base
        try:
            return str(full.resolve().relative_to(base.resolve()))
        except ValueError:
            return str(full)

    for given in paths:
        p = Path(given)
        if p.is_dir():
            for dirpath, _, files in os.walk(p):
                for f in files:
                    if f.endswith(".mlir"):
                        full = Path(dirpath) / f
                        found.append((str(full), rel(full, p.parent)))
        elif p.exists():
            found.append((str(p), rel(p, p.parent)))
        else:
            raise FileNotFoundError(given)
    return sorted(found, key=lambda t: t[1])


def split_cases(path: str, relpath: str, text: str) -> list[Case]:
    """The cases of one file. Chunks are padded so their line numbers are the file's."""
    skipped = None
    disabled = _DISABLED.search(text)
    if disabled and not _RUN_INTERPRET.search(text):
        skipped = "RUN-DISABLED" + (f"({disabled.group(1)})" if disabled.group(1) else "")
    pieces = []
    start = 0
    for m in _SPLIT.finditer(text):
        pieces.append((start, text[start : m.start()]))
        start = m.end()
    pieces.append((start, text[start:]))
    pieces = [(s, chunk) for s, chunk in pieces if _has_code(chunk)]
    cases = []
    for index, (offset, chunk) in enumerate(pieces):
        pad = "\n" * text.count("\n", 0, offset)
        names = _FUNC.findall(chunk)
        name = ("main" if "main" in names else names[-1]) if names else Path(relpath).stem
        cases.append(Case(path, relpath, index, len(pieces), name, pad + chunk, skipped))
    return cases


def _has_code(chunk: str) -> bool:
    """False for a chunk of only comments and blank lines (e.g. a file's RUN header)."""
    return any(line.strip() and not line.lstrip().startswith("//") for line in chunk.splitlines())


def load_cases(paths: list[str], root: str | None = None) -> list[Case]:
    cases: list[Case] = []
    for path, relpath in find_files(paths, root):
        text = Path(path).read_text()
        cases.extend(split_cases(path, relpath, text))
    return cases
