"""The progress bar of ``hlort conformance`` (``--hlort-progress``, which the CLI passes when its
stderr is a terminal): one bar over the suite's tests instead of pytest's dots, which stay for
failures (``F``, ``E``); pytest's summary and failure reports are unchanged.

pytest captures file descriptors 1 and 2 while tests run, so the bar is drawn with capturing
suspended (the capture manager's ``global_and_fixture_disabled``, as pytest's live logging
does), on the terminal the run started with.
"""

from __future__ import annotations

import contextlib

import pytest

from hlort.testing.progress_bar import ProgressBar


class ConformanceProgress:
    def __init__(self, config: pytest.Config, platform: str, is_suite_item) -> None:
        self.config = config
        self.platform = platform
        self.is_suite_item = is_suite_item
        self.bar: ProgressBar | None = None
        self.failed = 0

    def _uncaptured(self):
        capman = self.config.pluginmanager.getplugin("capturemanager")
        return capman.global_and_fixture_disabled() if capman else contextlib.nullcontext()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        total = sum(1 for item in items if self.is_suite_item(item))
        with self._uncaptured():
            self.bar = ProgressBar(total, f"conformance of {self.platform}", "test")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.bar is None or not self.bar.shown:
            return
        done = report.when == "call" or (report.when == "setup" and not report.passed)
        if not done:
            return
        self.failed += report.failed
        with self._uncaptured():
            self.bar.update(1, f"{self.failed} failed" if self.failed else None)

    def pytest_report_teststatus(self, report: pytest.TestReport):
        """Passes and skips print nothing while the bar shows them."""
        if self.bar is None or not self.bar.shown or report.failed:
            return None
        if report.when == "call" and report.passed and not hasattr(report, "wasxfail"):
            return "passed", "", ""
        if report.skipped:
            return ("xfailed" if hasattr(report, "wasxfail") else "skipped"), "", ""
        return None

    def pytest_sessionfinish(self) -> None:
        if self.bar is not None:
            with self._uncaptured():
                self.bar.close()
