"""The template end to end: its own memory, its compiled program, its errors."""

import numpy as np
import pytest

import hlort
from hlort import Builder, shape
from hlort.errors import ErrorCode, HlortError
from hlort.plugin.options import CompileOptions
from hlort.testing.programs import side_effect_in_unused_loop
from hlort_template import TemplatePlugin
from hlort_template.arena import Block


@pytest.fixture
def client():
    c = TemplatePlugin().create_client({"device_count": 2, "arena_bytes": 1 << 20})
    yield c
    c.close()


def axpy():
    b = Builder("axpy")
    a = b.parameter(shape.scalar("f32"))
    x, y = b.parameter(shape.array("f32", [4])), b.parameter(shape.array("f32", [4]))
    return b.build(b.add(b.multiply(b.broadcast(a, [4], []), x), y))


def test_buffers_live_in_the_arena(client):
    device = client.devices()[1]
    before = device.arena.bytes_free()
    buf = client.buffer_from_host(np.arange(4, dtype=np.float32), device)
    assert isinstance(buf.storage_now(), Block)
    assert device.arena.bytes_free() < before
    buf.delete()
    assert device.arena.bytes_free() == before


def test_compile_makes_a_program_and_runs_it(client):
    exe = client.compile(axpy(), CompileOptions())
    assert "multiply" in exe.artifacts()["program.txt"]
    device = client.devices()[0]
    args = [
        client.buffer_from_host(v, device)
        for v in (np.float32(2), np.arange(4, dtype=np.float32), np.ones(4, np.float32))
    ]
    (out,) = exe.execute([args])[0]
    np.testing.assert_array_equal(out.to_host().result(10), 2 * np.arange(4) + 1)


def test_unknown_custom_call_is_unimplemented_at_compile_time(client):
    b = Builder("m")
    x = b.parameter(shape.array("f32", [2]))
    module = b.build(b.custom_call("no_such_kernel", [x], x.shape))
    with pytest.raises(HlortError) as info:
        client.compile(module, CompileOptions())
    assert info.value.code is ErrorCode.UNIMPLEMENTED and "no_such_kernel" in info.value.message


def test_running_out_of_device_memory_is_resource_exhausted(client):
    device = client.devices()[0]
    with pytest.raises(HlortError) as info:
        client.buffer_from_host(np.zeros(1 << 19, np.float32), device)  # 2 MiB > 1 MiB
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED


@pytest.mark.parametrize(
    "options, env, what",
    [
        ({"device_count": "two"}, None, "device_count='two'"),
        ({}, "lots", "HLORT_TEMPLATE_ARENA_BYTES='lots'"),
    ],
)
def test_bad_client_options_name_the_option(monkeypatch, options, env, what):
    if env is not None:
        monkeypatch.setenv("HLORT_TEMPLATE_ARENA_BYTES", env)
    with pytest.raises(HlortError) as info:
        TemplatePlugin().create_client(options)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and what in info.value.message


def test_an_unused_loop_whose_body_has_a_side_effect_still_runs():
    """DCE keeps the loop (its body's check is a side effect); the template's program runs it."""
    exe = hlort.compile(side_effect_in_unused_loop(), "template")
    np.testing.assert_array_equal(exe(np.float32([1, 2, 3])), [2, 4, 6])
    with pytest.raises(HlortError, match="check.expect_eq"):
        exe(np.float32([0, 0, 0]))
