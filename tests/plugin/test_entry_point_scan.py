"""entry_point_scan reads the same entry points importlib.metadata does (it replaces it in
plugin discovery to keep email/zipfile/csv out of a process's first compile)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib import metadata

from hlort.plugin import entry_point_scan
from hlort.plugin.entry_point_scan import entry_points


def _as_tuples(eps) -> list[tuple[str, str, str, str | None]]:
    return sorted(
        (ep.group, ep.name, ep.value, ep.dist.metadata["Name"] if ep.dist else None) for ep in eps
    )


def _site(tmp_path, name: str, version: str, entry_points_txt: str | None, dirname=None):
    info = tmp_path / (dirname or f"{name.replace('-', '_')}-{version}.dist-info")
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    if entry_points_txt is not None:
        (info / "entry_points.txt").write_text(textwrap.dedent(entry_points_txt))
    return info


def test_same_as_importlib_metadata_for_installed_groups():
    for group in ("hlort.plugins", "console_scripts", "pytest11"):
        assert _as_tuples(entry_points(group)) == _as_tuples(metadata.entry_points(group=group))


def test_same_as_importlib_metadata_on_a_site_with_duplicates_comments_and_sections(
    tmp_path, monkeypatch
):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    _site(
        first,
        "Acme-Plugin",
        "1.0",
        "# comment\n[hlort.plugins]\nacme = acme.plugin:P\n\n[x]\ny=z\n",
    )
    _site(first, "no-entry-points", "2.0", None)
    # the same distribution later on sys.path: importlib.metadata keeps the first one only
    _site(second, "acme_plugin", "0.9", "[hlort.plugins]\nold = acme.old:P\n")
    _site(second, "other", "3", "[hlort.plugins]\n  spaced   =   other.mod : Thing.attr [extra]\n")
    (second / "legacy.egg-info").write_text("Metadata-Version: 1.0\nName: legacy\n")
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    ours = _as_tuples(entry_points("hlort.plugins"))
    assert ours == _as_tuples(metadata.entry_points(group="hlort.plugins"))
    assert ("hlort.plugins", "acme", "acme.plugin:P", "Acme-Plugin") in ours
    assert not any(name == "old" for _, name, _, _ in ours)


def test_load_follows_module_and_attribute_path(tmp_path, monkeypatch):
    (tmp_path / "epmod_x.py").write_text("class Outer:\n    class Inner:\n        pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = entry_point_scan.EntryPoint("n", "epmod_x:Outer.Inner [extra]", "g")
    assert ep.load().__qualname__ == "Outer.Inner"
    assert entry_point_scan.EntryPoint("n", "epmod_x", "g").load().__name__ == "epmod_x"


def test_a_zip_on_sys_path_is_left_to_importlib_metadata(tmp_path, monkeypatch):
    archive = tmp_path / "site.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip
    monkeypatch.syspath_prepend(str(archive))
    called = []
    real = metadata.entry_points
    monkeypatch.setattr(metadata, "entry_points", lambda **kw: called.append(kw) or real(**kw))
    assert _as_tuples(entry_points("hlort.plugins")) == _as_tuples(real(group="hlort.plugins"))
    assert called == [{"group": "hlort.plugins"}]


def test_discovery_does_not_import_importlib_metadata():
    code = (
        "import sys, hlort; hlort.backend('interpreter'); "
        "print('importlib.metadata' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
