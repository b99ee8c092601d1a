"""The executable cache key covers how the backend's passes were built and the code they run.

An optimized module depends on every pass that made it: a plugin pass built with another
threshold, or a plugin whose pass source was edited, must compile again, not load the program
an earlier pipeline made (hlort.runtime.pass_identity).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import hlort
from hlort import Builder, shape
from hlort.passes.pass_base import Pass
from hlort.passes.pass_options import PassOptions
from hlort.plugin.interpreter_backend import InterpreterClient
from hlort.plugin.options import CompileOptions
from hlort.runtime import pass_identity
from hlort.runtime.executable_cache import ExecutableCache


class ThresholdPass(Pass):
    name = "threshold-test"

    def __init__(self, threshold: int = 4, scale=None):
        self.threshold = threshold
        self.scale = scale

    def run(self, module) -> bool:
        return False


def _module():
    b = Builder("cached_passes")
    x = b.parameter(shape.array("f32", [4]))
    return b.build(b.add(x, x))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    return tmp_path


def _with_passes(monkeypatch, *after: Pass) -> None:
    monkeypatch.setattr(InterpreterClient, "pass_options", lambda self: PassOptions(after=after))


def _key(monkeypatch, *after: Pass) -> str | None:
    _with_passes(monkeypatch, *after)
    cache = ExecutableCache.for_compile(hlort.backend("interpreter"), _module(), CompileOptions())
    return None if cache is None else cache.key


def test_a_pass_built_with_another_argument_compiles_again(cache_dir, monkeypatch):
    x = np.arange(4, dtype=np.float32)
    _with_passes(monkeypatch, ThresholdPass(4))
    hlort.compile(_module(), "interpreter")
    assert "cache_load" in hlort.compile(_module(), "interpreter").timings  # same pipeline: hit
    _with_passes(monkeypatch, ThresholdPass(8))
    other = hlort.compile(_module(), "interpreter")
    assert "cache_load" not in other.timings
    np.testing.assert_array_equal(other(x), x + x)


def test_key_follows_nested_arguments_and_callbacks(cache_dir, monkeypatch):
    base = _key(monkeypatch, ThresholdPass(4, scale=(1.0, {"a": 2})))
    assert base == _key(monkeypatch, ThresholdPass(4, scale=(1.0, {"a": 2})))
    assert base != _key(monkeypatch, ThresholdPass(4, scale=(1.0, {"a": 3})))
    assert base != _key(monkeypatch, ThresholdPass(4, scale=[1.0, {"a": 2}]))
    assert _key(monkeypatch, ThresholdPass(scale=np.sin)) != _key(
        monkeypatch, ThresholdPass(scale=np.cos)
    )

    def limit(n):
        return lambda comp: n > 3  # a closure's captured value is an argument too

    assert _key(monkeypatch, ThresholdPass(scale=limit(1))) != _key(
        monkeypatch, ThresholdPass(scale=limit(5))
    )


def test_a_pass_it_cannot_describe_is_not_cached(cache_dir, monkeypatch):
    assert _key(monkeypatch, ThresholdPass(scale=threading.Lock())) is None
    hlort.compile(_module(), "interpreter")
    assert "cache_load" not in hlort.compile(_module(), "interpreter").timings


_PASS_SOURCE = """
from hlort.passes.pass_base import Pass


class EditedPass(Pass):
    name = "edited-test"
    LIMIT = {limit}  # read by run(), kept nowhere on the instance

    def run(self, module):
        return False
"""


def test_editing_a_plugin_pass_default_changes_the_key(cache_dir, monkeypatch, tmp_path):
    package = tmp_path / "edited_plugin_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = package / "passes.py"
    source.write_text(_PASS_SOURCE.format(limit=4))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_plugin_pkg.passes")
    monkeypatch.setattr(pass_identity, "_package_digest", pass_identity._package_digest.__wrapped__)
    before = _key(monkeypatch, module.EditedPass())
    assert before == _key(monkeypatch, module.EditedPass())
    source.write_text(_PASS_SOURCE.format(limit=16))  # another size, another mtime
    module = importlib.reload(module)
    assert before != _key(monkeypatch, module.EditedPass())


def test_the_cpu_pass_options_key_alike_in_every_process():
    """No addresses in the text: a second process must find the first one's entries."""
    script = textwrap.dedent("""
        from hlort.runtime.pass_identity import pass_options_identity
        from hlort_cpu.client import CpuClient
        print(pass_options_identity(CpuClient.pass_options(None)))
    """)
    outs = {
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    }
    (text,) = outs
    assert "emits_one_kernel" in text and " at 0x" not in text


def test_the_core_digest_covers_what_the_passes_import():
    """Constant folding evaluates with the interpreter: an interpreter fix must not leave
    modules folded by the old one in the cache. Only error types, the dataclass helper and the
    loggers (hlort.log: what a pass logs never changes the module) may stay out of the digest."""
    import ast

    from hlort.plugin.base.source_digest import CORE_DIGEST_PARTS

    root = os.path.dirname(hlort.__file__)
    covered = {part.removesuffix(".py") for part in CORE_DIGEST_PARTS}
    outside = set()
    for name in os.listdir(os.path.join(root, "passes")):
        if name.endswith(".py"):
            tree = ast.parse(open(os.path.join(root, "passes", name)).read())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hlort."):
                    outside.add(node.module.split(".")[1])
    assert outside - covered <= {"errors", "lazy_dataclass", "log"}
