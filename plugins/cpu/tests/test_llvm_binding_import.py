"""llvmlite.binding imported without importlib.resources (llvm_start._import_binding).

The stand-in must find the same shared library the real module would, hand every other use to
the real module, and leave no trace in ``sys.modules``: each case runs in a fresh interpreter
(a process imports llvmlite once).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("llvmlite")

_FRESH = """
import sys
from hlort_cpu.codegen import llvm_start
llvm = llvm_start._import_binding()
assert "importlib.resources" not in sys.modules, "the stand-in stayed or the real one loaded"
assert "zipfile" not in sys.modules and "tempfile" not in sys.modules
assert llvm.ffi.lib.LLVMPY_GetVersionInfo() > 0  # the library was found and loaded
import importlib.resources as real
assert hasattr(real, "read_text") and real.files("llvmlite").is_dir()
print("ok")
"""

_SHIM = """
import pathlib, sys, importlib
from hlort_cpu.codegen import llvm_start
shim = llvm_start._resources_shim("importlib.resources")
sys.modules["importlib.resources"] = shim
where = shim.files("hlort_cpu")
assert isinstance(where, pathlib.Path) and (where / "plugin.py").is_file()
with shim.as_file(where / "plugin.py") as path:
    assert path == where / "plugin.py"
assert sys.modules["importlib.resources"] is shim
from importlib.resources.abc import Traversable  # a submodule another thread imports meanwhile
assert sys.modules["importlib.resources"] is shim  # found through the stand-in's __path__
assert Traversable.__module__ == "importlib.resources.abc"
read_text = shim.read_text  # any other name: the real module, which replaces the stand-in
assert sys.modules["importlib.resources"] is not shim
assert read_text is importlib.import_module("importlib.resources").read_text
print("ok")
"""

_ALREADY = """
import sys, importlib.resources
real = sys.modules["importlib.resources"]
from hlort_cpu.codegen import llvm_start
llvm_start._import_binding()
assert sys.modules["importlib.resources"] is real  # nothing to save: the real one is used
print("ok")
"""


@pytest.mark.parametrize("code", [_FRESH, _SHIM, _ALREADY], ids=["fresh", "shim", "already"])
def test_binding_import_without_importlib_resources(code):
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ok"]
