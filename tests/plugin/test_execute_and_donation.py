"""SimpleExecutable.execute: validation, asynchronous outputs, errors, aliasing and donation."""

import threading

import numpy as np
import pytest

from hlort import Builder, shape
from hlort.errors import ErrorCode, HlortError, InvalidArgument
from hlort.ir import Opcode
from hlort.plugin.api import CompileOptions, ExecuteOptions
from hlort.plugin.base import SimpleClient, SimpleDevice, SimpleExecutable
from hlort.plugin.interpreter_backend import InterpreterPlugin

F32_3 = shape.array("f32", [3])


def add_module(name="add"):
    b = Builder(name)
    x, y = b.parameter(F32_3), b.parameter(F32_3)
    return b.build(b.op(Opcode.ADD, (x, y)))


def passthrough_module():
    """Returns its first parameter and a sum: the first output aliases an input."""
    b = Builder("passthrough")
    x, y = b.parameter(F32_3), b.parameter(F32_3)
    return b.build(b.op(Opcode.TUPLE, (x, b.op(Opcode.ADD, (x, y)), x)))


@pytest.fixture
def client():
    c = InterpreterPlugin(device_count=2).create_client()
    yield c
    c.close()


def put(client, values, device=0):
    return client.buffer_from_host(np.asarray(values, np.float32), client.devices()[device])


def test_execute_returns_pending_outputs_that_complete(client):
    exe = client.compile(add_module(), CompileOptions())
    [outs] = exe.execute([[put(client, [1, 2, 3]), put(client, [10, 20, 30])]])
    assert len(outs) == 1 and str(outs[0].shape) == "f32[3]"
    np.testing.assert_array_equal(outs[0].to_host().result(10), [11, 22, 33])
    assert exe.parameter_shapes == [F32_3, F32_3] and exe.output_shapes == [F32_3]
    assert [d.id for d in exe.addressable_devices()] == [0]


@pytest.mark.parametrize(
    "args, match",
    [
        (lambda c: [[put(c, [1, 2, 3])]], "takes 2 argument"),
        (lambda c: [[put(c, [1, 2]), put(c, [1, 2, 3])]], "argument 0 .* must be f32\\[3\\]"),
        (
            lambda c: [[put(c, [1, 2, 3]), put(c, [1, 2, 3], device=1)]],
            r"on another device.*copy it to interpreter:0 first \(hlort: buffer\.copy_to\(device\)",
        ),
        (lambda c: [[put(c, [1, 2, 3]), np.ones(3, np.float32)]], "must be a buffer"),
        (lambda c: [[put(c, [1, 2, 3]), put(c, [1, 2, 3])]] * 2, "one argument list per device"),
    ],
)
def test_bad_arguments_are_rejected_before_anything_runs(client, args, match):
    exe = client.compile(add_module(), CompileOptions())
    with pytest.raises(InvalidArgument, match=match):
        exe.execute(args(client))


def test_launch_errors_reach_every_output(client):
    class Failing(SimpleExecutable):
        def launch(self, device, arguments, ctx):
            raise InvalidArgument("kernel rejected the input")

    options = CompileOptions()
    exe = Failing(client, add_module(), options, client.resolve_placements(options))
    [outs] = exe.execute([[put(client, [1, 2, 3]), put(client, [1, 2, 3])]])
    for out in outs:
        with pytest.raises(InvalidArgument, match="kernel rejected"):
            out.to_host().result(10)
        assert out.ready_event().error().code is ErrorCode.INVALID_ARGUMENT


def test_an_input_that_failed_fails_the_outputs(client):
    from hlort.plugin.base import SimpleBuffer, failed_value

    exe = client.compile(add_module(), CompileOptions())
    broken = SimpleBuffer(client.devices()[0], F32_3, failed_value(HlortError("upload failed")))
    [outs] = exe.execute([[broken, put(client, [1, 2, 3])]])
    with pytest.raises(HlortError, match="upload failed"):
        outs[0].ready_event().wait(10)


def test_outputs_aliasing_inputs_are_copies(client):
    exe = client.compile(passthrough_module(), CompileOptions())
    x = put(client, [1, 2, 3])
    [outs] = exe.execute([[x, put(client, [1, 1, 1])]])
    out0, out1, out2 = (o.to_host().result(10) for o in outs)
    np.testing.assert_array_equal(out0, [1, 2, 3])
    np.testing.assert_array_equal(out2, [1, 2, 3])
    storages = [o.storage_now() for o in outs]
    assert not np.shares_memory(storages[0], x.storage_now())
    assert not np.shares_memory(storages[0], storages[2])
    x.delete()
    np.testing.assert_array_equal(outs[0].to_host().result(10), [1, 2, 3])


def test_donated_argument_is_consumed_and_use_after_names_the_buffer(client):
    exe = client.compile(add_module(), CompileOptions(donated_arguments=(0,)))
    assert exe.donated_argument_indices() == (0,)
    x, y = put(client, [1, 2, 3]), put(client, [1, 1, 1])
    [outs] = exe.execute([[x, y]])
    np.testing.assert_array_equal(outs[0].to_host().result(10), [2, 3, 4])
    assert x.is_deleted() and not y.is_deleted()
    with pytest.raises(HlortError) as info:
        x.to_host()
    assert info.value.code is ErrorCode.FAILED_PRECONDITION
    assert x.name in info.value.message and "donated" in info.value.message
    with pytest.raises(HlortError, match="donated") as info:
        exe.execute([[x, y]])
    assert info.value.code is ErrorCode.FAILED_PRECONDITION


def test_non_donatable_input_indices_keep_the_buffer(client):
    exe = client.compile(add_module(), CompileOptions(donated_arguments=(0,)))
    x, y = put(client, [1, 2, 3]), put(client, [1, 1, 1])
    exe.execute([[x, y]], ExecuteOptions(non_donatable_input_indices={0}))[0][0].to_host().result()
    assert not x.is_deleted()


def test_donating_the_same_buffer_twice_in_one_call_fails(client):
    exe = client.compile(add_module(), CompileOptions(donated_arguments=(0, 1)))
    x = put(client, [1, 2, 3])
    with pytest.raises(HlortError, match="donated"):
        exe.execute([[x, x]])


def test_donation_out_of_range_is_rejected_at_compile(client):
    with pytest.raises(InvalidArgument, match="donated_arguments lists 5"):
        client.compile(add_module(), CompileOptions(donated_arguments=(5,)))


class InPlaceDevice(SimpleDevice):
    host_memory = False

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.freed = []

    def free(self, storage):
        self.freed.append(id(storage))


class InPlaceExecutable(SimpleExecutable):
    """Adds 1 in place to its argument and returns the same storage (a donation user)."""

    def launch(self, device, arguments, ctx):
        arguments[0] += 1
        return [arguments[0]]


class InPlaceClient(SimpleClient):
    executable_class = InPlaceExecutable

    def create_devices(self):
        return [InPlaceDevice(self, 0, "inplace")]


def increment_module():
    b = Builder("inc")
    x = b.parameter(F32_3)
    return b.build(
        b.op(Opcode.ADD, (x, b.op(Opcode.BROADCAST, (b.constant(1.0),), F32_3, dimensions=())))
    )


def test_donated_storage_reused_as_output_is_kept_not_freed():
    client = InPlaceClient(platform_name="inplace")
    device = client.devices()[0]
    exe = client.compile(increment_module(), CompileOptions(donated_arguments=(0,)))
    x = client.buffer_from_host(np.zeros(3, np.float32), device)
    storage = x.storage_now()
    [outs] = exe.execute([[x]])
    np.testing.assert_array_equal(outs[0].to_host().result(10), [1, 1, 1])
    assert outs[0].storage_now() is storage and device.freed == []
    before = device.memory_stats().bytes_in_use
    outs[0].delete()
    assert device.freed == [id(storage)]
    assert device.memory_stats().bytes_in_use == before - 12
    client.close()


def test_undonated_storage_returned_by_launch_is_duplicated():
    client = InPlaceClient(platform_name="inplace")
    exe = client.compile(increment_module(), CompileOptions())
    x = client.buffer_from_host(np.zeros(3, np.float32), client.devices()[0])
    [outs] = exe.execute([[x]])
    assert outs[0].storage_now() is not x.storage_now()
    client.close()


def test_multi_device_execute_uses_replica_ids(client):
    b = Builder("rid")
    module = b.build(b.op(Opcode.REPLICA_ID, ()))
    exe = client.compile(module, CompileOptions(num_replicas=2))
    assert [d.id for d in exe.addressable_devices()] == [0, 1]
    outs = exe.execute([[], []])
    assert [int(o[0].to_host().result(10)) for o in outs] == [0, 1]
    assert [o[0].device.id for o in outs] == [0, 1]


def test_device_assignment_is_honoured_and_checked(client):
    exe = client.compile(add_module(), CompileOptions(device_assignment=((1,),)))
    assert exe.addressable_devices()[0].id == 1
    with pytest.raises(InvalidArgument, match="no device 7"):
        client.compile(add_module(), CompileOptions(device_assignment=((7,),)))
    with pytest.raises(InvalidArgument, match="needs 4 device"):
        client.compile(add_module(), CompileOptions(num_replicas=4))


def test_eight_threads_execute_one_executable_at_once(client):
    exe = client.compile(add_module(), CompileOptions())
    errors, results = [], {}
    barrier = threading.Barrier(8)

    def worker(t):
        try:
            barrier.wait(10)
            for i in range(25):
                base = np.full(3, t * 100 + i, np.float32)
                [outs] = exe.execute([[put(client, base), put(client, [1, 2, 3])]])
                got = outs[0].to_host().result(10)
                results[(t, i)] = np.array_equal(got, base + [1, 2, 3])
        except Exception as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert errors == []
    assert len(results) == 200 and all(results.values())


def test_donation_waits_for_work_already_reading_the_buffer(client):
    reader = client.compile(add_module("reader"), CompileOptions())
    consumer = client.compile(add_module("consumer"), CompileOptions(donated_arguments=(0,)))
    device = client.devices()[0]
    x, y = put(client, [1, 2, 3]), put(client, [1, 1, 1])
    gate = threading.Event()
    device.queue.enqueue(lambda: gate.wait(10))
    [[read]] = reader.execute([[x, y]])  # queued behind the gate, holding x
    done = []
    thread = threading.Thread(target=lambda: done.append(consumer.execute([[x, y]])))
    thread.start()
    thread.join(0.2)
    assert done == [] and not x.is_deleted()  # waiting for the reader
    gate.set()
    thread.join(10)
    np.testing.assert_array_equal(read.to_host().result(10), [2, 3, 4])
    np.testing.assert_array_equal(done[0][0][0].to_host().result(10), [2, 3, 4])
    assert x.is_deleted()


def test_use_after_delete_messages_say_what_was_attempted_and_the_fix(client):
    exe = client.compile(add_module("f"), CompileOptions())
    x, y = put(client, [1, 2, 3]), put(client, [1, 1, 1])
    x.delete()
    other = client.devices()[1]
    attempts = [
        (lambda: exe.execute([[x, y]]), "cannot pass as argument 0 to 'f': buffer "),
        (lambda: x.to_host(), "cannot copy to host: buffer "),
        (lambda: x.copy_to_device(other), f"cannot copy to {client.platform_name}:1: buffer "),
    ]
    for attempt, start in attempts:
        with pytest.raises(HlortError) as info:
            attempt()
        message = info.value.message
        assert info.value.code is ErrorCode.FAILED_PRECONDITION
        assert message.startswith(start + x.name), message
        assert "was deleted" in message and "transfer the data again" in message


def _read_queued_behind_a_gate(client):
    """(a consumer donating its argument 0, x, y, a read of x queued behind ``gate``, gate)."""
    reader = client.compile(add_module("reader"), CompileOptions())
    consumer = client.compile(add_module("consumer"), CompileOptions(donated_arguments=(0,)))
    device = client.devices()[0]
    x, y = put(client, [1, 2, 3]), put(client, [1, 1, 1])
    gate = threading.Event()
    device.queue.enqueue(lambda: gate.wait(30))
    [[read]] = reader.execute([[x, y]])  # queued behind the gate, holding x
    return consumer, x, y, read, gate


def test_donation_wait_is_bounded_and_leaves_the_buffer_alive(client, monkeypatch):
    """A read queued behind work that never finishes: the donation gives up after
    HLORT_DONATE_TIMEOUT with DEADLINE_EXCEEDED naming the buffer and the fix; the buffer is
    not donated, and is donated normally once the read is done."""
    consumer, x, y, read, gate = _read_queued_behind_a_gate(client)
    monkeypatch.setenv("HLORT_DONATE_TIMEOUT", "0.2")
    with pytest.raises(HlortError) as info:
        consumer.execute([[x, y]])
    gate.set()
    assert info.value.code is ErrorCode.DEADLINE_EXCEEDED
    message = info.value.message
    assert message.startswith(f"cannot donate buffer {x.name} to execution of 'consumer'")
    assert "1 read(s)" in message and "after 0.2 s" in message
    assert "non_donatable_input_indices" in message and "HLORT_DONATE_TIMEOUT" in message
    assert not x.is_deleted()
    np.testing.assert_array_equal(read.to_host().result(10), [2, 3, 4])
    [[out]] = consumer.execute([[x, y]])
    np.testing.assert_array_equal(out.to_host().result(10), [2, 3, 4])
    assert x.is_deleted()


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan"])
def test_a_bad_donate_timeout_is_invalid_argument(client, monkeypatch, value):
    x = put(client, [1, 2, 3])
    monkeypatch.setenv("HLORT_DONATE_TIMEOUT", value)
    with pytest.raises(InvalidArgument, match="HLORT_DONATE_TIMEOUT=.* must be a number"):
        x.donate("a test")
    assert not x.is_deleted()


@pytest.mark.parametrize("value", ["inf", "1e300"])
def test_an_unbounded_donate_timeout_waits_for_the_reads(client, monkeypatch, value):
    """HLORT_DONATE_TIMEOUT=inf (or a huge number) means no bound: the donation waits for the
    queued read and succeeds (threading's wait overflowed on such a timeout: OverflowError)."""
    consumer, x, y, read, gate = _read_queued_behind_a_gate(client)
    monkeypatch.setenv("HLORT_DONATE_TIMEOUT", value)
    opener = threading.Timer(0.3, gate.set)
    opener.start()
    try:
        [[out]] = consumer.execute([[x, y]])
    finally:
        gate.set()
        opener.join()
    np.testing.assert_array_equal(read.to_host().result(10), [2, 3, 4])
    np.testing.assert_array_equal(out.to_host().result(10), [2, 3, 4])
    assert x.is_deleted()
