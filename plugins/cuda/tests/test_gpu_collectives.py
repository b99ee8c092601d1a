"""The shared GPU runtime on 2 fake GPUs: a host step sees its copy's replica id and meets the
other GPU in a collective (the launch's context reaches the host fallback)."""

from __future__ import annotations

import numpy as np
import pytest

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


IDS = """HloModule ids

%add (a: u32[], b: u32[]) -> u32[] {
  %a = u32[] parameter(0)
  %b = u32[] parameter(1)
  ROOT %s = u32[] add(%a, %b)
}

ENTRY %main () -> (u32[], u32[], u32[]) {
  %r = u32[] replica-id()
  %p = u32[] partition-id()
  %s = u32[] all-reduce(%r), replica_groups={}, to_apply=%add
  ROOT %t = (u32[], u32[], u32[]) tuple(%r, %p, %s)
}
"""


@pytest.mark.parametrize("replicas,partitions", [(1, 1), (2, 1), (1, 2)])
def test_replica_and_partition_ids_are_device_steps_of_each_copy(
    make_client, monkeypatch, replicas, partitions
):
    """The compiled program sets replica-id and partition-id on each GPU's stream (LaunchId
    steps, no host fallback: only the collective is one), each copy its own numbers."""
    from hlort.codegen.gpu.program import LaunchId

    monkeypatch.setenv("HLORT_FALLBACK", "allow")
    copies = replicas * partitions
    client = make_client(devices=copies, plan="gpu_compiler")
    options = CompileOptions(num_replicas=replicas, num_partitions=partitions)
    exe = client.compile(parse_module(IDS), options)
    program = exe.program
    assert [f.opcode for f in program.fallbacks] == ["all-reduce"]
    assert sum(isinstance(s, LaunchId) for s in program.steps) == 2
    outs = exe.execute([[] for _ in range(copies)])
    got = [tuple(int(b.to_host().result(30)) for b in per) for per in outs]
    total = sum(range(replicas))
    if replicas > 1:
        assert got == [(k, 0, total) for k in range(replicas)]
    else:
        assert got == [(0, k, 0) for k in range(partitions)]
