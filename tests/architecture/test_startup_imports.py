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


def test_the_dtype_table_needs_ml_dtypes_only_for_its_types():
    """ml_dtypes costs most of a second: the table, sizes and NumPy's own types need none of it;
    the first NumPy dtype of bfloat16/float8 imports it."""
    loaded = _loaded_after(
        "from hlort import dtypes\n"
        "assert dtypes.BF16.itemsize == 2 and dtypes.F8E5M2.bits == 8\n"
        "assert dtypes.from_numpy('float32') is dtypes.F32\n"
        "assert dtypes.finfo(dtypes.F32).nmant == 23\n"
        "import hlort.plugin.api, hlort.interpreter.ops.conversions"
    )
    assert "ml_dtypes" not in loaded, loaded
    loaded = _loaded_after(
        "from hlort import dtypes\n"
        "assert dtypes.from_numpy('bfloat16') is dtypes.BF16\n"
        "import ml_dtypes, numpy as np\n"
        "assert dtypes.BF16.numpy == np.dtype(ml_dtypes.bfloat16)\n"
        "assert dtypes.from_numpy(ml_dtypes.float8_e4m3fn) is dtypes.F8E4M3FN\n"
        "assert dtypes.finfo(dtypes.BF16).nmant == 7"
    )
    assert "ml_dtypes" in loaded


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


def test_every_public_name_is_the_object_it_names():
    """Whatever was imported first: hlort.runtime.compile (a module) must not shadow the
    function hlort.compile."""
    code = (
        "import types, hlort.runtime.compile, hlort.ir.module, hlort\n"
        "for name in hlort.__all__:\n"
        "    value = getattr(hlort, name)\n"
        "    assert isinstance(value, types.ModuleType) == (name in ('dtypes', 'shape')), name\n"
        "assert hlort.compile.__module__ == 'hlort.runtime.selection'\n"
        "print(len(hlort.__all__))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and int(done.stdout) >= 20, done.stderr


def test_an_unknown_name_is_an_attribute_error():
    import hlort

    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        hlort.not_a_name  # noqa: B018
    assert not hasattr(hlort, "_EXPORTS_typo")


def test_subpackages_are_reachable_as_attributes_as_before():
    """``import hlort; hlort.runtime.Buffer`` worked while import hlort imported everything."""
    code = (
        "import hlort\n"
        "assert hlort.runtime.Buffer.__name__ == 'Buffer'\n"
        "assert hlort.ir.Module is hlort.Module\n"
        "assert hlort.errors.HlortError is hlort.HlortError\n"
        "assert hlort.plugin.registry.default_registry"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_narrow_float_set_is_exactly_the_four_types():
    import ml_dtypes
    import numpy as np

    from hlort.interpreter.ops.float_rounding import NARROW_FLOATS

    narrow = {np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2}
    assert set(NARROW_FLOATS) == {np.dtype(t) for t in narrow} and len(NARROW_FLOATS) == 4
    for t in narrow:
        assert np.dtype(t) in NARROW_FLOATS
    for t in (np.float32, np.float64, np.int8, np.uint16, np.complex64, ml_dtypes.int4):
        assert np.dtype(t) not in NARROW_FLOATS
