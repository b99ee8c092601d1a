"""HLORT_FALLBACK: a cpu executable that runs instructions on the reference interpreter says so.

``warn`` logs one warning per executable naming each instruction and the reason, ``error``
refuses to compile with UNIMPLEMENTED, ``allow`` is quiet; in every mode the executable and
the CLI (``hlort compile``, ``hlort run --profile``) report the count and the reasons.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort.cli import main  # noqa: E402
from hlort.errors import ErrorCode, HlortError  # noqa: E402
from hlort.text import print_module  # noqa: E402


def _exp_sort_module(name: str):
    """A sort by an inexact comparator: the cpu plugin runs it on the interpreter on purpose
    (exp may round differently from NumPy's, which could change the order)."""
    b = Builder(name)
    x = b.parameter(shape.array("f32", [4, 6]))
    sub = b.sub("exp_less")
    p, q = sub.parameter(shape.array("f32", []), "p"), sub.parameter(shape.array("f32", []), "q")
    s = b.sort(x, sub.finish(sub.compare(sub.exp(p), sub.exp(q), "LT")), 1)
    return b.build(b.negate(s))


def _fallback_logs(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "hlort.fallback"]


def test_error_refuses_the_compile_naming_instruction_and_reason(monkeypatch):
    monkeypatch.setenv("HLORT_FALLBACK", "error")
    with pytest.raises(HlortError) as err:
        hlort.compile(_exp_sort_module("refused"), "cpu")
    assert err.value.code is ErrorCode.UNIMPLEMENTED
    message = str(err.value)
    assert "(sort)" in message and "refused" in message and "HLORT_FALLBACK" in message
    assert "the sort kernel has no plan" in message


def test_warn_logs_once_per_executable_and_still_runs(monkeypatch, caplog):
    monkeypatch.setenv("HLORT_FALLBACK", "warn")
    caplog.set_level(logging.WARNING, logger="hlort")
    module = _exp_sort_module("warned")
    exe = hlort.compile(module, "cpu")
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(exe(x), -np.sort(x, axis=1), rtol=1e-6)
    exe(x)
    logs = _fallback_logs(caplog)
    assert len(logs) == 1, [r.getMessage() for r in logs]
    text = logs[0].getMessage()
    assert "1 instruction(s) of module warned" in text and "(sort)" in text
    assert logs[0].levelno == logging.WARNING


def test_warn_is_the_default(monkeypatch, caplog):
    monkeypatch.delenv("HLORT_FALLBACK", raising=False)
    caplog.set_level(logging.WARNING, logger="hlort")
    hlort.compile(_exp_sort_module("by_default"), "cpu")
    assert len(_fallback_logs(caplog)) == 1


def test_allow_is_quiet_but_the_executable_reports(monkeypatch, caplog):
    monkeypatch.setenv("HLORT_FALLBACK", "allow")
    caplog.set_level(logging.DEBUG, logger="hlort")
    exe = hlort.compile(_exp_sort_module("allowed"), "cpu")
    assert _fallback_logs(caplog) == []
    records = exe.raw.fallbacks()
    assert [r.kind for r in records] == ["sort"] and records[0].reason
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 1 and stats["fallback_reasons"] == [str(records[0])]


def test_native_programs_have_no_fallbacks_under_error(monkeypatch, caplog):
    monkeypatch.setenv("HLORT_FALLBACK", "error")
    caplog.set_level(logging.WARNING, logger="hlort")
    b = Builder("native")
    x = b.parameter(shape.array("f32", [8]))
    exe = hlort.compile(b.build(b.exp(b.add(x, x))), "cpu")
    assert exe.raw.fallbacks() == [] and _fallback_logs(caplog) == []


def test_a_bad_policy_is_invalid_argument(monkeypatch):
    monkeypatch.setenv("HLORT_FALLBACK", "sometimes")
    with pytest.raises(HlortError, match="HLORT_FALLBACK='sometimes'.*error, warn, allow") as err:
        hlort.compile(_exp_sort_module("bad_policy"), "cpu")
    assert err.value.code is ErrorCode.INVALID_ARGUMENT


def test_cli_compile_and_profile_print_count_and_reasons(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("HLORT_FALLBACK", "allow")
    path = tmp_path / "sorting.hlo"
    path.write_text(print_module(_exp_sort_module("cli_sort")))
    assert main(["compile", str(path), "--platform", "cpu"]) == 0
    out, err = capsys.readouterr()
    assert "HloModule" in out and "fallbacks: 1" in err and "(sort)" in err
    assert main(["run", str(path), "--platform", "cpu", "--profile"]) == 0
    out, _ = capsys.readouterr()
    assert "fallbacks: 1" in out and "(sort)" in out
    assert main(["run", str(path), "--platform", "cpu", "--profile", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["profile"]["fallbacks"]) == 1


def test_cli_compile_under_error_exits_unsupported(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("HLORT_FALLBACK", "error")
    path = tmp_path / "sorting.hlo"
    path.write_text(print_module(_exp_sort_module("cli_refused")))
    assert main(["compile", str(path), "--platform", "cpu"]) == 3
    assert "UNIMPLEMENTED" in capsys.readouterr().err


def test_error_on_a_cached_program_keeps_the_entry(monkeypatch, tmp_path):
    """A valid cache entry that HLORT_FALLBACK=error refuses on load raises UNIMPLEMENTED and
    stays (it is not damaged; another policy loads it)."""
    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    monkeypatch.setenv("HLORT_FALLBACK", "allow")
    hlort.compile(_exp_sort_module("cached_refused"), "cpu")
    entries = sorted((tmp_path / "executables").rglob("*"))
    entries = [p for p in entries if p.is_file() and p.name != ".hlort-cache"]
    assert len(entries) == 1
    monkeypatch.setenv("HLORT_FALLBACK", "error")
    with pytest.raises(HlortError) as err:
        hlort.compile(_exp_sort_module("cached_refused"), "cpu")
    assert err.value.code is ErrorCode.UNIMPLEMENTED
    assert entries[0].exists()
