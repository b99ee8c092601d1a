"""Device listing, lookup (and its NOT_FOUND errors), memory spaces and memory statistics."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.plugin.api import MemorySpace, MemoryStats


def test_devices_are_listed_by_unique_id(hlort_client) -> None:
    devices = list(hlort_client.devices())
    assert devices, "Client.devices() must list at least one device"
    ids = [d.id for d in devices]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), f"device ids {ids}: unique, sorted"
    addressable = list(hlort_client.addressable_devices())
    assert addressable, "at least one device must be addressable"
    assert all(d in devices for d in addressable)
    assert all(d.is_addressable for d in addressable)


def test_lookup_finds_every_device(hlort_client) -> None:
    for device in hlort_client.devices():
        assert hlort_client.lookup_device(device.id) is device
    for device in hlort_client.addressable_devices():
        found = hlort_client.lookup_addressable_device(device.local_hardware_id)
        assert found is device


def test_lookup_of_a_missing_device_is_not_found_and_lists_the_ids(hlort_client) -> None:
    missing = max(d.id for d in hlort_client.devices()) + 1000
    with pytest.raises(HlortError) as info:
        hlort_client.lookup_device(missing)
    assert info.value.code is ErrorCode.NOT_FOUND, f"got {info.value.code.name}"
    assert str(missing) in info.value.message
    first = str(hlort_client.devices()[0].id)
    assert first in info.value.message.replace(str(missing), ""), (
        f"the message should list the valid ids: {info.value.message!r}"
    )
    with pytest.raises(HlortError) as info:
        hlort_client.lookup_addressable_device(missing)
    assert info.value.code is ErrorCode.NOT_FOUND


def test_memory_spaces_belong_to_their_devices(hlort_client) -> None:
    client_spaces = list(hlort_client.memory_spaces())
    for device in hlort_client.addressable_devices():
        default = device.default_memory_space()
        assert isinstance(default, MemorySpace) and isinstance(default.kind, str)
        assert default in list(device.memory_spaces())
        assert device in list(default.devices())
        assert any(s.id == default.id for s in client_spaces)


def test_memory_stats_count_live_buffers(hlort_session, hlort_require) -> None:
    hlort_require("memory_stats")
    device = hlort_session.device
    before = device.memory_stats()
    assert isinstance(before, MemoryStats) and before.bytes_in_use >= 0
    buf = hlort_session.client.buffer_from_host(np.zeros(4096, np.float32), device)
    buf.ready_event().wait(60)
    during = device.memory_stats()
    assert during.bytes_in_use >= before.bytes_in_use + 4096 * 4, (
        f"a live 16 KiB buffer is not counted in bytes_in_use: before {before}, after {during}"
    )
    buf.delete()
