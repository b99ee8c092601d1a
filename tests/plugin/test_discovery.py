"""Discovery through real distribution metadata (the fake plugins of tests/fake_plugin)."""

import numpy as np
import pytest

from hlort import Builder, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Opcode
from hlort.plugin.api import CompileOptions
from hlort.plugin.registry import BackendStatus, Registry


@pytest.fixture
def discovered(fake_site, monkeypatch):
    monkeypatch.syspath_prepend(str(fake_site))
    r = Registry(environ={})
    yield r
    r.close()


def test_each_fake_plugin_is_discovered_and_failures_do_not_stop_the_others(discovered):
    records = {r.name: r for r in discovered.records()}
    assert records["fakebroken"].status is BackendStatus.FAILED
    assert "libfakebroken.so" in records["fakebroken"].message
    assert "hlort-fake-broken" in records["fakebroken"].reason()
    assert records["fakenewapi"].status is BackendStatus.REJECTED
    assert "2.0" in records["fakenewapi"].message and "1.0" in records["fakenewapi"].message
    assert records["fakeunavail"].status is BackendStatus.UNAVAILABLE
    assert "FakeAccel" in records["fakeunavail"].reason()
    assert records["fakegood"].usable and records["interpreter"].usable
    assert "hook" in records["fakegood"].source  # registered through pluggy
    errors = discovered.errors()
    assert {"fakebroken", "fakenewapi", "fakeunavail"} <= set(errors)
    assert "fakegood" not in errors


def test_the_good_fake_plugin_runs_programs_with_its_own_memory(discovered):
    client = discovered.client("fakegood")
    assert [d.id for d in client.devices()] == [0, 1]
    b = Builder("axpy")
    x, y = b.parameter(shape.array("f32", [4])), b.parameter(shape.array("f32", [4]))
    exe = client.compile(b.build(b.op(Opcode.ADD, (x, y))), CompileOptions())
    device = client.devices()[0]
    args = [client.buffer_from_host(np.arange(4, dtype=np.float32), device) for _ in range(2)]
    assert isinstance(args[0].storage_now(), bytearray)
    out = exe.execute([args])[0][0]
    np.testing.assert_array_equal(out.to_host().result(10), np.arange(4) * 2)


def test_the_good_fake_plugin_reports_its_missing_op_as_unimplemented(discovered):
    client = discovered.client("fakegood")
    b = Builder("mm")
    x = b.parameter(shape.array("f32", [2, 2]))
    from hlort.ir import DotDimensionNumbers

    dot = b.op(Opcode.DOT, (x, x), dot_dimension_numbers=DotDimensionNumbers((1,), (0,)))
    with pytest.raises(HlortError) as info:
        client.compile(b.build(dot), CompileOptions())
    assert info.value.code is ErrorCode.UNIMPLEMENTED and "dot" in info.value.message
