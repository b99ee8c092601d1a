"""The rendezvous never hangs: a device that never arrives is DEADLINE_EXCEEDED naming it, a
device that fails wakes its peers with ABORTED, and groups that span processes go through the
cross-process transport (here a fake one joining two rendezvous of one test process)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from multi_device import client

from hlort.errors import ErrorCode, HlortError
from hlort.plugin.base.launch_context import Rendezvous, collective_timeout_s
from hlort.plugin.options import CompileOptions

ONE_BRANCH = """HloModule m, replica_count=2

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%talk (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  ROOT %r = f32[2] all-reduce(%x), replica_groups={}, to_apply=%add
}

%quiet (x: f32[2]) -> f32[2] {
  ROOT %x = f32[2] parameter(0)
}

ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  %id = u32[] replica-id()
  %zero = u32[] constant(0)
  %first = pred[] compare(%id, %zero), direction=EQ
  ROOT %c = f32[2] conditional(%first, %x, %x), true_computation=%talk, false_computation=%quiet
}
"""


def test_a_device_that_never_arrives_is_deadline_exceeded_naming_it(monkeypatch):
    from hlort.text import parse_module

    monkeypatch.setenv("HLORT_COLLECTIVE_TIMEOUT", "0.3")
    c = client(2)
    exe = c.compile(parse_module(ONE_BRANCH), CompileOptions(num_replicas=2))
    devices = c.devices()
    args = [[c.buffer_from_host(np.ones(2, np.float32), devices[k])] for k in range(2)]
    outs = exe.execute(args)
    np.testing.assert_array_equal(outs[1][0].to_host().result(30), [1, 1])  # skipped it
    with pytest.raises(HlortError) as info:
        outs[0][0].to_host().result(30)  # bounded: the rendezvous gives up after 0.3 s
    err = info.value
    assert err.code is ErrorCode.DEADLINE_EXCEEDED
    assert "device(s) [1]" in err.message and "r (step 0)" in err.message
    assert "HLORT_COLLECTIVE_TIMEOUT" in err.message


def test_timeout_setting_is_checked(monkeypatch):
    monkeypatch.setenv("HLORT_COLLECTIVE_TIMEOUT", "soon")
    with pytest.raises(HlortError) as info:
        collective_timeout_s()
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    monkeypatch.delenv("HLORT_COLLECTIVE_TIMEOUT")
    assert collective_timeout_s() == 60.0


def _in_thread(fn):
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    return t, box


def test_a_failed_device_aborts_its_waiting_peers():
    r = Rendezvous([[0], [1]], timeout_s=30)
    t, box = _in_thread(lambda: r.exchange(("ar", 0), 0, (np.ones(1),), [0, 1]))
    r.abort(1, HlortError("launch failed"))
    t.join(30)
    err = box["error"]
    assert isinstance(err, HlortError) and err.code is ErrorCode.ABORTED
    assert "device 1 failed" in err.message and "launch failed" in err.message


def test_exchange_gives_values_in_group_order_and_reuses_keys_per_step():
    r = Rendezvous([[5], [7], [9]], timeout_s=30)
    threads = [
        _in_thread(lambda d=d: r.exchange(("x", 0), d, d * 10, [9, 5, 7])) for d in (5, 7, 9)
    ]
    for t, _ in threads:
        t.join(30)
    assert [box["value"] for _, box in threads] == [[90, 50, 70]] * 3
    assert [r.next_step(5, "x"), r.next_step(5, "x"), r.next_step(7, "x")] == [0, 1, 0]
    assert r.flat_id_of(7) == 1 and r.device_of(2) == 9


class FakeTransport:
    """Two 'processes' in one test: device d belongs to process d // 2."""

    def __init__(self, process_index: int, shared: dict, cond: threading.Condition):
        self.process_index = process_index
        self.shared = shared
        self.cond = cond
        self.calls: list = []

    def process_of(self, device_id: int) -> int:
        return device_id // 2

    def exchange(self, key, local, group, *, timeout_s=None):
        self.calls.append((key, tuple(group)))
        with self.cond:
            slot = self.shared.setdefault((key, tuple(group)), {})
            slot.update(local)
            self.cond.notify_all()
            assert self.cond.wait_for(lambda: len(slot) == len(group), timeout_s)
            return {d: slot[d] for d in group}


def test_groups_across_processes_go_through_the_transport():
    shared: dict = {}
    cond = threading.Condition()
    transports = [FakeTransport(i, shared, cond) for i in range(2)]
    rendezvous = [
        Rendezvous([[0], [1], [2], [3]], transport=t, timeout_s=30, key=("exe", 0))
        for t in transports
    ]
    assert rendezvous[1].local_device_ids == {2, 3}

    def device(d):
        r = rendezvous[d // 2]
        values = (np.array([d]), np.array([10 * d]))
        gathered = r.exchange(("ar", 0), d, values, [3, 2, 1, 0])
        # a ring 0 -> 1 -> 2 -> 3 -> 0: pairs 1->2 and 3->0 cross the processes
        got = r.send_receive(("cp", 0), d, values, (d + 1) % 4, (d - 1) % 4)
        return gathered, got

    threads = [_in_thread(lambda d=d: device(d)) for d in range(4)]
    for t, _ in threads:
        t.join(30)
    for d, (_, box) in enumerate(threads):
        gathered, got = box["value"]
        assert [int(v[0][0]) for v in gathered] == [3, 2, 1, 0]
        assert [int(v[1][0]) for v in gathered] == [30, 20, 10, 0]
        assert int(got[0][0]) == (d - 1) % 4
    keys = {k for t in transports for k, _ in t.calls}
    assert ("exe", 0, "ar", 0, 0) in keys and ("exe", 0, "ar", 0, 1) in keys  # one per array
    assert any(k[2] == "cp" for k in keys)
