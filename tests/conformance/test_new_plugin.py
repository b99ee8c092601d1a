"""``hlort new-plugin``: the renamed copy of the template is complete, installs with pip into a
fresh environment, is discovered, passes a representative sample of the conformance suite (the
template itself runs the suite's plumbing and every op: test_builtin_platforms.py), and
uninstalls cleanly."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from suite_runner import run_suite

from hlort import cli
from hlort.errors import ErrorCode, HlortError
from hlort.plugin.new_plugin import camel, create, rename

# One op of each kind (elementwise, transcendental, contraction, convolution, reduction, indexed
# update, control flow, comparator-driven) at its quick sample, and the device tests.
SAMPLE_OPS = ("add", "exponential", "dot", "convolution", "reduce", "scatter", "while", "sort")
SAMPLE = " or ".join(["test_devices", *(f"test_op[{op}-" for op in SAMPLE_OPS)])

LEFTOVER = re.compile(
    r"hlort_template|hlort-template|HLORT_TEMPLATE|Template[A-Z]|"
    r"[\"'`]template[\"'`]|--platform template|template:\d"
)


def test_the_copy_renames_every_identifier(tmp_path):
    target = create("acme", tmp_path / "acme")
    assert target == tmp_path / "acme"
    files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert "pyproject.toml" in files and "README.md" in files
    assert "hlort_acme/plugin.py" in files and "tests/test_arena.py" in files
    assert not any("template" in f or "__pycache__" in f or "egg-info" in f for f in files)
    for name in files:
        text = (target / name).read_text()
        assert not LEFTOVER.search(text), f"{name}: {LEFTOVER.search(text).group()!r} left"
    project = tomllib.loads((target / "pyproject.toml").read_text())["project"]
    assert project["name"] == "hlort-acme"
    assert project["entry-points"]["hlort.plugins"] == {"acme": "hlort_acme:AcmePlugin"}
    plugin = (target / "hlort_acme" / "plugin.py").read_text()
    assert 'PLATFORM = "acme"' in plugin and "class AcmePlugin(Plugin)" in plugin


def test_names_are_renamed_as_identifiers():
    assert camel("my_chip") == "MyChip" and camel("acme") == "Acme"
    text = 'class TemplateDevice: kind = "template-device"  # the template; template:0'
    assert rename(text, "my_chip") == (
        'class MyChipDevice: kind = "my_chip-device"  # the template; my_chip:0'
    )


def test_bad_names_and_existing_targets_are_rejected(tmp_path, capsys):
    for name in ("Acme", "9lives", "my-chip", "template", "interpreter", ""):
        with pytest.raises(HlortError) as info:
            create(name, tmp_path)
        assert info.value.code is ErrorCode.INVALID_ARGUMENT
    create("acme", tmp_path / "acme")
    assert cli.main(["new-plugin", "acme", "--dest", str(tmp_path / "acme")]) == 2
    assert "ALREADY_EXISTS" in capsys.readouterr().err
    assert cli.main(["new-plugin", "beta", "--dest", str(tmp_path / "beta")]) == 0
    assert "pip install -e" in capsys.readouterr().out and (tmp_path / "beta").is_dir()


def _venv(tmp_path: Path) -> Path:
    """A fresh venv that also sees this environment's packages (hlort, pytest, numpy...)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    parent = sysconfig.get_paths()["purelib"]
    Path(site.stdout.strip(), "_hlort_parent_env.pth").write_text(
        f"import site; site.addsitedir({parent!r})\n"
    )
    return python


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "-q", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _devices(python: Path) -> str:
    out = subprocess.run(
        [str(python), "-m", "hlort.cli", "devices"], capture_output=True, text=True, timeout=120
    )
    return out.stdout + out.stderr


def test_acme_installs_passes_conformance_and_uninstalls(tmp_path):
    target = create("acme", tmp_path / "src" / "hlort-acme")
    python = _venv(tmp_path)
    install = _pip(python, "install", "--no-deps", "--no-build-isolation", "-e", str(target))
    if install.returncode != 0:  # an older setuptools without `wheel` cannot build offline
        install = _pip(python, "install", "--no-deps", "-e", str(target))
    if install.returncode != 0:
        pytest.skip(f"pip cannot build the plugin here: {install.stderr[-600:]}")
    try:
        listing = _devices(python)
        assert re.search(r"^acme\s+ok", listing, re.M), listing
        assert "acme:0" in listing and "acme:1" in listing
        run = run_suite(
            "acme", "--hlort-quick", "-k", SAMPLE, tmp_path=tmp_path, python=str(python)
        )
        assert run.returncode == 0, run.output[-3000:]
        summary = run.report["summary"]
        assert summary["fail"] == summary["error"] == 0 and summary["pass"] > 30, summary
        assert run.report["platform"] == "acme" and run.report["quick"] is True
        ops = run.report["ops"]
        assert set(ops) >= set(SAMPLE_OPS), sorted(ops)
        assert all(outcome == "pass" for op in SAMPLE_OPS for outcome in ops[op].values())
        where = "import hlort_acme; print(hlort_acme.__file__)"
        located = subprocess.run([str(python), "-c", where], capture_output=True, text=True)
        assert located.stdout.strip().startswith(str(target))
        own = subprocess.run(
            [
                str(python),
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:hypothesispytest",
                str(target / "tests"),
            ],
            capture_output=True,
            text=True,
            cwd=target,
            timeout=300,
        )
        assert own.returncode == 0, own.stdout[-2000:]
    finally:
        uninstall = _pip(python, "uninstall", "-y", "hlort-acme")
    assert uninstall.returncode == 0, uninstall.stderr
    assert not re.search(r"^acme\s", _devices(python), re.M)
