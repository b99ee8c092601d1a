"""`hlort testdata --timeout S` and the shared `-v` reach the corpus runner (issue 19 item 10:
the runner had both, the command offered neither)."""

import argparse
import sys
import types

from hlort import cli


def _capture(monkeypatch):
    calls = []
    module = types.ModuleType("hlort.testdata_runner")
    module.main = lambda argv: calls.append(argv) or 0
    monkeypatch.setitem(sys.modules, "hlort.testdata_runner", module)
    return calls


def test_timeout_is_forwarded(monkeypatch):
    calls = _capture(monkeypatch)
    assert cli.main(["testdata", "corpus/", "--timeout", "7.5", "--jobs", "2"]) == 0
    assert calls == [["corpus/", "--jobs", "2", "--timeout", "7.5"]]


def test_without_options_nothing_extra_is_passed(monkeypatch):
    calls = _capture(monkeypatch)
    assert cli.main(["testdata", "a.mlir"]) == 0
    assert calls == [["a.mlir"]]


def test_verbose_of_the_parent_parser_becomes_the_runners_verbose(monkeypatch):
    calls = _capture(monkeypatch)
    args = argparse.Namespace(
        paths=["a.mlir"], platform=None, jobs=None, report=None, timeout=None, option=[], verbose=1
    )
    assert cli.cmd_testdata(args) == 0
    assert calls == [["a.mlir", "--verbose"]]


def test_a_bad_timeout_is_a_usage_error(capsys):
    assert cli.main(["testdata", "a.mlir", "--timeout", "soon"]) == 2
    assert "--timeout" in capsys.readouterr().err
