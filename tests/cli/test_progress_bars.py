"""Progress bars on long runs: shown on a terminal (or HLORT_PROGRESS=1), never in pipes or
files, and what the runs print otherwise is unchanged."""

from __future__ import annotations

import io

import pytest

from hlort.cli_progress import conformance_env, conformance_progress_args
from hlort.testdata_runner import run_testdata
from hlort.testing.progress_bar import ProgressBar, bar_wanted

pytest.importorskip("tqdm")

CASES = """// RUN: stablehlo-translate --interpret -split-input-file %s

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
"""


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_only_on_a_terminal(monkeypatch):
    monkeypatch.delenv("HLORT_PROGRESS", raising=False)
    assert not bar_wanted(io.StringIO())  # a pipe or a file
    assert bar_wanted(_Tty())
    monkeypatch.setenv("HLORT_PROGRESS", "0")
    assert not bar_wanted(_Tty())
    monkeypatch.setenv("HLORT_PROGRESS", "1")
    assert bar_wanted(io.StringIO())


def test_the_bar_counts_and_lines_go_above_it(monkeypatch, capsys):
    monkeypatch.delenv("HLORT_PROGRESS", raising=False)
    stream = _Tty()
    with ProgressBar(3, "work", "item", stream) as bar:
        assert bar.shown
        bar.update(2, "1 failed")
        bar.write("a line")
    assert "work" in stream.getvalue() and "2/3" in stream.getvalue()
    assert "1 failed" in stream.getvalue()
    assert "a line" in capsys.readouterr().out
    quiet = ProgressBar(3, "work", "item", io.StringIO())
    assert not quiet.shown
    quiet.update(1)
    quiet.close()


def test_testdata_shows_a_bar_on_stderr_and_keeps_stdout(tmp_path, monkeypatch, capsys):
    (tmp_path / "cases.mlir").write_text(CASES)
    (tmp_path / "more.mlir").write_text(CASES)
    monkeypatch.setenv("HLORT_PROGRESS", "1")
    summary = run_testdata([str(tmp_path)], "interpreter", jobs=0)
    captured = capsys.readouterr()
    assert "testdata on interpreter" in captured.err and "2/2" in captured.err
    assert "2 failed" in captured.err
    assert captured.out.count("FAIL ") == 2  # failures still printed, on stdout
    assert not summary.ok
    monkeypatch.setenv("HLORT_PROGRESS", "0")
    run_testdata([str(tmp_path)], "interpreter", jobs=0)
    assert capsys.readouterr().err == ""


def test_conformance_asks_for_the_bar_only_on_a_terminal(monkeypatch):
    monkeypatch.delenv("HLORT_PROGRESS", raising=False)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert conformance_progress_args() == [] and conformance_env() == {}
    monkeypatch.setattr("sys.stderr", _Tty())
    assert conformance_progress_args() == ["--hlort-progress", "-q"]
    assert conformance_env()["env"]["HLORT_PROGRESS"] == "1"
