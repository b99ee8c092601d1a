"""A plugin that cannot load or whose probe misbehaves is reported with who must act and how.

A missing module was reported as the bare ImportError with "reinstall or upgrade it", whether the
plugin's own files were gone or a dependency was never installed (``pip install --no-deps``), and
a probe that raised or returned the wrong type had no fix at all.
"""

import subprocess

import pytest
from fake_site import build_fake_site, hlort_command, subprocess_env

from hlort.plugin.registry import BackendStatus, Registry

ADVICE_SITE = ("hlort_fake_missing_dep", "hlort_fake_ghost", "hlort_fake_probe_raises")


@pytest.fixture(scope="module")
def advice_site(tmp_path_factory):
    return build_fake_site(tmp_path_factory.mktemp("advice_site"), ADVICE_SITE)


@pytest.fixture
def records(advice_site, monkeypatch):
    monkeypatch.syspath_prepend(str(advice_site))
    registry = Registry(environ={}, timeout_s=10.0)
    registry.discover()
    yield {r.name: r for r in registry.records()}
    registry.close()


def test_a_missing_dependency_names_the_module_and_says_to_install_the_requirements(records):
    record = records["fakemissingdep"]
    assert record.status is BackendStatus.FAILED
    assert record.message == (
        "importing it needs the module 'hlort_fake_absent_runtime', which is not installed"
    )
    assert "pip install hlort-fake-missing-dep without --no-deps" in record.fix
    assert "pip install hlort_fake_absent_runtime" in record.fix
    assert "ModuleNotFoundError" in record.detail  # the traceback, for --debug


def test_a_plugin_whose_own_module_is_gone_says_to_reinstall_the_distribution(records):
    record = records["fakeghost"]
    assert record.status is BackendStatus.FAILED
    assert record.message.startswith("its module 'hlort_fake_ghost_files' is not installed")
    assert "metadata is, its files are not" in record.message
    assert "ModuleNotFoundError" not in record.message  # said once, in words
    assert "pip install --force-reinstall hlort-fake-ghost" in record.fix


def test_a_probe_that_raises_is_the_plugins_bug_and_says_how_to_go_on(records):
    record = records["fakeproberaises"]
    assert record.status is BackendStatus.FAILED
    assert "OSError: ioctl on /dev/fakeaccel failed" in record.message
    assert "report it to the plugin's authors" in record.fix
    assert "HLORT_PLATFORMS" in record.fix and "--debug" in record.fix


def test_hlort_devices_prints_each_cause_and_fix_on_one_line(advice_site):
    done = subprocess.run(
        hlort_command("devices"),
        capture_output=True,
        text=True,
        env=subprocess_env(advice_site),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line[:1] != " "}
    assert "fix: install what hlort-fake-missing-dep requires" in lines["fakemissingdep"]
    assert "fix: reinstall hlort-fake-ghost" in lines["fakeghost"]
    assert "fix: a plugin's probe() must answer" in lines["fakeproberaises"]
    assert "Traceback" not in done.stdout + done.stderr
