"""`hlort devices` and backend selection in a fresh process that has the fake plugins installed.

The fake distributions (tests/fake_plugin) are made visible through PYTHONPATH with real
.dist-info metadata, so discovery goes through importlib.metadata as for pip-installed plugins.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_site import hlort_command, subprocess_env

DOT = """HloModule mm

ENTRY main {
  x = f32[2,2] parameter(0)
  ROOT d = f32[2,2] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

ADD = """HloModule add

ENTRY main {
  x = f32[2] parameter(0)
  ROOT s = f32[2] add(x, x)
}
"""


def hlort(site, *args, **env):
    result = subprocess.run(
        hlort_command(*map(str, args)),
        env=subprocess_env(site, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.returncode, result.stdout, result.stderr


def line_of(out: str, name: str) -> str:
    lines = [ln for ln in out.splitlines() if ln.split() and ln.split()[0] == name]
    assert len(lines) == 1, out
    return lines[0]


def test_devices_lists_every_backend_and_each_failure_in_one_line(fake_site):
    code, out, err = hlort(fake_site, "devices")
    assert code == 0, err
    assert "ok" in line_of(out, "fakegood").split()[1]
    assert "fakegood:0" in out and "fakegood:1" in out and "interpreter:0" in out
    broken = line_of(out, "fakebroken")
    assert "failed" in broken and "libfakebroken.so" in broken and "hlort-fake-broken" in broken
    newapi = line_of(out, "fakenewapi")
    assert "rejected" in newapi and "2.0" in newapi and "1.0" in newapi
    unavail = line_of(out, "fakeunavail")
    assert "unavailable" in unavail and "FakeAccel" in unavail and "fix:" in unavail
    assert "Traceback" not in out + err


def test_hlort_platforms_restricts_and_orders(fake_site):
    code, out, err = hlort(fake_site, "devices", HLORT_PLATFORMS="interpreter,fakegood")
    assert code == 0, err
    assert "(default)" in line_of(out, "interpreter")
    assert "(default)" not in line_of(out, "fakegood")
    assert "disabled" in line_of(out, "fakebroken")
    names = [ln.split()[0] for ln in out.splitlines() if ln and not ln.startswith(" ")]
    assert names.index("interpreter") < names.index("fakegood")


@pytest.mark.parametrize(
    "listed, code_name",
    [
        ("fakebroken", "UNAVAILABLE"),
        ("fakenewapi", "UNAVAILABLE"),
        ("fakeunavail", "UNAVAILABLE"),
        ("nosuchaccel", "NOT_FOUND"),
    ],
)
def test_hlort_platforms_naming_a_broken_backend_fails_loudly(fake_site, listed, code_name):
    code, out, err = hlort(fake_site, "devices", HLORT_PLATFORMS=f"{listed},interpreter")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hlort: error: {code_name}: "), err
    assert listed in lines[0]
    code, _, err = hlort(fake_site, "run", "/nonexistent.hlo", HLORT_PLATFORMS=listed)
    assert code == 2


def test_run_on_a_plugin_platform_and_an_op_it_lacks(fake_site, tmp_path):
    add, dot = tmp_path / "add.hlo", tmp_path / "dot.hlo"
    add.write_text(ADD)
    dot.write_text(DOT)
    code, out, err = hlort(fake_site, "run", add, "--platform", "fakegood", "--device", "1")
    assert code == 0, err
    assert "on fakegood:1" in out
    code, out, err = hlort(fake_site, "run", dot, "--platform", "fakegood")
    assert code == 3
    assert err.strip().startswith("hlort: error: UNIMPLEMENTED:") and "dot" in err
    code, out, err = hlort(fake_site, "run", dot, "--platform", "interpreter")
    assert code == 0, err


def test_console_script_is_installed():
    script = shutil.which("hlort", path=str(Path(sys.executable).parent)) or shutil.which("hlort")
    if script is None:
        pytest.skip("the hlort console script is not installed in this environment")
    env = {k: v for k, v in os.environ.items() if k != "HLORT_PLATFORMS"}
    result = subprocess.run(
        [script, "devices"], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0 and "interpreter:0" in result.stdout
