"""Collectives on 2 and 4 virtual cpu devices against the interpreter with as many devices:
every collective, the group modes, several element types, reducers other than sum, a loop, the
timeout. The cpu runs them as host steps (never a FALLBACK: HLORT_FALLBACK=error here)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from hlort.errors import ErrorCode, HlortError  # noqa: E402
from hlort.plugin.interpreter_backend import InterpreterPlugin  # noqa: E402
from hlort.runtime.compile import compile_on  # noqa: E402
from hlort.runtime.selection import backend_for_client  # noqa: E402
from hlort.testing.collective_programs import (  # noqa: E402
    large_all_reduce_programs,
    loop_program,
    mlp_inputs,
    mlp_step_program,
    programs,
    run_program,
)
from hlort_cpu.collective_thunks import CollectiveThunk  # noqa: E402
from hlort_cpu.plugin import CpuPlugin  # noqa: E402

DTYPES = ["f32", "s32", "bf16", "f64", "pred"]


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("HLORT_FALLBACK", "error")


@pytest.fixture(scope="module")
def backends():
    made = {}
    for n in (2, 4):
        cpu = CpuPlugin().create_client({"device_count": n})
        ref = InterpreterPlugin(device_count=n).create_client()
        made[n] = (backend_for_client(cpu), backend_for_client(ref))
    yield made
    for cpu, ref in made.values():
        cpu.client.close()
        ref.client.close()


CASES = [(n, t, p) for n in (2, 4) for t in DTYPES for p in programs(n, t)]
CASES += [(n, t, p) for n in (2, 4) for t in DTYPES for p in large_all_reduce_programs(n, t)]


@pytest.mark.parametrize("devices,dtype,program", CASES, ids=[p.name for _, _, p in CASES])
def test_matches_the_interpreter_bit_for_bit(backends, devices, dtype, program):
    cpu, ref = backends[devices]
    got = run_program(cpu, program)
    want = run_program(ref, program)
    assert len(got) == len(want) == program.copies
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert len(g) == len(w)
        for j, (a, b) in enumerate(zip(g, w, strict=True)):
            assert a.dtype == b.dtype and a.shape == b.shape, (k, j)
            assert a.tobytes() == b.tobytes(), f"device {k} output {j} differs"


@pytest.mark.parametrize("devices", [2, 4])
def test_a_collective_in_a_loop_meets_the_same_trip(backends, devices):
    cpu, ref = backends[devices]
    program = loop_program(devices)
    got = run_program(cpu, program)
    assert [a.tobytes() for (a,) in got] == [a.tobytes() for (a,) in run_program(ref, program)]
    total = sum(program.inputs(k)[0] for k in range(devices))
    # trip 1 halves the sum over the devices; trips 2 and 3 sum n equal values and halve them
    expected = total * np.float32(0.5) * np.float32(devices / 2) ** 2
    np.testing.assert_allclose(got[0][0], expected, rtol=1e-5)  # f32 rounding of the sums


@pytest.mark.parametrize("devices", [2, 4])
def test_large_all_reduces_split_the_reduction(backends, devices):
    """The large programs above take the sliced path (the bitwise test covers their values)."""
    cpu, _ = backends[devices]
    for program in large_all_reduce_programs(devices, "f32"):
        exe = compile_on(cpu, program.text)
        steps = [s for s in exe.raw.program.steps if isinstance(s, CollectiveThunk)]
        assert [s.sliced for s in steps] == [True] + [False] * (len(steps) - 1), program.name
    (small,) = [p for p in programs(devices, "f32") if p.name.startswith("all_reduce_sum")]
    (step,) = [
        s for s in compile_on(cpu, small.text).raw.program.steps if isinstance(s, CollectiveThunk)
    ]
    assert not step.sliced


def test_collectives_are_compiled_steps_not_fallbacks(backends):
    cpu, _ = backends[4]
    (program,) = [p for p in programs(4, "f32") if p.name.startswith("async_pairs")]
    exe = compile_on(cpu, program.text, options={"num_replicas": 4})
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    for op in ("all-reduce-start", "all-gather-start", "collective-permute-start"):
        assert stats["compiled"].get(f"{op} (host collective)") == 1, stats


SKIPS_THE_COLLECTIVE = """
HloModule skip, replica_count=2

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

reduce_it {
  v = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(v), replica_groups={}, to_apply=sum
}

keep_it {
  ROOT v = f32[4] parameter(0)
}

ENTRY main {
  x = f32[4] parameter(0)
  id = u32[] replica-id()
  zero = u32[] constant(0)
  first = pred[] compare(id, zero), direction=EQ
  ROOT y = f32[4] conditional(first, x, x), true_computation=reduce_it,
    false_computation=keep_it
}
"""


def test_a_device_that_never_arrives_is_a_deadline_not_a_hang(backends, monkeypatch):
    monkeypatch.setenv("HLORT_COLLECTIVE_TIMEOUT", "0.5")
    cpu, _ = backends[2]
    exe = compile_on(
        cpu, SKIPS_THE_COLLECTIVE.replace(",\n    false", ", false"), options={"num_replicas": 2}
    )
    outs = exe.execute_sharded([[np.ones(4, np.float32)], [np.ones(4, np.float32)]])
    np.testing.assert_array_equal(outs[1][0].numpy(), np.ones(4, np.float32))
    with pytest.raises(HlortError) as info:
        outs[0][0].numpy()
    assert info.value.code is ErrorCode.DEADLINE_EXCEEDED
    assert "[1]" in info.value.message and "0.5 s" in info.value.message


# -- must-show: a data-parallel MLP training step --------------------------------------------
MLP_RTOL, MLP_ATOL = 1e-5, 1e-6  # f32: the gradients' sums over the batch are regrouped by device


def _mlp_step(backend, replicas: int, x, y, params):
    text = mlp_step_program(x.shape[0] // replicas, replicas)
    exe = compile_on(backend, text, options={"num_replicas": replicas})
    rows = x.shape[0] // replicas
    args = [
        [x[k * rows : (k + 1) * rows], y[k * rows : (k + 1) * rows], *params]
        for k in range(replicas)
    ]
    return exe, [[b.numpy() for b in outs] for outs in exe.execute_sharded(args)]


def test_data_parallel_mlp_step_on_four_devices_matches_one_device(backends):
    cpu, ref = backends[4]
    x, y, params = mlp_inputs(32)
    _, (single,) = _mlp_step(ref, 1, x, y, params)  # the interpreter on one device: the oracle
    exe, per_device = _mlp_step(cpu, 4, x, y, params)
    assert exe.raw.stats()["fallback_count"] == 0
    for outs in per_device:  # every replica ends with the same new parameters and loss
        for got, want in zip(outs, single, strict=True):
            np.testing.assert_allclose(got, want, rtol=MLP_RTOL, atol=MLP_ATOL)
    for outs in per_device[1:]:
        assert all(a.tobytes() == b.tobytes() for a, b in zip(outs, per_device[0], strict=True))
    assert not np.allclose(per_device[0][1], params[0])  # the step moved the weights


def test_two_threads_executing_on_the_devices_in_opposite_orders_never_deadlock(
    backends, monkeypatch
):
    """Executions of different threads reach every device queue in the same order (an
    execution's launches are enqueued together). Here both threads start each execution at
    once and pause after enqueuing on one device: with interleaved enqueues queue 0 would run
    A while queue 1 runs B, each waiting in its all-reduce for the other until the timeout."""
    import threading
    import time

    from hlort.plugin.base.simple_executable import SimpleExecutable

    monkeypatch.setenv("HLORT_COLLECTIVE_TIMEOUT", "3")
    enqueue_one = SimpleExecutable._execute_on

    def slow_enqueue(self, *args, **kwargs):
        out = enqueue_one(self, *args, **kwargs)
        time.sleep(0.005)  # the other thread's execution gets every chance to interleave
        return out

    monkeypatch.setattr(SimpleExecutable, "_execute_on", slow_enqueue)
    cpu, _ = backends[2]
    (program,) = [p for p in programs(2, "f32") if p.name.startswith("all_reduce_sum")]
    executables = [
        compile_on(
            cpu,
            program.text.replace("HloModule ", f"HloModule order{k}_"),
            options={"num_replicas": 2, "device_assignment": assignment},
        )
        for k, assignment in enumerate((((0,), (1,)), ((1,), (0,))))
    ]
    together = threading.Barrier(2, timeout=30)
    errors: list[BaseException] = []

    def loop(exe) -> None:
        bufs = [
            [cpu.client.buffer_from_host(a, d.raw) for a in program.inputs(k)]
            for k, d in enumerate(exe.devices)
        ]
        try:
            for _ in range(10):
                together.wait()
                for (out,) in exe.raw.execute(bufs):
                    out.to_host().result()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            together.abort()

    threads = [threading.Thread(target=loop, args=(exe,)) for exe in executables]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
