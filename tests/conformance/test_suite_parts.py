"""The suite's parts, in process: op-case coverage of the op table, comparisons, profiles,
reports, and that loading the pytest plugin without --hlort-platform costs nothing."""

from __future__ import annotations

import json
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from hlort.ir.opcodes import Opcode
from hlort.ir.verifier import verify_module
from hlort.plugin.conformance_profile import ConformanceProfile, Tolerance
from hlort.testing.comparison import describe_mismatch, ulp_distance
from hlort.testing.op_case import EXEMPT, all_cases, cases_for
from hlort.testing.report import ConformanceReport, OutcomeRecord


def test_every_opcode_has_cases_or_a_reason():
    missing = [op.value for op in Opcode if op not in EXEMPT and not cases_for(op)]
    assert not missing, f"opcodes without conformance cases: {missing}"


def test_cases_are_valid_and_uniquely_named():
    cases = all_cases()
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)) and len(ids) > 3000
    for case in cases[::37]:
        verify_module(case.module)
        first, second = case.inputs(), case.inputs()
        assert all(a.tobytes() == b.tobytes() for a, b in zip(first, second, strict=True))


def test_quick_mode_keeps_every_op_with_at_most_two_types():
    quick = all_cases(quick=True)
    assert {c.op for c in quick} == {c.op for c in all_cases()}
    for op in {c.op for c in quick}:
        assert len({c.dtype for c in quick if c.op == op}) <= 2
    assert len(quick) < len(all_cases()) / 5


def test_every_element_type_is_covered_by_some_op():
    from hlort import dtypes

    assert {c.dtype for c in cases_for(Opcode.ADD)} == {d.name for d in dtypes.ALL_DTYPES}


def test_ulp_distance_crosses_zero_and_ignores_zero_sign():
    a = np.array([0.0, -0.0, 1.0, -np.finfo(np.float32).tiny], np.float32)
    b = np.array(
        [-0.0, 0.0, np.nextafter(np.float32(1), np.float32(2)), np.finfo(np.float32).tiny],
        np.float32,
    )
    assert list(ulp_distance(a, b)) == [0, 0, 1, 2 * 0x800000]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, ml_dtypes.bfloat16, np.complex64])
def test_comparisons(dtype):
    want = np.array([1.0, np.nan, -0.0, np.inf], dtype)
    assert describe_mismatch(want.copy(), want, "exact") is None
    zero_sign = want.copy()
    zero_sign[2] = 0.0
    assert "differ" in describe_mismatch(zero_sign, want, "exact")
    assert "differ" in describe_mismatch(zero_sign, want, "bits")
    assert describe_mismatch(zero_sign, want, "arith") is None
    finite = want.copy()
    finite[1] = 0
    assert "at [1]" in describe_mismatch(finite, want, "arith", Tolerance(rtol=1.0))
    assert "is float16[4], expected float32[4]" in describe_mismatch(
        want.real.astype(np.float16), want.real.astype(np.float32), "bits"
    )


def test_nan_payloads_matter_only_bitwise():
    want = np.array([np.nan], np.float32)
    other = np.array([0x7FC00001], np.uint32).view(np.float32)
    assert describe_mismatch(other, want, "exact") is None
    assert "0x7fc00001" in describe_mismatch(other, want, "bits")


def test_profile_patterns_treat_brackets_literally():
    profile = ConformanceProfile(
        unsupported={"op:fft": "no unit", "dtype:f8*": "no fp8"},
        expected_failures={"test_op[dot-bf16-*]": "bug"},
        tolerances={
            "dot:bf16": Tolerance(rtol=1e-2),
            "dot": Tolerance(ulp=3),
            "*:f16": Tolerance(ulp=5),
        },
    )
    assert (
        profile.unsupported_reason("op:fft:c64", "op:fft") == "declared unsupported (op:fft): "
        "no unit"
    )
    assert profile.unsupported_reason("dtype:f8e5m2")
    assert profile.unsupported_reason("op:dot", "dtype:f32") is None
    assert profile.expected_failure("x/test_ops.py::test_op[dot-bf16-matmul]")
    assert profile.expected_failure("x/test_ops.py::test_op[dot-f32-matmul]") is None
    assert profile.expected_failure("test_op[dotXbf16-matmul]") is None
    assert profile.tolerance_for("dot", "bf16") == Tolerance(rtol=1e-2)
    assert profile.tolerance_for("dot", "f32") == Tolerance(ulp=3)
    assert profile.tolerance_for("add", "f16") == Tolerance(ulp=5)
    assert profile.tolerance_for("add", "f32") is None
    assert profile.problems() == []
    bad = ConformanceProfile(unsupported={"op:dott": "x", "feature:serialisation": "x", "fft": "x"})
    assert len(bad.problems()) == 3


def test_report_cells_show_the_worst_outcome(tmp_path):
    report = ConformanceReport("p", {"strict": False})
    for name, outcome, op, dtype in [
        ("a", "pass", "add", "f32"),
        ("b", "fail", "add", "f32"),
        ("c", "unsupported", "add", "s8"),
        ("d", "pass", None, None),
        ("e", "xfail", "dot", "f32"),
    ]:
        message = "why" if outcome != "pass" else ""
        report.add(OutcomeRecord(name, name, outcome, message, op, dtype))
    report.add(OutcomeRecord("d", "d", "error", "teardown broke"))  # a later phase failed
    assert report.op_table() == {
        "add": {"f32": "fail", "s8": "unsupported"},
        "dot": {"f32": "xfail"},
    }
    assert report.summary()["error"] == 1 and report.summary()["pass"] == 1
    json_path, md_path = report.write(tmp_path / "out" / "r.json")
    assert json_path.name == "r.json" and md_path.name == "r.md"
    assert json.loads(json_path.read_text())["ops"]["add"]["f32"] == "fail"
    md = md_path.read_text()
    assert "| op | s8 | f32 |" in md and "| add | unsup | **FAIL** |" in md
    assert "| dot |  | xfail |" in md and "### `d` (error)" in md


def test_without_the_option_the_plugin_imports_nothing_and_skips_the_suite(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import sys\n\ndef test_nothing_heavy():\n"
        "    light = ('hlort.testing.pytest_plugin',)\n"
        "    heavy = [m for m in sys.modules if m.startswith('hlort.testing.')\n"
        "             and m not in light]\n"
        "    assert heavy == [], heavy\n"
    )
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(probe)]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--pyargs",
        "hlort.testing",
        "-k",
        "add-s32 or round_trip",
        "-rs",
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout
    assert "passed" not in run.stdout and "pass --hlort-platform NAME" in run.stdout
