"""The suite against a deliberately broken plugin (fakes/conformance_fakes.py): each bug is
reported with a message that says what differs and how to fix or declare it; declared
failures become xfail (and fail the run in strict mode once they pass); the report shows it.

One run of a selection of the suite serves most tests here (each run costs seconds).
"""

from __future__ import annotations

import pytest
from suite_runner import run_suite

from hlort.plugin.versioning import API_VERSION

SELECTION = " or ".join(
    [
        "add-f32",
        "add-s32-edges",
        "sort-f32-ascending",
        "sort-s8-empty",
        "fft-c64",
        "fft-f32",
        "test_use_after_delete",
        "serializ",
        "unsupported_ops_are_unimplemented",
        "multiply-f32-edges",
        "subtract-s32-edges",
    ]
)


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory):
    return run_suite(
        "broken", "-k", SELECTION, "-rs", tmp_path=tmp_path_factory.mktemp("broken"), fakes=True
    )


def test_the_run_fails(broken_run):
    assert broken_run.returncode == 1, broken_run.output


def test_wrong_results_name_the_case_the_values_and_the_module(broken_run):
    out = broken_run.output
    assert "add-f32-edges on broken differs from the reference interpreter" in out
    assert "ulp apart" in out and "got " in out and "expected " in out
    assert "module:" in out and "add(" in out  # the HLO, to reproduce it


def test_undeclared_unimplemented_op_fails_and_says_how_to_declare_it(broken_run):
    assert "broken raised UNIMPLEMENTED for sort-f32-ascending" in broken_run.output
    assert "unsupported={'op:sort:f32': 'why'}" in broken_run.output


def test_use_after_delete_must_be_failed_precondition(broken_run):
    assert (
        "to_host after delete succeeded; it must raise FAILED_PRECONDITION naming"
        in broken_run.output
    )


def test_declared_unsupported_ops_and_features_are_skipped_with_their_reason(broken_run):
    assert "declared unsupported (op:fft): no FFT unit" in broken_run.output
    assert broken_run.report["ops"]["fft"] == {"c64": "unsupported", "f32": "unsupported"}
    tests = {t["name"]: t for t in broken_run.report["tests"]}
    assert tests["test_declared_unsupported_ops_are_unimplemented"]["outcome"] == "pass"
    serial = [t for t in tests.values() if "serializ" in t["name"]]
    assert serial and all(t["outcome"] == "unsupported" for t in serial)
    assert all("feature:serialization" in t["message"] for t in serial)


def test_expected_failures_are_xfail_and_unexpected_passes_xpass(broken_run):
    assert broken_run.report["ops"]["multiply"] == {"f32": "xfail"}
    assert broken_run.report["ops"]["subtract"] == {"s32": "xpass"}


def test_report_files_hold_the_op_table_and_the_failures(broken_run):
    report = broken_run.report
    # the fake inherits the interpreter plugin's api_version, which is the core's
    assert (
        report["platform"] == "broken"
        and report["plugin_api_version"] == f"{API_VERSION[0]}.{API_VERSION[1]}"
    )
    assert report["strict"] is False and report["quick"] is False
    assert report["ops"]["add"] == {"f32": "fail", "s32": "pass"}
    assert report["ops"]["sort"] == {"f32": "fail", "s8": "fail"}
    summary = report["summary"]
    # add-f32: edges, random, scalar fail (empty has nothing to differ); 2 sorts; delete
    assert summary["fail"] == 3 + 2 + 1, summary
    assert summary["xfail"] == 1 and summary["xpass"] == 1 and summary["unsupported"] >= 6
    md = broken_run.markdown
    assert "# Conformance report: `broken`" in md
    assert "| add | " in md and "**FAIL**" in md and "## Failures" in md
    assert "### `test_op[add-f32-edges]` (fail)" in md


def test_strict_mode_fails_on_an_unexpected_pass(suite):
    strict = suite(
        "broken", "-k", "multiply-f32-edges or subtract-s32-edges", "--hlort-strict", fakes=True
    )
    assert strict.returncode == 1, strict.output
    assert "XPASS(strict)" in strict.output and "declared, but it works" in strict.output
    assert strict.report["strict"] is True
    assert strict.report["ops"] == {"multiply": {"f32": "xfail"}, "subtract": {"s32": "xpass"}}
    assert strict.report["summary"]["xpass"] == 1


def test_profile_entries_that_match_nothing_stop_the_run(suite):
    run = suite("broken", "-k", "add-s32-edges", fakes=True, env={"HLORT_BROKEN_PROFILE_TYPO": "1"})
    assert run.returncode == 4, run.output
    assert "unsupported['op:no-such-op']: no HLO opcode matches 'no-such-op'" in run.output


def test_a_platform_that_does_not_exist_is_a_usage_error(suite):
    run = suite("nosuchplatform", "-k", "add-s32-edges")
    assert run.returncode == 4, run.output
    assert "platform 'nosuchplatform' cannot start" in run.output and "NOT_FOUND" in run.output
