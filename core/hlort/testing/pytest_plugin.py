"""pytest11 entry point of the conformance suite: options, fixtures, profile marks and the report.

Every pytest run in an environment with hlort loads this module, so without
``--hlort-platform`` it only adds its options: it imports nothing heavy and changes no test.
With it, the tests of :mod:`hlort.testing` run against that platform; the plugin's
conformance profile turns declared expected failures into xfail marks (strict with
``--hlort-strict``) and ``--hlort-report FILE`` writes ``FILE.json`` and ``FILE.md``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_SUITE_DIR = Path(__file__).resolve().parent
_SESSION_KEY = pytest.StashKey["object"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hlort", "hlort conformance suite (pytest --pyargs hlort.testing)")
    group.addoption(
        "--hlort-platform",
        metavar="NAME",
        default=None,
        help="run the hlort conformance suite against this platform",
    )
    group.addoption(
        "--hlort-strict",
        action="store_true",
        default=False,
        help="fail when a test the profile expects to fail passes",
    )
    group.addoption(
        "--hlort-quick",
        action="store_true",
        default=False,
        help="run a sample of the op cases (two element types per op)",
    )
    group.addoption(
        "--hlort-progress",
        action="store_true",
        default=False,
        help="one progress bar instead of pytest's dots (hlort conformance on a terminal)",
    )
    group.addoption(
        "--hlort-report",
        metavar="FILE",
        default=None,
        help="write the conformance report to FILE.json and FILE.md",
    )


def is_suite_item(item: pytest.Item) -> bool:
    """Whether ``item`` is one of the suite's tests (cheap: most runs have none)."""
    parent = Path(str(item.path)).parent
    return parent == _SUITE_DIR or (parent.name == "testing" and parent.resolve() == _SUITE_DIR)


def pytest_configure(config: pytest.Config) -> None:
    platform = config.getoption("hlort_platform", default=None)
    if platform is None:
        return
    from hlort.errors import HlortError
    from hlort.testing.conformance_cache import use_own_cache
    from hlort.testing.session import ConformanceSession

    use_own_cache(config)  # not the user's cache (HLORT_CONFORMANCE_CACHE_DIR keeps one)
    try:
        session = ConformanceSession.start(
            platform, strict=config.getoption("hlort_strict"), quick=config.getoption("hlort_quick")
        )
    except HlortError as err:
        raise pytest.UsageError(
            f"hlort conformance: platform {platform!r} cannot start: {err}"
        ) from None
    problems = session.profile.problems()
    if problems:
        raise pytest.UsageError(
            f"hlort conformance: the conformance profile of {platform!r} "
            "has entries that match nothing:\n  " + "\n  ".join(problems)
        )
    config.stash[_SESSION_KEY] = session
    config.pluginmanager.register(ConformanceRun(config, session), "hlort-conformance-run")
    if config.getoption("hlort_progress"):
        from hlort.testing.conformance_progress import ConformanceProgress

        progress = ConformanceProgress(config, platform, is_suite_item)
        config.pluginmanager.register(progress, "hlort-conformance-progress")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.stash.get(_SESSION_KEY, None) is not None:
        return  # ConformanceRun marks the items
    skip = pytest.mark.skip(reason="hlort conformance suite: pass --hlort-platform NAME")
    for item in items:
        if is_suite_item(item):
            item.add_marker(skip)


class ConformanceRun:
    """The hooks of a run with ``--hlort-platform``: marks, outcome records, the report."""

    def __init__(self, config: pytest.Config, session) -> None:
        import hlort
        from hlort.plugin.versioning import API_VERSION, format_version
        from hlort.testing.report import ConformanceReport

        self.config = config
        self.session = session
        self.written: tuple[Path, Path] | None = None
        info = {
            "platform_version": session.client.platform_version,
            "plugin_api_version": format_version(tuple(session.plugin.api_version)),
            "core_api_version": format_version(API_VERSION),
            "hlort_version": hlort.__version__,
            "devices": len(session.devices()),
            "strict": session.strict,
            "quick": session.quick,
        }
        self.report = ConformanceReport(session.platform, info)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            if not is_suite_item(item):
                continue
            reason = self.session.profile.expected_failure(item.nodeid)
            if reason:
                item.add_marker(pytest.mark.xfail(reason=reason, strict=self.session.strict))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        if is_suite_item(item):
            report.user_properties.append(("hlort_suite", True))
            case = getattr(getattr(item, "callspec", None), "params", {}).get("case")
            if case is not None:
                report.user_properties.append(("hlort_op", case.op))
                report.user_properties.append(("hlort_dtype", case.dtype))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if not props.get("hlort_suite"):
            return
        result = _outcome(report)
        if result is None:
            return
        from hlort.testing.report import OutcomeRecord

        self.report.add(
            OutcomeRecord(
                report.nodeid,
                report.nodeid.rsplit("::", 1)[-1],
                result[0],
                result[1],
                props.get("hlort_op"),
                props.get("hlort_dtype"),
                round(report.duration, 4),
            )
        )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self.config.getoption("hlort_report", default=None)
        if path:
            self.written = self.report.write(path)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.report.records:
            return
        counts = ", ".join(f"{n} {k}" for k, n in self.report.summary().items() if n)
        terminalreporter.write_line(f"hlort conformance of {self.report.platform!r}: {counts}")
        if self.written:
            terminalreporter.write_line("report: " + ", ".join(str(p) for p in self.written))


def _outcome(report: pytest.TestReport) -> tuple[str, str] | None:
    """(outcome, message) of one phase, or None when the phase adds nothing."""
    xfail = getattr(report, "wasxfail", None)
    if report.when == "call":
        if report.passed:
            return ("xpass", f"unexpectedly passed: {xfail}") if xfail is not None else ("pass", "")
        if report.skipped:
            return ("xfail", xfail) if xfail is not None else ("unsupported", _skip_reason(report))
        text = report.longreprtext
        return ("xpass", text) if "XPASS(strict)" in text else ("fail", text)
    if report.skipped:
        return "unsupported", _skip_reason(report)
    if report.failed:
        return "error", report.longreprtext
    return None


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


# -- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def hlort_session(request: pytest.FixtureRequest):
    """The platform under test (:class:`hlort.testing.session.ConformanceSession`)."""
    session = request.config.stash.get(_SESSION_KEY, None)
    if session is None:
        pytest.skip("hlort conformance suite: pass --hlort-platform NAME")
    return session


@pytest.fixture(scope="session")
def hlort_client(hlort_session):
    return hlort_session.client


@pytest.fixture(scope="session")
def hlort_device(hlort_session):
    return hlort_session.device


@pytest.fixture
def hlort_second_device(hlort_session):
    """A second device of the client; skips (unsupported) when there is none."""
    devices = hlort_session.devices()
    if len(devices) < 2:
        pytest.skip(
            f"{hlort_session.platform} has {len(devices)} addressable device(s); "
            "multi-device tests need 2"
        )
    return devices[1]


@pytest.fixture
def hlort_require(hlort_session):
    """``hlort_require("serialization")`` skips the test when the feature is unsupported."""

    def require(feature: str) -> None:
        reason = hlort_session.feature_unsupported(feature)
        if reason:
            pytest.skip(reason)

    return require
