"""The fixed corpus sample: where the corpus is, which files are in the sample, what they gave.

``sample_expected.txt`` holds one line per file: ``relative/path.mlir<TAB>outcomes`` where
outcomes lists each case's status in order (``pass``, ``fail``, ``unsupported``, ``skipped``),
comma-separated. ``make_sample.py`` writes it; ``test_corpus_sample.py`` checks against it.
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from pathlib import Path

from hlort.testdata import op_name

REPO_ROOT = Path(__file__).resolve().parents[2]
EXPECTED = Path(__file__).with_name("sample_expected.txt")
RANK = {"pass": 3, "skipped": 2, "unsupported": 1, "fail": 0}


def corpus_root() -> Path | None:
    """$HLORT_STABLEHLO_TESTDATA, else ``<repo>/../shared/stablehlo-testdata``, if present."""
    override = os.environ.get("HLORT_STABLEHLO_TESTDATA")
    root = Path(override) if override else REPO_ROOT.parent / "shared" / "stablehlo-testdata"
    return root if (root / "testdata").is_dir() else None


def all_files(root: Path) -> list[str]:
    found = []
    for sub in ("testdata", "tests"):
        for path in (root / sub).rglob("*.mlir"):
            found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _key(relpath: str) -> str:
    return hashlib.sha256(relpath.encode()).hexdigest()


def choose_sample(
    files: list[str], count: int = 300, max_bytes: int = 400_000, root: Path | None = None
) -> list[str]:
    """A deterministic sample: every hand-written interpreter test, one JAX-generated file per op
    (the one with the smallest path hash), then the files with the smallest hashes up to
    ``count``; files over ``max_bytes`` are left out so the sample stays fast."""

    def small(f: str) -> bool:
        return root is None or (root / f).stat().st_size <= max_bytes

    chosen = {f for f in files if f.startswith("tests/") and small(f)}
    by_op: dict[str, list[str]] = defaultdict(list)
    for f in files:
        if f.startswith("testdata/") and f.count("/") == 1 and small(f):
            by_op[op_name(f)].append(f)
    chosen |= {min(group, key=_key) for group in by_op.values()}
    for f in sorted(files, key=_key):
        if len(chosen) >= count:
            break
        if small(f):
            chosen.add(f)
    return sorted(chosen)


def read_expected(path: Path = EXPECTED) -> dict[str, list[str]]:
    expected = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            relpath, outcomes = line.split("\t")
            expected[relpath] = outcomes.split(",")
    return expected


def write_expected(results: dict[str, list[str]], path: Path = EXPECTED) -> None:
    lines = ["# relative/path.mlir<TAB>status of each case; written by make_sample.py"]
    lines += [f"{relpath}\t{','.join(statuses)}" for relpath, statuses in sorted(results.items())]
    path.write_text("\n".join(lines) + "\n")


def run_sample(root: Path, relpaths: list[str], jobs: int = 2) -> dict[str, list[str]]:
    from hlort.testdata import run_files

    files = [(str(root / r), r) for r in relpaths]
    outcomes = run_files(files, "interpreter", jobs=jobs, timeout=60.0)
    results: dict[str, list[str]] = defaultdict(list)
    messages: dict[str, list[str]] = defaultdict(list)
    for o in outcomes:
        results[o.relpath].append(o.status)
        messages[o.relpath].append(o.message)
    run_sample.messages = messages  # type: ignore[attr-defined]
    return dict(results)
