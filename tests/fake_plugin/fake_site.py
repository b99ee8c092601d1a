"""Make the fake plugin distributions visible to importlib.metadata without pip.

``build_fake_site(dest)`` copies each package under ``dest`` and writes the ``.dist-info``
directory pip would write (METADATA, entry_points.txt, RECORD) from its pyproject.toml. Putting
``dest`` on ``sys.path`` or ``PYTHONPATH`` then makes the entry points discoverable, exactly as
for installed distributions.
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
DISTRIBUTIONS = (
    "hlort_fake_broken",
    "hlort_fake_newapi",
    "hlort_fake_unavailable",
    "hlort_fake_good",
)
# Plugins that hang or claim other plugins' names (a site of their own: they slow discovery)
HOSTILE = (
    "hlort_fake_broken",
    "hlort_fake_newapi",
    "hlort_fake_stuckprobe",
    "hlort_fake_stuckclient",
    "hlort_fake_probe_raises",
    "hlort_fake_cpu_claim",
    "hlort_fake_cpu_twin",
    "hlort_fake_orphan_a",
    "hlort_fake_orphan_b",
)


def _dist_info(project: dict, dest: Path, package: str) -> None:
    name, version = project["name"], project["version"]
    info = dest / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = []
    for group, entries in project.get("entry-points", {}).items():
        lines.append(f"[{group}]")
        lines += [f"{key} = {value}" for key, value in entries.items()]
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines))
    (info / "INSTALLER").write_text("hlort-tests\n")
    (info / "RECORD").write_text(f"{package}/__init__.py,,\n")


def build_fake_site(dest: Path, names: tuple[str, ...] = DISTRIBUTIONS) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for dist in names:
        root = HERE / dist
        project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
        shutil.copytree(root / dist, dest / dist, ignore=shutil.ignore_patterns("__pycache__"))
        _dist_info(project, dest, dist)
    return dest


def subprocess_env(site: Path, **extra: str) -> dict[str, str]:
    """An environment whose Python sees the fake site (and no HLORT_PLATFORMS unless given)."""
    env = {k: v for k, v in os.environ.items() if k != "HLORT_PLATFORMS"}
    paths = [str(site)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra)
    return env


def hlort_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "hlort.cli", *args]
