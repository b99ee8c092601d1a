"""cpu buffers dropped in reference cycles: the garbage collector may run their finalizers inside
the device's stats lock; nothing deadlocks and the device's numbers are true at its next call.
(A host view collected inside the holds lock: tests/plugin/test_deferred_frees.py, on the same
base device.) Each check makes and closes its client in the watched thread."""

import gc

import numpy as np

from hlort import Builder, shape
from hlort.ir import Opcode
from hlort.plugin.options import CompileOptions
from hlort.testing.finalizer_hazards import (
    CollectingLock,
    drop_in_cycle,
    finishes_within,
    in_threads,
    manual_gc,
)
from hlort_cpu.host_pool import POOL_MIN_BYTES
from hlort_cpu.plugin import CpuPlugin

WATCHDOG_S = 60.0
N = POOL_MIN_BYTES // 4  # f32 outputs large enough to come from the host pool


def _program():
    b = Builder("two_outputs")
    x = b.parameter(shape.array("f32", [N]))
    return b.build(b.op(Opcode.TUPLE, (b.add(x, x), b.op(Opcode.MULTIPLY, (x, x)))))


def _put(client, values):
    buf = client.buffer_from_host(values, client.devices()[0])
    buf.ready_event().wait(WATCHDOG_S)
    return buf


def test_outputs_collected_inside_the_stats_lock_are_counted_back_at_the_next_call():
    x = np.linspace(-2, 2, N, dtype=np.float32)

    def check():
        client = CpuPlugin().create_client()
        device = client.devices()[0]
        exe = client.compile(_program(), CompileOptions())
        arg = _put(client, x)
        baseline = device.memory_stats().bytes_in_use
        [outs] = exe.execute([[arg]])
        np.testing.assert_array_equal(outs[1].to_host().result(WATCHDOG_S), x * x)
        for out in outs:
            drop_in_cycle(out)
        del outs, out
        device._stats_lock = lock = CollectingLock(device._stats_lock)
        [again] = exe.execute([[arg]])  # counting its outputs collects with the lock held
        assert lock.collected > 0
        np.testing.assert_array_equal(again[0].to_host().result(WATCHDOG_S), x + x)
        assert device.memory_stats().bytes_in_use == baseline + 2 * x.nbytes
        client.close()

    with manual_gc():
        finishes_within(WATCHDOG_S, check, "a cpu execution while a finalizer frees")


def test_eight_threads_dropping_inputs_and_outputs_in_cycles_leave_no_bytes_counted():
    client = CpuPlugin().create_client()
    device = client.devices()[0]
    exe = client.compile(_program(), CompileOptions())
    gc.collect()
    baseline = device.memory_stats().bytes_in_use
    device._stats_lock = CollectingLock(device._stats_lock)

    def work(k: int) -> None:
        for r in range(4):
            host = np.full(N, k + r / 8, np.float32)
            arg = _put(client, host)
            [outs] = exe.execute([[arg]])
            np.testing.assert_array_equal(outs[0].to_host().result(WATCHDOG_S), host + host)
            for buf in (arg, *outs):
                drop_in_cycle(buf)
            del arg, outs, buf

    def check():
        in_threads(work)
        gc.collect()
        assert device.memory_stats().bytes_in_use == baseline
        client.close()

    finishes_within(2 * WATCHDOG_S, check, "eight threads executing and dropping cpu buffers")
