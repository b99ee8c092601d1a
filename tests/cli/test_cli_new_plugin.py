"""`hlort new-plugin` errors: a missing template names HLORT_PLUGIN_TEMPLATE, a wrong one is
not silently ignored, and a name whose package is installed is refused (installing the copy
would replace it)."""

import importlib.util
from pathlib import Path

import pytest

import hlort
from hlort import cli
from hlort.plugin import new_plugin

TEMPLATE = Path(__file__).resolve().parents[2] / "plugins" / "template"


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hlort: error: ") and "Traceback" not in err
    return lines[0]


def test_without_a_source_checkout_the_error_names_the_variable(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv(new_plugin.TEMPLATE_ENV, raising=False)
    monkeypatch.setattr(hlort, "__file__", str(tmp_path / "site-packages" / "hlort" / "x.py"))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name.startswith("hlort_") else find_spec(name, *a),
    )
    code, _, err = run(capsys, "new-plugin", "zed", "--dest", tmp_path / "zed")  # no template
    assert code == 2
    line = one_line(err)
    assert "NOT_FOUND" in line and "HLORT_PLUGIN_TEMPLATE" in line
    assert not (tmp_path / "zed").exists()
    monkeypatch.setenv(new_plugin.TEMPLATE_ENV, str(TEMPLATE))
    code, out, err = run(capsys, "new-plugin", "zed", "--dest", tmp_path / "zed")
    assert code == 0, err
    assert (tmp_path / "zed" / "hlort_zed" / "plugin.py").is_file()


def test_a_wrong_template_variable_is_an_error_not_ignored(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv(new_plugin.TEMPLATE_ENV, str(tmp_path / "nowhere"))
    code, _, err = run(capsys, "new-plugin", "zed", "--dest", tmp_path / "zed")
    assert code == 2
    line = one_line(err)
    assert f"HLORT_PLUGIN_TEMPLATE={tmp_path / 'nowhere'}" in line
    assert not (tmp_path / "zed").exists()


def test_dest_is_the_plugin_directory_itself(capsys, tmp_path, monkeypatch):
    """Issue 19: `--dest ./hlort-acme` writes ./hlort-acme, not ./hlort-acme/acme; without
    --dest the plugin goes to ./hlort-NAME; an existing empty directory is used."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "new-plugin", "zed", "--dest", "./hlort-zed")
    assert code == 0, err
    assert (tmp_path / "hlort-zed" / "pyproject.toml").is_file()
    assert (tmp_path / "hlort-zed" / "hlort_zed" / "plugin.py").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hlort-zed"]  # no staging left
    assert "hlort-zed" in out
    code, _, err = run(capsys, "new-plugin", "yak")
    assert code == 0, err
    assert (tmp_path / "hlort-yak" / "hlort_yak" / "plugin.py").is_file()
    (tmp_path / "empty").mkdir()
    assert run(capsys, "new-plugin", "emu", "--dest", "empty")[0] == 0
    assert (tmp_path / "empty" / "hlort_emu" / "plugin.py").is_file()
    code, _, err = run(capsys, "new-plugin", "zed", "--dest", "./hlort-zed")
    assert code == 2 and "ALREADY_EXISTS" in one_line(err) and "not an empty directory" in err


def test_the_packaged_template_is_found_before_the_checkout(tmp_path, monkeypatch):
    """What a wheel install finds: hlort/_plugin_template (setup.py copies plugins/template)."""
    import shutil

    monkeypatch.delenv(new_plugin.TEMPLATE_ENV, raising=False)
    packaged = tmp_path / "site-packages" / "hlort" / "_plugin_template"
    shutil.copytree(TEMPLATE, packaged, ignore=new_plugin._SKIP)
    monkeypatch.setattr(new_plugin, "packaged_template", lambda: packaged)
    assert new_plugin.find_template() == packaged
    target = new_plugin.create("zed", tmp_path / "out")
    assert (target / "hlort_zed" / "plugin.py").is_file()


@pytest.mark.parametrize("name", ["cpu", "tpusim"])
def test_a_name_whose_package_is_installed_is_refused(capsys, tmp_path, name):
    if importlib.util.find_spec(f"hlort_{name}") is None:
        pytest.skip(f"hlort_{name} is not installed here")
    code, _, err = run(capsys, "new-plugin", name, "--dest", tmp_path / name)
    assert code == 2
    assert f"hlort_{name}" in one_line(err)
    assert not (tmp_path / name).exists()
