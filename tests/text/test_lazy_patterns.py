"""The text package compiles its regular expressions on first use, not on import: the
warm-cache path (print a module for its fingerprint, load a cached executable) parses nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from hlort.text.lazy_pattern import LazyPattern


def test_importing_and_printing_compile_no_pattern():
    script = textwrap.dedent("""
        import re._compiler as compiler
        import numpy as np
        from hlort import Builder, shape
        real, count = compiler.compile, [0]
        def counting(*args, **kwargs):
            count[0] += 1
            return real(*args, **kwargs)
        compiler.compile = counting
        import hlort.text
        b = Builder("m")
        x = b.parameter(shape.array("f32", [4]))
        module = b.build(b.add(x, b.broadcast(b.constant(np.float32(2)), [4], [])))
        module.fingerprint()
        hlort.text.print_module(module)
        print(count[0])
    """)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["0"]


def test_lazy_pattern_behaves_as_compiled():
    lazy = LazyPattern(r"(a+)(b?)", 0)
    assert lazy.pattern == r"(a+)(b?)"
    assert lazy.match("aab").groups() == ("aa", "b")
    assert lazy.sub("x", "caab") == "cx"
    assert lazy.groups == 2  # attributes of the compiled pattern pass through
    assert [m.group() for m in lazy.finditer("a ab")] == ["a", "ab"]


def test_lazy_pattern_copies_and_pickles():
    import copy
    import pickle

    lazy = LazyPattern(r"x+")
    assert copy.copy(lazy).match("xx").group() == "xx"
    assert pickle.loads(pickle.dumps(lazy)).pattern == r"x+"
