"""The distributions as pip users get them (issue 19 item 1), checked outside the checkout.

``python -m build`` makes the sdist and, from it, the wheel of the core and of every plugin
(building from the sdist proves the sdist is complete); ``twine check --strict`` passes on all of
them; every wheel carries the Apache-2.0 LICENSE and the metadata. Then a fresh virtual
environment in a temporary directory (nothing of this checkout on its path) gets the core wheel
with its ``[testing]`` extra and the cpu, tpusim, template and rocm wheels, resolving their
dependencies from the package index like a user's ``pip install`` (pip's cache makes a second
run fast); there ``hlort devices`` lists them, cpu compiles and runs a module, and ``hlort
new-plugin acme --dest ./hlort-acme`` (the template the core wheel ships) gives a plugin whose
wheel installs and passes ``hlort conformance --quick``. cuda (cuBLAS is ~600 MB) and jax (jax
and jaxlib) are built and checked but not installed.

Builds use ``--no-isolation``: the only build requirement is ``setuptools>=77``, which the dev
environment has (``hlort[dev]``), so nothing is downloaded to build. About a minute on two cores;
it needs ``build`` and ``twine`` (``hlort[dev]``) and a package index (CI: PyPI).
"""

from __future__ import annotations

import email.parser
import importlib.util
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGINS = ("cpu", "tpusim", "template", "rocm", "cuda", "jax")
INSTALLED = ("cpu", "tpusim", "template", "rocm")
HLO = """HloModule add_one

ENTRY main {
  x = f32[4] parameter(0)
  one = f32[] constant(1)
  ones = f32[4] broadcast(one), dimensions={}
  ROOT y = f32[4] add(x, ones)
}
"""

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("build") is None or importlib.util.find_spec("twine") is None,
    reason="needs build and twine (pip install -e '.[dev]', which make venv does)",
)


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without this checkout's venv or paths in it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "PYTHONWARNINGS": "ignore:Editable installation", **extra}


def _run(argv, cwd: Path, timeout: int = 600, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=_clean_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (
        f"{' '.join(map(str, argv))} exited {done.returncode}:\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def _build(project: Path, out: Path, cwd: Path) -> None:
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, project], cwd)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _build(REPO, out, out)
    for name in PLUGINS:
        _build(REPO / "plugins" / name, out, out)
    return out


def _wheel(dist: Path, distribution: str) -> Path:
    (wheel,) = dist.glob(f"{distribution.replace('-', '_')}-*.whl")
    return wheel


def _metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(zf.read(name).decode())


def test_every_distribution_builds_and_passes_twine_check(dist):
    names = ["hlort", *(f"hlort-{p}" for p in PLUGINS)]
    for name in names:
        stem = name.replace("-", "_")
        assert list(dist.glob(f"{stem}-0.1.0.tar.gz")), f"no sdist for {name}"
        assert list(dist.glob(f"{stem}-0.1.0-*.whl")), f"no wheel for {name}"
    files = sorted(dist.iterdir())
    done = _run([sys.executable, "-m", "twine", "check", "--strict", *files], dist)
    assert done.stdout.count("PASSED") == len(files) == 2 * len(names), done.stdout


def test_every_wheel_carries_the_license_and_the_metadata(dist):
    license_text = (REPO / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    for wheel in sorted(dist.glob("*.whl")):
        with zipfile.ZipFile(wheel) as zf:
            licenses = [n for n in zf.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
            assert licenses, f"{wheel.name} has no LICENSE"
            assert zf.read(licenses[0]).decode() == license_text, wheel.name
        meta = _metadata(wheel)
        assert meta["License-Expression"] == "Apache-2.0", wheel.name
        assert meta["Description-Content-Type"] == "text/markdown", wheel.name
        assert len(meta.get_payload()) > 200, f"{wheel.name}: no readme"
        classifiers = meta.get_all("Classifier")
        assert "Programming Language :: Python :: 3.11" in classifiers, wheel.name
        assert any(u.startswith("Repository, ") for u in meta.get_all("Project-URL")), wheel.name
        if meta["Name"] != "hlort":
            requires = meta.get_all("Requires-Dist")
            assert any(re.fullmatch(r"hlort(<0\.2,>=0\.1|>=0\.1,<0\.2)", r) for r in requires), (
                wheel.name,
                requires,
            )
    core = _metadata(_wheel(dist, "hlort"))
    assert "testing" in core.get_all("Provides-Extra")
    assert 'pytest>=8; extra == "testing"' in core.get_all("Requires-Dist")
    for name in ("hlort", "hlort-cpu", "hlort-rocm", "hlort-cuda"):
        requires = _metadata(_wheel(dist, name)).get_all("Requires-Dist")
        assert any(r.startswith("llvmlite") and ">=0.46" in r and "<0.51" in r for r in requires)
    with zipfile.ZipFile(_wheel(dist, "hlort")) as zf:
        names = set(zf.namelist())
    template = "hlort/_plugin_template/"
    for part in ("pyproject.toml", "README.md", "LICENSE", "hlort_template/plugin.py"):
        assert template + part in names, f"the core wheel lacks {template}{part}"
    assert not any("__pycache__" in n or ".egg-info" in n for n in names if template in n)


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh venv outside the checkout with the wheels installed; its python."""
    root = tmp_path_factory.mktemp("fresh")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root / "venv"], check=True)
    python = root / "venv" / "bin" / "python"
    core = _wheel(dist, "hlort")
    wheels = [f"{core}[testing]", *(_wheel(dist, f"hlort-{p}") for p in INSTALLED)]
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", *wheels]
    _run(pip, root, timeout=900)
    return python


def test_the_wheels_work_in_a_fresh_venv(venv, tmp_path):
    bindir = venv.parent
    code = "import hlort, hlort_cpu; print(hlort.__file__, hlort_cpu.__file__)"
    where = _run([venv, "-c", code], tmp_path).stdout
    assert str(REPO) not in where and str(venv.parents[1]) in where, where
    listing = _run([bindir / "hlort", "devices"], tmp_path).stdout
    for platform in ("cpu", "tpusim", "template"):
        assert re.search(rf"^{platform}\s+ok", listing, re.M), listing
    assert re.search(r"^rocm\s", listing, re.M), listing  # unavailable here: says why
    (tmp_path / "add.hlo").write_text(HLO)
    for platform in ("cpu", "tpusim"):
        run = _run(
            [bindir / "hlort", "run", "add.hlo", "--platform", platform, "--json"],
            tmp_path,
            HLORT_CACHE_DIR=str(tmp_path / "cache"),
        )
        assert '"outputs"' in run.stdout, run.stdout


def test_a_new_plugin_from_the_wheel_template_passes_conformance(venv, dist, tmp_path):
    bindir = venv.parent
    made = _run([bindir / "hlort", "new-plugin", "acme", "--dest", "./hlort-acme"], tmp_path)
    target = tmp_path / "hlort-acme"
    assert (target / "pyproject.toml").is_file() and (target / "LICENSE").is_file(), made.stdout
    assert not (target / "acme").exists()
    out = tmp_path / "acme-dist"
    _build(target, out, tmp_path)
    _run([sys.executable, "-m", "twine", "check", "--strict", *sorted(out.iterdir())], tmp_path)
    (wheel,) = out.glob("hlort_acme-*.whl")
    pip = [sys.executable, "-m", "pip", "--python", venv, "install", "-q", "--no-deps", wheel]
    _run(pip, tmp_path)
    listing = _run([bindir / "hlort", "devices"], tmp_path).stdout
    assert re.search(r"^acme\s+ok", listing, re.M), listing
    suite = _run(
        [bindir / "hlort", "conformance", "--platform", "acme", "--quick"],
        tmp_path,
        HLORT_CACHE_DIR=str(tmp_path / "cache"),
    )
    summary = re.search(r"hlort conformance of 'acme': (\d+) pass", suite.stdout)
    assert summary and int(summary.group(1)) > 400, suite.stdout[-2000:]
    assert not re.search(r"\b\d+ fail", suite.stdout), suite.stdout[-2000:]


def test_every_plugin_ships_the_same_license():
    text = (REPO / "LICENSE").read_text()
    for name in PLUGINS:
        assert (REPO / "plugins" / name / "LICENSE").read_text() == text, name
