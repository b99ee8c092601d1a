"""The fallback reason names the called computation that keeps a hero from its kernel: every
computation the op table (``OpDef.called``) lists for the hero, as ``classify_hero`` checks."""

from __future__ import annotations

import pytest

pytest.importorskip("llvmlite")

from hlort.text import parse_module  # noqa: E402
from hlort_cpu.codegen.hero_kernels import classify_hero  # noqa: E402
from hlort_cpu.codegen.unsupported_reason import why_not_compiled  # noqa: E402

_SELECT_THROUGH_A_CALL = """
HloModule m

ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}

sel {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] call(a, b), to_apply=ge
}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[4] parameter(0)
  src = f32[2] parameter(1)
  z = f32[] constant(0)
  ROOT out = f32[4] select-and-scatter(x, src, z), window={size=2 stride=2},
    select=sel, scatter=add
}
"""


def test_a_select_computation_the_emitter_cannot_compile_is_the_reason():
    comp = parse_module(_SELECT_THROUGH_A_CALL).entry
    assert classify_hero(comp) is None
    reason = why_not_compiled(comp)
    assert reason.startswith("the select computation of out = f32[4] select-and-scatter")
    assert reason.endswith("is not a scalar computation the emitter compiles")
