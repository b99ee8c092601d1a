"""Run the conformance suite in a subprocess and read its report (tests of the suite itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

FAKES = Path(__file__).resolve().parent / "fakes"


@dataclass
class SuiteRun:
    returncode: int
    output: str
    report: dict | None
    markdown: str | None


def run_suite(
    platform: str,
    *args: str,
    tmp_path: Path,
    python: str = sys.executable,
    fakes: bool = False,
    env: dict | None = None,
    timeout: float = 600,
) -> SuiteRun:
    """``pytest --pyargs hlort.testing --hlort-platform PLATFORM ARGS`` with a report."""
    report = tmp_path / f"report-{platform}"
    cmd = [
        python,
        "-m",
        "pytest",
        "--pyargs",
        "hlort.testing",
        "--hlort-platform",
        platform,
        "-p",
        "no:cacheprovider",
        "-p",
        "no:hypothesispytest",
        "-q",
        "--hlort-report",
        str(report),
        *args,
    ]
    environ = {k: v for k, v in os.environ.items() if k != "HLORT_PLATFORMS"}
    if fakes:
        cmd[3:3] = ["-p", "conformance_fakes"]
        environ["PYTHONPATH"] = os.pathsep.join(
            [str(FAKES)] + ([environ["PYTHONPATH"]] if environ.get("PYTHONPATH") else [])
        )
    environ.update(env or {})
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=environ, cwd=tmp_path, timeout=timeout
    )
    json_path, md_path = (
        report.with_name(report.name + ".json"),
        report.with_name(report.name + ".md"),
    )
    return SuiteRun(
        proc.returncode,
        proc.stdout + proc.stderr,
        json.loads(json_path.read_text()) if json_path.exists() else None,
        md_path.read_text() if md_path.exists() else None,
    )
