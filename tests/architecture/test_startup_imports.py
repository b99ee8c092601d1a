"""What ``import hlort``, ``hlort --help`` and the pytest11 entry point import (issue 19 item 3).

Every pytest run in an environment with hlort loads ``hlort.testing.pytest_plugin``, and every
``hlort`` command imports ``hlort.cli``; neither may pull in NumPy, ml_dtypes or the runtime
until something needs them. Each check runs in a fresh interpreter (this process has NumPy
already). Times are not asserted here: ``benchmarks/startup.py`` measures them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "ml_dtypes", "hlort.runtime", "hlort.ir", "hlort.dtypes")


def _loaded_after(statement: str) -> list[str]:
    code = (
        f"import sys, json\n{statement}\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{sorted({h.split('.')[0] for h in HEAVY})!r} or m.startswith('hlort.'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _heavy(loaded: list[str]) -> list[str]:
    return [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]


@pytest.mark.parametrize(
    "statement",
    [
        "import hlort",
        "import hlort; hlort.__version__",
        "import hlort.cli; hlort.cli.build_parser().format_help()",
        "import pytest, hlort.testing.pytest_plugin",
    ],
)
def test_startup_imports_nothing_heavy(statement):
    loaded = _loaded_after(statement)
    assert not _heavy(loaded), f"{statement!r} imported {_heavy(loaded)}"


def test_help_prints_without_heavy_imports():
    code = (
        "import sys\nfrom hlort.cli import main\nrc = main(['--help'])\n"
        "bad = [m for m in ('numpy', 'ml_dtypes', 'hlort.runtime') if m in sys.modules]\n"
        "print('HEAVY', bad, rc, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "HEAVY [] 0" in done.stderr, done.stderr
    assert "conformance" in done.stdout and "new-plugin" in done.stdout


def test_public_names_load_on_first_use():
    loaded = _loaded_after(
        "import hlort\nassert hlort.dtypes.F32.name == 'f32'\n"
        "assert callable(hlort.compile) and callable(hlort.backends)\n"
        "assert hlort.HlortError.__module__ == 'hlort.errors'\n"
        "assert {'compile', 'devices', 'Builder', 'dtypes'} <= set(dir(hlort))"
    )
    assert "hlort.runtime" in loaded and "numpy" in loaded


def test_an_unknown_name_is_an_attribute_error():
    import hlort

    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        hlort.not_a_name  # noqa: B018
    assert not hasattr(hlort, "_EXPORTS_typo")
