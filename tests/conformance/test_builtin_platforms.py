"""The whole suite passes on the built-in ``interpreter`` platform (through ``hlort
conformance``): the one full run in ``make test``. The ``template`` plugin, whose kernels are the
interpreter's functions, runs the suite's plumbing tests and every op's quick sample (strict,
with its report); cpu and tpusim run the quick sample twice on one cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from hlort.ir.opcodes import Opcode
from hlort.plugin.registry import default_registry
from hlort.testing.op_case import EXEMPT


def test_hlort_conformance_passes_on_the_interpreter(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "HLORT_PLATFORMS"}
    cmd = [
        sys.executable,
        "-m",
        "hlort.cli",
        "conformance",
        "--platform",
        "interpreter",
        "--report",
        "out/interpreter",
        "--junit-xml",
        "interpreter.xml",
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    report = json.loads((tmp_path / "out" / "interpreter.json").read_text())
    assert report["platform"] == "interpreter" and report["summary"]["pass"] > 3500
    assert report["summary"]["fail"] == report["summary"]["error"] == 0
    assert "| dot | " in (tmp_path / "out" / "interpreter.md").read_text()
    suite = ET.parse(tmp_path / "interpreter.xml").getroot().find("testsuite")
    assert int(suite.get("tests")) > 3500
    assert int(suite.get("failures")) == int(suite.get("errors")) == 0


def test_the_template_passes_its_plumbing_and_every_op_strictly(suite):
    """Every test of the suite that is not an op case (compile, buffers, events, devices,
    serialization, concurrency, multi-device) and every op at its quick sample, strictly: the
    template's own code is the plumbing; its kernels are the interpreter's (run in full above)."""
    if "template" not in {r.name for r in default_registry().records()}:
        pytest.skip("hlort-template is not installed (make venv installs plugins/*)")
    run = suite("template", "--hlort-strict", "--hlort-quick")
    assert run.returncode == 0, run.output[-3000:]
    report = run.report
    assert report["summary"]["fail"] == report["summary"]["error"] == 0
    assert report["summary"]["pass"] > 450 and report["devices"] == 2
    assert report["quick"] is True and report["strict"] is True
    ops = report["ops"]
    assert set(ops) == {op.value for op in Opcode if op not in EXEMPT}
    assert all(outcome == "pass" for row in ops.values() for outcome in row.values())
    assert "| dot | " in run.markdown


@pytest.mark.parametrize("platform", ["cpu", "tpusim"])
def test_a_quick_sample_passes_twice_on_one_cache(tmp_path, platform):
    """cpu and tpusim in CI (the full runs are `make conformance`): a cold run, then the same
    run answered by the persistent cache, whose executables must behave like fresh ones."""
    if platform not in {r.name for r in default_registry().records()}:
        pytest.skip(f"hlort-{platform} is not installed (make venv installs plugins/*)")
    env = {k: v for k, v in os.environ.items() if k != "HLORT_PLATFORMS"}
    env["HLORT_CACHE_DIR"] = str(tmp_path / "cache")
    cmd = [sys.executable, "-m", "hlort.cli", "conformance", "--platform", platform, "--quick"]
    for run_number in (1, 2):
        run = subprocess.run(
            cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900
        )
        assert run.returncode == 0, f"run {run_number}: {(run.stdout + run.stderr)[-3000:]}"
        assert " passed" in run.stdout and "failed" not in run.stdout.splitlines()[-1]
