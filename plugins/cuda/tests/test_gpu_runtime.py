"""The shared GPU runtime (hlort.plugin.base.gpu_*) on the fake driver: transfers, events, launches
as recorded driver calls, donation, dead buffers, memory, peers, serialization, host fallbacks.

The fake runs no GPU code: kernels are Python functions over host memory. What is tested is the
runtime's use of the driver protocol, not GPU execution.
"""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest

from hlort.dtypes import S32
from hlort.errors import ErrorCode, HlortError
from hlort.plugin.options import CompileOptions, ExecuteOptions, HostBufferSemantics
from hlort.runtime.client import Backend
from hlort.shape import ArrayShape
from hlort.text import parse_module

ADD = """HloModule add
ENTRY main {
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  ROOT s = f32[3] add(x, y)
}
"""

PAIR = """HloModule pair
ENTRY main {
  x = f32[2,2] parameter(0)
  n = f32[2,2] negate(x)
  ROOT t = (f32[2,2], f32[2,2]) tuple(n, x)
}
"""

DOT = """HloModule mm
ENTRY main {
  a = f32[4,3] parameter(0)
  b = f32[3,5] parameter(1)
  ROOT d = f32[4,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def compile_on(client, text, **options):
    return client.compile(parse_module(text), CompileOptions(**options))


def put(client, array, device=0):
    return client.buffer_from_host(np.asarray(array), client.devices()[device])


def host(buffer):
    return buffer.to_host().result(timeout=10)


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype=np.float32).reshape(3, 4),
        np.array(-0.0, dtype=np.float32),
        np.zeros((0, 5), dtype=np.int32),
        np.array([np.nan, np.inf, -np.inf], dtype=np.float64),
        np.array([1.5, -2.25], dtype=ml_dtypes.bfloat16),
        np.array([True, False]),
    ],
)
def test_transfer_round_trip_is_bit_exact(make_client, array):
    client = make_client()
    buffer = put(client, array)
    buffer.ready_event().wait(timeout=10)
    back = host(buffer)
    assert back.dtype == array.dtype and back.shape == array.shape
    assert back.tobytes() == array.tobytes()


def test_transfer_is_queued_on_the_stream_and_ready_after_its_event(make_client):
    client = make_client()
    driver = client.driver
    source = np.arange(4, dtype=np.float32)
    buffer = put(client, source)
    source[:] = -1  # IMMUTABLE_ONLY_DURING_CALL: the runtime staged its own copy
    buffer.ready_event().wait(timeout=10)
    assert driver.pending_ops() == 0  # the watcher synchronized the event, draining the stream
    assert any(c[0] == "h2d" and c[2] == 16 for c in driver.calls)
    np.testing.assert_array_equal(host(buffer), [0, 1, 2, 3])


def test_execute_launches_the_program_kernel_with_slot_pointers(make_client, rng):
    client = make_client()
    exe = compile_on(client, ADD)
    x, y = rng.standard_normal(3, dtype=np.float32), rng.standard_normal(3, dtype=np.float32)
    bx, by = put(client, x), put(client, y)
    (out,) = exe.execute([[bx, by]])[0]
    np.testing.assert_array_equal(host(out), x + y)
    launches = [c for c in client.driver.calls if c[0] == "launch"]
    assert len(launches) == 1
    name, grid, block, shared, args = launches[0][1:]
    assert name == "reference" and grid == (1, 1, 1) and shared == 0
    assert args[:2] == (bx.storage_now().pointer, by.storage_now().pointer)
    assert args[2] == out.storage_now().pointer
    assert type(out).__name__ == "GpuBuffer"


def test_tuple_results_and_repeated_runs_reuse_cached_memory(make_client):
    client = make_client()
    exe = compile_on(client, PAIR)
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    bx = put(client, x)
    for _ in range(3):
        n, same = exe.execute([[bx]])[0]
        np.testing.assert_array_equal(host(n), -x)
        np.testing.assert_array_equal(host(same), x)  # the program copies the parameter
        n.delete()
        same.delete()
    allocs = [c for c in client.driver.calls if c[0] == "mem_alloc"]
    assert len(allocs) <= 3  # x, then two outputs allocated once and reused from the cache


def test_donated_argument_is_dead_and_its_memory_becomes_the_output(make_client):
    client = make_client()
    exe = compile_on(client, ADD, donated_arguments=(0,))
    bx, by = put(client, np.ones(3, np.float32)), put(client, np.full(3, 2, np.float32))
    pointer = bx.storage_now().pointer
    (out,) = exe.execute([[bx, by]])[0]
    np.testing.assert_array_equal(host(out), [3, 3, 3])
    assert out.storage_now().pointer == pointer
    assert bx.is_deleted()
    with pytest.raises(HlortError) as err:
        host(bx)
    assert err.value.code is ErrorCode.FAILED_PRECONDITION and "donated" in err.value.message


def test_kept_argument_of_a_donating_program_gets_a_private_copy(make_client):
    client = make_client()
    exe = compile_on(client, ADD, donated_arguments=(0,))
    bx, by = put(client, np.ones(3, np.float32)), put(client, np.full(3, 2, np.float32))
    (out,) = exe.execute([[bx, by]], ExecuteOptions(non_donatable_input_indices=(0,)))[0]
    np.testing.assert_array_equal(host(out), [3, 3, 3])
    np.testing.assert_array_equal(host(bx), [1, 1, 1])  # written in place would be [3, 3, 3]
    assert out.storage_now().pointer != bx.storage_now().pointer


def test_deleted_buffer_errors_name_it_and_the_fix(make_client):
    client = make_client()
    exe = compile_on(client, ADD)
    bx, by = put(client, np.ones(3, np.float32)), put(client, np.ones(3, np.float32))
    bx.delete()
    for action in (
        lambda: host(bx),
        lambda: exe.execute([[bx, by]]),
        lambda: bx.copy_to_device(client.devices()[0]),
    ):
        with pytest.raises(HlortError) as err:
            action()
        assert err.value.code is ErrorCode.FAILED_PRECONDITION
        assert "was deleted" in err.value.message and "transfer the data again" in err.value.message


def test_out_of_memory_names_bytes_asked_and_free_and_the_fix(make_client):
    client = make_client(memory=1 << 20)
    with pytest.raises(HlortError) as err:
        put(client, np.zeros(1 << 19, np.float32))  # 2 MiB on a 1 MiB device
    assert err.value.code is ErrorCode.RESOURCE_EXHAUSTED
    message = err.value.message
    assert "2,097,152 bytes" in message and "free" in message and "fix:" in message


def test_allocator_gives_its_cache_back_and_retries_before_failing(make_client):
    client = make_client(memory=4 << 20)
    device = client.devices()[0]
    blocks = [device.allocate_bytes((1 << 20) - 512) for _ in range(3)]  # 3 MiB in 512 B steps
    for block in blocks:
        device.free(block)
    assert device.allocator.stats().bytes_cached > 0
    big = device.allocate_bytes(3 << 20)  # 4 MiB rounded: fits once the cache went back
    assert device.allocator.stats().bytes_cached == 0
    assert any(c[0] == "mem_free" for c in client.driver.calls)
    device.free(big)


def test_memory_stats_follow_buffers(make_client):
    client = make_client(memory=8 << 20)
    device = client.devices()[0]
    before = device.memory_stats()
    buffer = put(client, np.zeros(1000, np.float32))
    buffer.ready_event().wait(timeout=10)
    during = device.memory_stats()
    assert during.bytes_in_use >= before.bytes_in_use + 4000
    assert during.bytes_limit == 8 << 20 and during.largest_alloc_size >= 4000
    buffer.delete()
    assert device.memory_stats().bytes_in_use == before.bytes_in_use
    assert device.memory_info()["total"] == 8 << 20


def test_several_gpus_are_several_devices_with_peer_copies(make_client):
    client = make_client(devices=2)
    assert [d.id for d in client.devices()] == [0, 1]
    x = np.arange(6, dtype=np.int32)
    b0 = put(client, x, device=0)
    b1 = b0.copy_to_device(client.devices()[1])
    np.testing.assert_array_equal(host(b1), x)
    assert b1.device is client.devices()[1]
    assert any(c[0] == "peer" and c[1:3] == (1, 0) for c in client.driver.calls)


def test_failed_kernel_fails_every_output_with_the_driver_error(make_client):
    client = make_client()
    exe = compile_on(client, PAIR)
    client.driver.fail_next_kernel = HlortError("illegal address in kernel", ErrorCode.INTERNAL)
    outs = exe.execute([[put(client, np.zeros((2, 2), np.float32))]])[0]
    for out in outs:
        with pytest.raises(HlortError, match="illegal address"):
            host(out)


def test_serialized_blob_runs_on_the_same_target_and_is_refused_on_another(make_client):
    client = make_client()
    blob = compile_on(client, ADD).serialize()
    again = make_client().deserialize_executable(blob)
    other = again.client
    (out,) = again.execute(
        [[put(other, np.ones(3, np.float32)), put(other, np.ones(3, np.float32))]]
    )[0]
    np.testing.assert_array_equal(host(out), [2, 2, 2])
    with pytest.raises(HlortError) as err:
        make_client(arch="sm_80").deserialize_executable(blob)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert "sm_90" in err.value.message and "sm_80" in err.value.message


def test_damaged_gpu_payload_is_data_loss(make_client):
    from hlort.plugin.base import frame_executable
    from hlort.plugin.base.serialization import FrameHeader, unframe_executable

    client = make_client()
    header, payload = unframe_executable(compile_on(client, ADD).serialize())
    damaged = frame_executable(header, payload[:40])
    with pytest.raises(HlortError) as err:
        client.deserialize_executable(damaged)
    assert err.value.code in (ErrorCode.DATA_LOSS, ErrorCode.INVALID_ARGUMENT)
    del FrameHeader


def test_host_fallback_is_counted_and_refused_under_error_policy(make_client, monkeypatch):
    client = make_client(plan="host_fallback")
    monkeypatch.setenv("HLORT_FALLBACK", "error")
    with pytest.raises(HlortError) as err:
        compile_on(client, ADD)
    assert err.value.code is ErrorCode.UNIMPLEMENTED and "fake plan" in err.value.message
    monkeypatch.setenv("HLORT_FALLBACK", "allow")
    exe = compile_on(client, ADD)
    assert [r.instruction for r in exe.fallbacks()] == ["s"]
    (out,) = exe.execute(
        [[put(client, np.ones(3, np.float32)), put(client, np.full(3, 4, np.float32))]]
    )[0]
    np.testing.assert_array_equal(host(out), [5, 5, 5])


def test_gemm_library_call_runs_through_the_library_runner(make_client, rng):
    client = make_client(plan="gemm")
    a, b = rng.standard_normal((4, 3), np.float32), rng.standard_normal((3, 5), np.float32)
    (out,) = compile_on(client, DOT).execute([[put(client, a), put(client, b)]])[0]
    np.testing.assert_allclose(host(out), a @ b, rtol=1e-6)


def test_library_call_without_a_library_is_unimplemented_at_compile(make_client):
    client = make_client(plan="gemm", no_library=True)
    with pytest.raises(HlortError) as err:
        compile_on(client, DOT)
    assert err.value.code is ErrorCode.UNIMPLEMENTED and "gemm" in err.value.message


def test_program_for_another_target_is_refused_at_compile(make_client):
    from fake_gpu_client import FakeCompiler

    client = make_client()
    program = FakeCompiler.compile_program(client, parse_module(ADD), CompileOptions(), "sm_80")
    from hlort.plugin.base.gpu_program_runner import check_program_for_device

    with pytest.raises(HlortError, match="compiled for sm_80.*is sm_90"):
        check_program_for_device(program, client.devices()[0])


def test_compile_only_client_compiles_and_refuses_buffers():
    from fake_gpu_client import FakeGpuPlugin

    client = FakeGpuPlugin().create_compile_only_client("sm_90", {"plan": "reference"})
    exe = compile_on(client, ADD)
    assert exe.program.target == "sm_90" and "sm_90" in client.platform_version
    assert set(exe.artifacts()) == {"kernels.ll", "kernels.bin", "gpu_program.txt"}
    with pytest.raises(HlortError) as err:
        put(client, np.ones(3, np.float32))
    assert err.value.code is ErrorCode.UNAVAILABLE
    client.close()


def test_backend_wrapper_runs_numpy_in_numpy_out(make_client, rng):
    client = make_client()
    backend = Backend(client)
    exe = backend.compile(ADD)
    x, y = rng.standard_normal(3, dtype=np.float32), rng.standard_normal(3, dtype=np.float32)
    np.testing.assert_array_equal(exe(x, y), x + y)


@pytest.mark.parametrize("semantics", list(HostBufferSemantics))
def test_every_host_buffer_semantics_copies_to_device_memory(make_client, semantics):
    client = make_client()
    source = np.arange(6, dtype=np.int64).reshape(2, 3)
    buffer = client.buffer_from_host(source, client.devices()[0], semantics)
    np.testing.assert_array_equal(host(buffer), source)
    assert not np.shares_memory(host(buffer), source)


def test_unknown_host_buffer_semantics_is_invalid_argument(make_client):
    client = make_client()
    with pytest.raises(HlortError) as err:
        client.buffer_from_host(np.ones(2), client.devices()[0], "zero-copy please")
    assert err.value.code is ErrorCode.INVALID_ARGUMENT


def test_program_loads_once_per_device_and_runs_replicated(make_client):
    client = make_client(devices=2)
    exe = compile_on(client, ADD, num_replicas=2)
    d0, d1 = client.devices()
    for _ in range(2):
        rows = exe.execute(
            [
                [put(client, np.ones(3, np.float32), 0), put(client, np.ones(3, np.float32), 0)],
                [
                    put(client, np.full(3, 2, np.float32), 1),
                    put(client, np.full(3, 2, np.float32), 1),
                ],
            ]
        )
        np.testing.assert_array_equal(host(rows[0][0]), [2, 2, 2])
        np.testing.assert_array_equal(host(rows[1][0]), [4, 4, 4])
        assert rows[0][0].device is d0 and rows[1][0].device is d1
    loads = [c for c in client.driver.calls if c[0] == "module_load"]
    assert sorted(c[1] for c in loads) == [0, 1]


def test_deleting_a_buffer_while_its_launch_is_queued_frees_after_the_launch(make_client):
    client = make_client()
    exe = compile_on(client, ADD)
    bx, by = put(client, np.ones(3, np.float32)), put(client, np.ones(3, np.float32))
    (out,) = exe.execute([[bx, by]])[0]
    bx.delete()  # the launch holds it: memory goes back only once the launch has finished
    np.testing.assert_array_equal(host(out), [2, 2, 2])
    out.delete()
    by.delete()
    device = client.devices()[0]
    for _ in range(100):
        if device.memory_stats().bytes_in_use == 0:
            break
        time.sleep(0.01)
    assert device.memory_stats().bytes_in_use == 0


def test_blob_whose_program_disagrees_with_its_module_is_refused(make_client):
    import dataclasses

    from hlort.codegen.gpu.program import GpuProgram
    from hlort.plugin.base import frame_executable
    from hlort.plugin.base.gpu_executable import pack_payload, unpack_payload
    from hlort.plugin.base.serialization import unframe_executable

    client = make_client()
    header, payload = unframe_executable(compile_on(client, ADD).serialize())
    text, program = unpack_payload(payload, header.name)
    slots = list(program.slots)
    slots[0] = dataclasses.replace(slots[0], dims=(2,), size=8)  # a parameter shrunk to 2
    bad = GpuProgram(**{**program.__dict__, "slots": slots})
    blob = frame_executable(header, pack_payload(text, bad))
    with pytest.raises(HlortError) as err:
        client.deserialize_executable(blob)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and "parameter 0" in err.value.message


def test_host_loop_runs_condition_body_and_update_until_the_predicate_is_false(make_client):
    """while (i < 10) i = i + 3, as a hand-made program of fake kernels: 0 -> 12, four bodies."""
    from hlort.codegen.gpu.program import (
        BufferSlot,
        Copy,
        GpuProgram,
        HostLoop,
        KernelInfo,
        KernelLaunch,
    )
    from hlort.plugin.base.gpu_program_runner import ProgramRunner

    client = make_client()
    driver, device = client.driver, client.devices()[0]
    bodies = []

    def less_than_10(drv, module, args):
        drv.array(args[1], np.uint8, (1,))[0] = drv.array(args[0], np.int32, ())[()] < 10

    def add_3(drv, module, args):
        bodies.append(1)
        drv.array(args[1], np.int32, ())[()] = drv.array(args[0], np.int32, ())[()] + 3

    driver.kernels.update(lt=less_than_10, add=add_3)
    slots = [
        BufferSlot(0, "parameter", 4, 256, "s32", (), parameter_number=0),
        BufferSlot(1, "output", 4, 256, "s32", ()),  # the loop state = the result
        BufferSlot(2, "temp", 1, 256, "pred", ()),
        BufferSlot(3, "temp", 4, 256, "s32", ()),
    ]
    loop = HostLoop(
        "while",
        (1,),
        (Copy(0, 1, 4),),
        (KernelLaunch("lt", (1, 1, 1), (1, 1, 1), 0, (1, 2)),),
        2,
        (KernelLaunch("add", (1, 1, 1), (1, 1, 1), 0, (1, 3)),),
        (Copy(3, 1, 4),),
    )
    program = GpuProgram(
        "loop",
        "sm_90",
        "fake",
        "fake",
        "",
        b"fake",
        [KernelInfo("lt", "test", 2), KernelInfo("add", "test", 2)],
        slots,
        [loop],
        [0],
        [1],
        False,
        0,
    )
    program.check()
    start = put(client, np.array(0, np.int32))
    (out,) = ProgramRunner(program, None).run(device, [start.storage_now()], set())
    result = device.copy_out(out, ArrayShape(S32, ()))
    assert result == 12 and len(bodies) == 4


@pytest.mark.parametrize("index,ran", [(0, "neg"), (1, "twice"), (2, "twice"), (-1, "twice")])
def test_host_branch_reads_the_selector_back_and_runs_only_its_branch(make_client, index, ran):
    """A two-way s32 conditional as a hand-made program of fake kernels: the selector is read
    from the device, only the chosen branch's kernel runs (an index outside [0, 2) runs the
    last), and its result copy lands in the conditional's result slot."""
    from hlort.codegen.gpu.program import (
        BufferSlot,
        Copy,
        GpuProgram,
        HostBranch,
        KernelInfo,
        KernelLaunch,
    )
    from hlort.plugin.base.gpu_program_runner import ProgramRunner

    client = make_client()
    driver, device = client.driver, client.devices()[0]
    calls = []

    def neg(drv, module, args):
        calls.append("neg")
        drv.array(args[1], np.int32, ())[()] = -drv.array(args[0], np.int32, ())[()]

    def twice(drv, module, args):
        calls.append("twice")
        drv.array(args[1], np.int32, ())[()] = 2 * drv.array(args[0], np.int32, ())[()]

    driver.kernels.update(neg=neg, twice=twice)
    slots = [
        BufferSlot(0, "parameter", 4, 256, "s32", (), parameter_number=0),  # the selector
        BufferSlot(1, "parameter", 4, 256, "s32", (), parameter_number=1),
        BufferSlot(2, "output", 4, 256, "s32", ()),
        BufferSlot(3, "temp", 4, 256, "s32", ()),
        BufferSlot(4, "temp", 4, 256, "s32", ()),
    ]
    branch = HostBranch(
        "conditional",
        0,
        "s32",
        (2,),
        (
            (KernelLaunch("neg", (1, 1, 1), (1, 1, 1), 0, (1, 3)), Copy(3, 2, 4)),
            (KernelLaunch("twice", (1, 1, 1), (1, 1, 1), 0, (1, 4)), Copy(4, 2, 4)),
        ),
    )
    kernels = [KernelInfo("neg", "test", 2), KernelInfo("twice", "test", 2)]
    program = GpuProgram(
        "branch",
        "sm_90",
        "fake",
        "fake",
        "",
        b"fake",
        kernels,
        slots,
        [branch],
        [0, 1],
        [2],
        False,
        0,
    )
    program.check()
    buffers = [put(client, np.array(v, np.int32)) for v in (index, 21)]  # kept alive
    args = [b.storage_now() for b in buffers]
    (out,) = ProgramRunner(program, None).run(device, args, set())
    result = device.copy_out(out, ArrayShape(S32, ()))
    assert calls == [ran]
    assert result == (-21 if ran == "neg" else 42)


def test_executable_delete_unloads_after_the_launches_queued_before_it(make_client):
    """delete() while a launch is still queued: the module and constants stay until that
    launch has run on the stream, and are unloaded once (a launch that found them gone would
    load the program again and leave that copy loaded)."""
    import threading

    client = make_client()
    driver = client.driver
    kernel = driver.kernels["reference"]

    def recorded(drv, module, pointers):
        driver._record("ran", "reference")
        kernel(drv, module, pointers)

    driver.kernels["reference"] = recorded
    exe = compile_on(client, ADD)
    x, y = put(client, np.arange(3, dtype=np.float32)), put(client, np.ones(3, np.float32))
    host(exe.execute([[x, y]])[0][0])  # loaded on the device
    gate = threading.Event()
    device = client.devices()[0]
    device.queue.enqueue(gate.wait, "hold the queue")
    (out,) = exe.execute([[x, y]])[0]
    exe.delete()
    gate.set()
    np.testing.assert_array_equal(host(out), np.arange(3, dtype=np.float32) + 1)
    device.queue.synchronize(timeout=10)
    names = [c[0] for c in driver.calls]
    assert names.count("module_load") == names.count("module_unload") == 1
    assert names.index("module_unload") > max(i for i, n in enumerate(names) if n == "ran")


def test_work_recorded_after_close_is_refused_not_left_waiting():
    """A value recorded after the watcher closed would never complete (a wait on it hangs)."""
    from fake_gpu_driver import FakeGpuDriver

    from hlort.plugin.base.events import AsyncValue
    from hlort.plugin.base.gpu_events import StreamEventWatcher

    driver = FakeGpuDriver()
    stream = driver.stream_create(0)
    watcher = StreamEventWatcher(driver, 0, "fake:0")
    done = watcher.record(stream, AsyncValue(), result=1)
    driver.stream_synchronize(stream)
    assert done.result(timeout=10) == 1
    watcher.close()
    with pytest.raises(HlortError) as info:
        watcher.record(stream, AsyncValue(), result=2)
    assert info.value.code is ErrorCode.FAILED_PRECONDITION and "closed" in info.value.message


def test_failed_kernel_gives_its_output_memory_back(make_client):
    """Outputs of a failed execution never become buffers: their device blocks are freed, and so
    is a donated input (nothing holds it any more)."""
    client = make_client()
    device = client.devices()[0]
    exe = compile_on(client, PAIR)
    x = put(client, np.zeros((2, 2), np.float32))
    for out in exe.execute([[x]])[0]:  # warm: the program's own blocks now exist
        host(out)
        out.delete()
    before = device.allocator.stats().bytes_in_use
    client.driver.fail_next_kernel = HlortError("illegal address in kernel", ErrorCode.INTERNAL)
    for out in exe.execute([[x]])[0]:
        with pytest.raises(HlortError, match="illegal address"):
            host(out)
    assert device.allocator.stats().bytes_in_use == before
