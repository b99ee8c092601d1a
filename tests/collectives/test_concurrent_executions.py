"""Multi-device executions started from several threads at once never wait for each other: one
execution's launches are enqueued together, so every device runs the executions in one order."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from multi_device import client

from hlort.errors import ErrorCode, HlortError
from hlort.plugin.options import CompileOptions
from hlort.text import parse_module

PROGRAM = """HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  ROOT %r = f32[2] all-reduce(%x), replica_groups={}, to_apply=%add
}
"""


def test_two_threads_with_opposite_device_orders_do_not_deadlock(monkeypatch):
    monkeypatch.setenv("HLORT_COLLECTIVE_TIMEOUT", "10")
    c = client(2)
    devices = c.devices()
    module = parse_module(PROGRAM)
    forward = c.compile(module, CompileOptions(num_replicas=2, device_assignment=((0,), (1,))))
    backward = c.compile(module, CompileOptions(num_replicas=2, device_assignment=((1,), (0,))))
    errors: list[BaseException] = []

    def worker(exe, order):
        try:
            for i in range(150):
                args = [
                    [c.buffer_from_host(np.full(2, i + k, np.float32), devices[d])]
                    for k, d in enumerate(order)
                ]
                outs = exe.execute(args)
                for per in outs:
                    got = per[0].to_host().result(30)
                    assert got.tolist() == [2 * i + 1] * 2
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    threads = [
        threading.Thread(target=worker, args=(forward, (0, 1))),
        threading.Thread(target=worker, args=(backward, (1, 0))),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_a_copy_that_cannot_start_aborts_the_copies_already_enqueued(monkeypatch):
    # device 1's argument was deleted: its copy never starts. Before, device 0's copy (already
    # enqueued) waited in the all-reduce for the whole collective timeout, holding device 0.
    monkeypatch.setenv("HLORT_COLLECTIVE_TIMEOUT", "120")
    c = client(2)
    devices = c.devices()
    exe = c.compile(parse_module(PROGRAM), CompileOptions(num_replicas=2))
    b0 = c.buffer_from_host(np.ones(2, np.float32), devices[0])
    b1 = c.buffer_from_host(np.ones(2, np.float32), devices[1])
    b1.delete()
    with pytest.raises(HlortError, match="was deleted") as info:
        exe.execute([[b0], [b1]])
    assert info.value.code is ErrorCode.FAILED_PRECONDITION
    devices[0].queue.synchronize(timeout=30)  # DEADLINE_EXCEEDED here before the fix
    np.testing.assert_array_equal(b0.to_host().result(30), [1, 1])  # the held input is released
    outs = exe.execute([[b0], [c.buffer_from_host(np.ones(2, np.float32), devices[1])]])
    assert [o[0].to_host().result(30).tolist() for o in outs] == [[2, 2], [2, 2]]
