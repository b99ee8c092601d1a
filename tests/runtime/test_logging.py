"""hlort logs what it decides (logger ``hlort`` and children) and prints nothing itself."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

import hlort
from hlort import log
from hlort.cli import main
from hlort.plugin import selection_log

NEGATE = """HloModule negate4
ENTRY e {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}"""


@pytest.fixture(autouse=True)
def _no_handler_left():
    yield
    log.disable()


def _messages(caplog, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


def test_the_default_backend_and_why_is_logged_once(caplog, monkeypatch):
    monkeypatch.setattr(selection_log, "_said", set())
    with caplog.at_level(logging.INFO, logger="hlort"):
        hlort.default_backend()
        hlort.default_backend()
    said = _messages(caplog, "hlort.registry")
    assert said == ["default backend: interpreter (the highest-priority backend that started)"]


def test_compile_cache_misses_and_hits_are_logged(caplog, monkeypatch, tmp_path):
    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    with caplog.at_level(logging.INFO, logger="hlort"):
        hlort.compile(NEGATE, "interpreter")
        hlort.compile(NEGATE, "interpreter")
    said = _messages(caplog, "hlort.compile")
    assert len(said) == 2, said
    assert said[0].startswith("compile cache miss: negate4 on interpreter")
    assert said[1].startswith("compile cache hit: negate4 on interpreter")


def test_pass_decisions_are_logged_at_debug(caplog):
    with caplog.at_level(logging.DEBUG, logger="hlort"):
        hlort.compile(NEGATE, "interpreter", options={"disable_passes": "cse"})
    said = _messages(caplog, "hlort.passes")
    assert any(m.startswith("pass scheduling on negate4: ") for m in said), said
    assert "pass simplify.cse disabled by the compile options" in said


def test_hlort_log_level_attaches_one_stderr_handler(monkeypatch):
    monkeypatch.setenv("HLORT_LOG_LEVEL", "debug")
    log.configure_from_env()
    log.configure_from_env()  # once
    logger = logging.getLogger("hlort")
    assert logger.level == logging.DEBUG
    assert sum(isinstance(h, logging.StreamHandler) for h in logger.handlers) == 1
    with pytest.raises(ValueError, match="DEBUG, INFO"):
        log.level_named("loud")


def test_cli_verbose_logs_on_stderr_and_keeps_stdout_clean(tmp_path, capsys):
    module = tmp_path / "negate.hlo"
    module.write_text(NEGATE)
    assert main(["-v", "run", str(module), "--platform", "interpreter", "--json"]) == 0
    captured = capsys.readouterr()
    assert "hlort: INFO: hlort.compile: compile cache" in captured.err
    assert captured.out.lstrip().startswith("{")  # the JSON report alone
    log.disable()
    assert main(["run", str(module), "--platform", "interpreter", "--json"]) == 0
    assert "INFO" not in capsys.readouterr().err


def test_complex64_divide_leaks_no_numpy_warning():
    text = """HloModule cdiv
ENTRY e {
  a = c64[3] parameter(0)
  b = c64[3] parameter(1)
  ROOT d = c64[3] divide(a, b)
}"""
    a = np.array([3e38 + 3e38j, 1 + 1j, 1e30j], np.complex64)
    b = np.array([1e-10, 0, 1e-20 + 1e-20j], np.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow in the narrowing cast would raise here
        out = np.asarray(hlort.compile(text, "interpreter")(a, b))
    assert np.all(np.isinf(out.real)) and np.all(np.isinf(out.imag))


def test_lazy_loggers_are_the_named_loggers_and_name_their_caller(caplog):
    lazy = log.lazy_logger("hlort.test_lazy")
    with caplog.at_level(logging.DEBUG, logger="hlort"):
        lazy.debug("d %d", 1)
        lazy.info("i")
        lazy.warning("w")
        try:
            raise ValueError("boom")
        except ValueError:
            lazy.exception("e")
        assert lazy.isEnabledFor(logging.DEBUG)
    records = [r for r in caplog.records if r.name == "hlort.test_lazy"]
    assert [r.getMessage() for r in records] == ["d 1", "i", "w", "e"]
    assert {r.funcName for r in records} == {
        "test_lazy_loggers_are_the_named_loggers_and_name_their_caller"
    }
    assert records[-1].exc_info[0] is ValueError
    assert lazy.logger is logging.getLogger("hlort.test_lazy")


_QUIET_CHILD = """
import sys
from hlort.log import lazy_logger
lazy = lazy_logger("hlort.child")
lazy.debug("unseen"); lazy.info("unseen")
assert not lazy.isEnabledFor(20) and "logging" not in sys.modules
lazy.warning("seen %s", "once")  # Python's last-resort handler shows it
assert "logging" in sys.modules
"""


def test_records_nobody_can_see_do_not_import_logging():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _QUIET_CHILD], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "seen once"
