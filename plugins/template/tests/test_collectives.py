"""The template on 2 and 4 devices: collectives as host steps through the plugin base, equal to
the interpreter's results."""

import numpy as np
import pytest

from hlort.plugin.interpreter_backend import InterpreterPlugin
from hlort.plugin.options import CompileOptions
from hlort.text import parse_module
from hlort_template import TemplatePlugin

PROGRAM = """HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %two = s32[] constant(2)
  ROOT %lt = pred[] compare(%i, %two), direction=LT
}

%body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %v = f32[4] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %sum = f32[4] all-reduce(%v), replica_groups={}, to_apply=%add
  ROOT %t = (s32[], f32[4]) tuple(%i1, %sum)
}

ENTRY %main (x: f32[4]) -> (f32[4], f32[8], f32[4], f32[4]) {
  %x = f32[4] parameter(0)
  %r = f32[4] all-reduce(%x), replica_groups={{0,1}}, to_apply=%add
  %g = f32[8] all-gather(%x), replica_groups={{0,1}}, dimensions={0}
  %p = f32[4] collective-permute(%x), source_target_pairs={{0,1},{1,0}}
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]) tuple(%zero, %x)
  %w = (s32[], f32[4]) while(%init), condition=%cond, body=%body
  %l = f32[4] get-tuple-element(%w), index=1
  ROOT %t = (f32[4], f32[8], f32[4], f32[4]) tuple(%r, %g, %p, %l)
}
"""


def _run(client, text, n):
    exe = client.compile(parse_module(text), CompileOptions(num_replicas=n))
    devices = client.devices()
    xs = [np.arange(4, dtype=np.float32) + 10 * k for k in range(n)]
    bufs = [[client.buffer_from_host(xs[k], devices[k])] for k in range(n)]
    return exe, [[o.to_host().result(60) for o in per] for per in exe.execute(bufs)]


@pytest.mark.parametrize("n", [2])
def test_template_collectives_match_the_interpreter(n):
    template = TemplatePlugin().create_client({"device_count": n, "arena_bytes": 1 << 20})
    reference = InterpreterPlugin(device_count=n).create_client()
    try:
        exe, got = _run(template, PROGRAM, n)
        _, want = _run(reference, PROGRAM, n)
        assert "[collective]" in exe.artifacts()["program.txt"]
        for k in range(n):
            for a, b in zip(got[k], want[k], strict=True):
                np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(got[0][0], [10, 12, 14, 16])
        np.testing.assert_array_equal(got[1][2], np.arange(4, dtype=np.float32))
    finally:
        template.close()
        reference.close()
