"""The shared GPU runtime on 2 fake GPUs: a host step sees its copy's replica id and meets the
other GPU in a collective (the launch's context reaches the host fallback)."""

from __future__ import annotations

import numpy as np

from hlort.plugin.options import CompileOptions
from hlort.text import parse_module

PROGRAM = """HloModule rid

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (x: f32[3]) -> f32[3] {
  %x = f32[3] parameter(0)
  %id = u32[] replica-id()
  %f = f32[] convert(%id)
  %fb = f32[3] broadcast(%f), dimensions={}
  %y = f32[3] add(%x, %fb)
  ROOT %r = f32[3] all-reduce(%y), replica_groups={{0,1}}, to_apply=%add
}
"""


def test_host_steps_see_their_copy_and_meet_the_other_gpu(make_client, monkeypatch):
    monkeypatch.setenv("HLORT_FALLBACK", "allow")
    client = make_client(devices=2, plan="host_fallback")
    exe = client.compile(parse_module(PROGRAM), CompileOptions(num_replicas=2))
    devices = client.devices()
    xs = [np.arange(3, dtype=np.float32), np.full(3, 10, np.float32)]
    outs = exe.execute([[client.buffer_from_host(x, d)] for x, d in zip(xs, devices, strict=True)])
    want = (xs[0] + 0) + (xs[1] + 1)  # replica 0 adds 0, replica 1 adds 1, then the sum
    for per in outs:
        np.testing.assert_array_equal(per[0].to_host().result(30), want)
