"""The corpus runner: comparisons, case splitting, outcomes, the report, and main()'s exit codes."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from hlort.testdata import Summary, compare, op_name, run_files, split_cases, ulp_difference
from hlort.testdata.comparisons import Mismatch
from hlort.testdata_runner import main, run_testdata

JAX_STYLE = """// RUN: stablehlo-opt -inline %s | stablehlo-translate --interpret
module @jit_main attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> (tensor<3xf32> {jax.result_info = ""}) {
    %0 = call @inputs() : () -> tensor<3xf32>
    %1 = call @expected() : () -> tensor<3xf32>
    %2 = stablehlo.abs %0 : tensor<3xf32>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : CHECK_TYPES
    return %2 : tensor<3xf32>
  }
  func.func private @inputs() -> tensor<3xf32> {
    %cst = stablehlo.constant dense<[-1.0, 2.0, -3.5]> : tensor<3xf32>
    return %cst : tensor<3xf32>
  }
  func.func private @expected() -> tensor<3xf32> {
    %cst = stablehlo.constant dense<EXPECTED> : tensor<3xf32>
    return %cst : tensor<3xf32>
  }
}
""".replace("CHECK_TYPES", "(tensor<3xf32>, tensor<3xf32>) -> ()")

HAND_WRITTEN = """// RUN: stablehlo-translate --interpret -split-input-file %s

func.func @add_op_test() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %1 = stablehlo.add %0, %0 : tensor<2xi64>
  check.expect_eq_const %1, dense<[2, 4]> : tensor<2xi64>
  func.return
}

// -----

func.func @wrong_answer() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf64>
  check.expect_almost_eq_const %0, dense<[1.0, 2.5]> : tensor<2xf64>
  func.return
}

// -----

func.func @needs_collectives() {
  %0 = stablehlo.constant dense<1> : tensor<i64>
  %1 = "stablehlo.infeed"(%0) : (tensor<i64>) -> tensor<i64>
  func.return
}
"""


def test_ulp_difference_follows_stablehlo():
    one = np.float32(1.0)
    next_up = np.nextafter(one, np.float32(2))
    a = np.array([one, 0.0, -0.0, np.nan, np.inf, one], np.float32)
    b = np.array([next_up, -0.0, np.float32(1e-45), np.nan, np.float32(3e38), -one], np.float32)
    diff = ulp_difference(a, b)
    assert list(diff[:4]) == [1, 0, 1, 0]
    assert diff[4] == np.iinfo(np.uint64).max
    assert diff[5] == 2 * int(one.view(np.uint32))


def test_close_almost_eq_and_eq():
    x = np.array([1.0, 2.0], np.float32)
    y = np.array([1.0, np.nextafter(np.float32(2), np.float32(3))], np.float32)
    assert compare("close", x, y) is None
    assert compare("close", x, y, min_ulp=2, max_ulp=3) is not None
    assert compare("eq", np.array([np.nan]), np.array([np.nan])) is None
    assert compare("almost_eq", np.array([5.0]), np.array([5.0001]), tolerance=1e-3) is None
    assert compare("almost_eq", np.array([0.0]), np.array([1e-9]), tolerance=1) is None
    # StableHLO's rule: values of different signs are never "almost equal" (-0 counts)
    assert isinstance(compare("almost_eq", np.array([-0.0]), np.array([1e-9]), 1), Mismatch)
    assert isinstance(compare("almost_eq", np.array([-1e-9]), np.array([1e-9]), 1), Mismatch)
    assert compare("close", np.array([1, 2]), np.array([1, 3])) is not None  # ints: exact
    c = np.array([1 + 1j], np.complex64)
    assert compare("close", c, c + np.complex64(1e-3j)) is not None
    bf = np.array([1.0], ml_dtypes.bfloat16)
    assert compare("close", bf, bf) is None
    assert "shape" in compare("eq", np.zeros(2), np.zeros(3))


def test_scalar_mismatches_are_reported():
    """0-d values keep their shape through ulp_difference, so a scalar check reports index []."""
    assert ulp_difference(np.float32(1), np.float32(2)).shape == ()
    problem = compare("close", np.float32(1), np.float32(2))
    assert isinstance(problem, Mismatch) and problem.index == ()
    assert "ULP difference 8388608" in str(problem)


def test_mismatch_names_index_got_and_expected():
    problem = compare("eq", np.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 5]]))
    assert problem.index == (1, 1)
    assert str(problem) == "index [1, 1]: got 4, expected 5"


def test_split_cases_and_names(tmp_path):
    cases = split_cases("x.mlir", "tests/interpret/x.mlir", HAND_WRITTEN)
    assert [c.name for c in cases] == ["add_op_test", "wrong_answer", "needs_collectives"]
    assert [c.id for c in cases][1] == "tests/interpret/x.mlir#1"
    assert cases[1].text.count("\n") > 12  # padded: line numbers are the file's
    disabled = split_cases(
        "y.mlir",
        "y.mlir",
        "// RUN-DISABLED(inaccurate) stablehlo-opt %s\nfunc.func @main() {\n  func.return\n}\n",
    )
    assert disabled[0].skipped == "RUN-DISABLED(inaccurate)"


def test_op_names_from_file_names():
    assert op_name("testdata/abs_float32_20_20.mlir") == "abs"
    assert op_name("testdata/reduce_window_add_bfloat16_4_6.mlir") == "reduce_window_add"
    assert op_name("testdata/dot_general_int8_4_3_float16_3_6.mlir") == "dot_general"
    assert op_name("tests/interpret/chlo/mulhi.mlir") == "mulhi"


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corpus"
    (root / "testdata").mkdir(parents=True)
    (root / "testdata" / "abs_float32_3.mlir").write_text(
        JAX_STYLE.replace("EXPECTED", "[1.0, 2.0, 3.5]")
    )
    (root / "testdata" / "abs_float32_bad.mlir").write_text(
        JAX_STYLE.replace("EXPECTED", "[1.0, 2.0, 3.25]")
    )
    (root / "testdata" / "abs_float32_disabled.mlir").write_text(
        JAX_STYLE.replace("// RUN:", "// RUN-DISABLED(inaccurate):").replace("EXPECTED", "0.0")
    )
    (root / "tests").mkdir()
    (root / "tests" / "hand.mlir").write_text(HAND_WRITTEN)
    return root


@pytest.mark.parametrize("jobs", [0, 2])
def test_run_files_reports_every_kind_of_outcome(corpus, jobs):
    summary = run_testdata(
        [str(corpus / "testdata"), str(corpus / "tests")], jobs=jobs, root=str(corpus)
    )
    status = {o.id: o.status for o in summary.outcomes}
    assert status == {
        "testdata/abs_float32_disabled.mlir": "skipped",
        "testdata/abs_float32_3.mlir": "pass",
        "testdata/abs_float32_bad.mlir": "fail",
        "tests/hand.mlir#0": "pass",
        "tests/hand.mlir#1": "fail",
        "tests/hand.mlir#2": "unsupported",
    }
    bad = {o.id: o.message for o in summary.failed}
    assert "index [2]: got 3.5, expected 3.25" in bad["testdata/abs_float32_bad.mlir"]
    assert "ULP difference" in bad["testdata/abs_float32_bad.mlir"]
    assert "index [1]" in bad["tests/hand.mlir#1"]
    assert summary.counts == {"pass": 2, "fail": 2, "unsupported": 1, "skipped": 1}
    assert summary.by_op["abs"] == {"pass": 1, "fail": 1, "unsupported": 0, "skipped": 1}
    assert "infeed" in summary.to_text()


def test_timeouts_and_dead_workers_are_failures(tmp_path, monkeypatch):
    slow = tmp_path / "slow.mlir"
    slow.write_text("func.func @main() {\n  func.return\n}\n")
    import hlort.testdata.scheduler as scheduler

    def hang(path, relpath, platform):
        import time

        time.sleep(30)

    monkeypatch.setattr(scheduler, "run_file", hang)
    outcomes = run_files([(str(slow), "slow.mlir")], jobs=1, timeout=0.5)
    assert outcomes[0].status == "fail" and "timeout" in outcomes[0].message


def test_main_exit_codes_and_reports(corpus, tmp_path, capsys):
    report = tmp_path / "report.json"
    good = str(corpus / "testdata" / "abs_float32_3.mlir")
    assert main([good, "--jobs", "0", "--report", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["counts"]["pass"] == 1 and data["cases"][0]["status"] == "pass"
    assert main([str(corpus / "testdata"), "--jobs", "1"]) == 1
    assert "abs_float32_bad.mlir" in capsys.readouterr().out
    assert main([str(tmp_path / "missing.mlir")]) == 2
    assert main(["--no-such-flag"]) == 2
    text_report = tmp_path / "report.txt"
    main([good, "--jobs", "0", "--report", str(text_report)])
    assert "1 cases: 1 pass" in text_report.read_text()


def test_other_platforms_go_through_compile(corpus, capsys):
    good = str(corpus / "testdata" / "abs_float32_3.mlir")
    import hlort

    if not hasattr(hlort, "compile"):
        pytest.skip("no plugin runtime in this installation")
    assert main([good, "--platform", "no-such-platform"]) == 2
    assert "no-such-platform" in capsys.readouterr().err
    summary = run_testdata([good], jobs=0, platform="interpreter")
    assert summary.counts["pass"] == 1


def test_summary_pass_rate_ignores_skipped():
    from hlort.testdata.execution import Outcome

    summary = Summary([Outcome("a", "a", "x", "pass"), Outcome("b", "b", "x", "skipped")])
    assert summary.pass_rate == 1.0 and summary.ok
