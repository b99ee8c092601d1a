"""Virtual cpu devices: how many, replica and partition ids per device, device assignment, and
concurrent execution of one executable's devices."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from hlort.errors import ErrorCode, HlortError  # noqa: E402
from hlort.ir.custom_calls import register_custom_call  # noqa: E402
from hlort.runtime.compile import compile_on  # noqa: E402
from hlort.runtime.selection import backend_for_client  # noqa: E402
from hlort_cpu.plugin import CpuPlugin  # noqa: E402
from hlort_cpu.virtual_devices import device_count  # noqa: E402

IDS = """
HloModule ids

ENTRY main {
  x = s32[3] parameter(0)
  r = u32[] replica-id()
  p = u32[] partition-id()
  ten = u32[] constant(10)
  rp = u32[] multiply(r, ten)
  id = u32[] add(rp, p)
  ids = s32[] convert(id)
  b = s32[3] broadcast(ids), dimensions={}
  ROOT y = s32[3] add(x, b)
}
"""


@pytest.fixture(scope="module")
def four():
    client = CpuPlugin().create_client({"device_count": 4})
    yield backend_for_client(client)
    client.close()


def _run(backend, text, options, per_device):
    exe = compile_on(backend, text, options=options)
    outs = exe.execute_sharded([[a] for a in per_device])
    return exe, [o[0].numpy() for o in outs]


def test_device_count_from_option_and_environment(monkeypatch):
    monkeypatch.delenv("HLORT_CPU_DEVICES", raising=False)
    assert device_count() == 1
    monkeypatch.setenv("HLORT_CPU_DEVICES", "3")
    assert device_count() == 3
    assert device_count({"device_count": 2}) == 2  # the option wins
    client = CpuPlugin().create_client()
    try:
        assert [d.id for d in client.devices()] == [0, 1, 2]
        assert len({d.kind for d in client.devices()}) == 1
    finally:
        client.close()
    assert CpuPlugin().capabilities().multi_device


@pytest.mark.parametrize("bad", ["0", "-2", "four", "1.5"])
def test_bad_device_counts_name_the_setting(monkeypatch, bad):
    monkeypatch.setenv("HLORT_CPU_DEVICES", bad)
    with pytest.raises(HlortError) as info:
        device_count()
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "HLORT_CPU_DEVICES" in info.value.message
    assert not CpuPlugin().capabilities().multi_device


def test_each_replica_sees_its_own_id(four):
    xs = [np.arange(3, dtype=np.int32) + 100 * k for k in range(4)]
    exe, got = _run(four, IDS, {"num_replicas": 4}, xs)
    assert [d.id for d in exe.devices] == [0, 1, 2, 3]
    for k in range(4):
        np.testing.assert_array_equal(got[k], xs[k] + 10 * k)


def test_replicas_times_partitions_and_an_assignment(four):
    assignment = ((3, 1), (0, 2))  # [replica][partition] -> device id
    xs = [np.zeros(3, np.int32) for _ in range(4)]
    exe, got = _run(
        four, IDS, {"num_replicas": 2, "num_partitions": 2, "device_assignment": assignment}, xs
    )
    assert [d.id for d in exe.devices] == [3, 1, 0, 2]
    expected = {3: 0, 1: 1, 0: 10, 2: 11}  # replica * 10 + partition
    for device, out in zip(exe.devices, got, strict=True):
        np.testing.assert_array_equal(out, np.full(3, expected[device.id], np.int32))


_BARRIER = threading.Barrier(4)
_SEEN: list[tuple[int, str]] = []


def _meet(ev, instr, x):
    """Every device waits here for the other three: runs that were not concurrent time out."""
    _SEEN.append((ev.replica_id, threading.current_thread().name))
    _BARRIER.wait(timeout=30)
    return x + np.float32(ev.replica_id)


register_custom_call("collbe_test.meet", evaluate_fn=_meet)

MEET = """
HloModule meet

ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] custom-call(x), custom_call_target="collbe_test.meet"
}
"""


def test_devices_of_one_execution_run_concurrently(four):
    _SEEN.clear()
    xs = [np.full(4, k, np.float32) for k in range(4)]
    _, got = _run(four, MEET, {"num_replicas": 4}, xs)
    assert not _BARRIER.broken
    assert sorted(r for r, _ in _SEEN) == [0, 1, 2, 3]
    assert len({name for _, name in _SEEN}) == 4, "each device runs on its own thread"
    for k in range(4):
        np.testing.assert_array_equal(got[k], np.full(4, 2 * k, np.float32))


def test_the_shared_evaluator_sees_each_threads_run():
    """Concurrent devices share one DeviceEvaluator: replica, partition and peers are the
    calling thread's DeviceRun's (a collective the interpreter evaluates meets the right peers)."""
    from hlort.plugin.base.launch_context import LaunchContext, Rendezvous
    from hlort.plugin.options import DEFAULT_EXECUTE_OPTIONS
    from hlort_cpu.device_run import DeviceEvaluator, DeviceRun, entered

    ev = DeviceEvaluator()
    assert (ev.replica_id, ev.partition_id, ev.peers) == (0, 0, None)
    rendezvous = Rendezvous([[5, 6], [7, 8]])
    seen = {}

    def as_device(replica, partition, device):
        ctx = LaunchContext(replica, partition, 0, DEFAULT_EXECUTE_OPTIONS, device, rendezvous)
        with entered(DeviceRun.of_launch(ctx)):
            seen[device] = (ev.replica_id, ev.partition_id, ev.peers.flat_id, ev.peers.device_id)

    threads = [
        threading.Thread(target=as_device, args=(r, p, 5 + 2 * r + p))
        for r in range(2)
        for p in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {5: (0, 0, 0, 5), 6: (0, 1, 1, 6), 7: (1, 0, 2, 7), 8: (1, 1, 3, 8)}
    assert ev.peers is None  # outside any run again
