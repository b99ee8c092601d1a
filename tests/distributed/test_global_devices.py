"""The global numbering of devices across processes, and how a process finds its rank."""

from __future__ import annotations

import pytest

from hlort.distributed.global_devices import GlobalDeviceTable, LocalDeviceInfo
from hlort.distributed.process_env import launcher_info
from hlort.distributed.transport import collective_timeout_s
from hlort.errors import InvalidArgument, NotFound


def _infos(platform, count):
    return [LocalDeviceInfo(platform, i, "cpu", 10 + i) for i in range(count)]


def test_devices_are_numbered_by_process_then_local_order():
    per_process = [_infos("cpu", 2), _infos("cpu", 3), _infos("cpu", 1)]
    tables = [GlobalDeviceTable(per_process, own) for own in range(3)]
    listing = [[(d.id, d.process_index, d.local_id) for d in t.devices()] for t in tables]
    assert listing[0] == listing[1] == listing[2]  # the same list on every process
    assert listing[0] == [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1), (4, 1, 2), (5, 2, 0)]
    own = tables[1]
    assert [d.id for d in own.addressable_devices()] == [2, 3, 4]
    assert [d.is_addressable for d in own.devices()] == [False, False, True, True, True, False]
    assert own.process_of(5) == 2 and own.global_id(1, 2) == 4
    assert own.device(3).local_hardware_id == 11


def test_unknown_ids_and_mixed_platforms_are_refused_with_the_fix():
    table = GlobalDeviceTable([_infos("cpu", 1), _infos("cpu", 1)], 0)
    with pytest.raises(NotFound, match="no device 7: its 2 process.* devices 0..1"):
        table.device(7)
    with pytest.raises(InvalidArgument, match="different platforms.*same platform="):
        GlobalDeviceTable([_infos("cpu", 1), _infos("tpusim", 4)], 0)


def test_the_launcher_environment_gives_rank_size_and_local_rank():
    assert launcher_info({}) is None
    info = launcher_info(
        {
            "OMPI_COMM_WORLD_RANK": "3",
            "OMPI_COMM_WORLD_SIZE": "4",
            "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        }
    )
    assert (info.rank, info.size, info.local_rank, info.variable) == (
        3,
        4,
        1,
        "OMPI_COMM_WORLD_RANK",
    )
    pmi = launcher_info({"PMI_RANK": "0", "PMI_SIZE": "2"})
    assert (pmi.rank, pmi.size, pmi.local_rank) == (0, 2, None)


def test_collective_timeout_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("HLORT_COLLECTIVE_TIMEOUT", raising=False)
    assert collective_timeout_s() == 60.0
    assert collective_timeout_s(2) == 2.0
    monkeypatch.setenv("HLORT_COLLECTIVE_TIMEOUT", "0.5")
    assert collective_timeout_s() == 0.5
    monkeypatch.setenv("HLORT_COLLECTIVE_TIMEOUT", "soon")
    with pytest.raises(InvalidArgument, match="not a number of seconds"):
        collective_timeout_s()


def test_importing_hlort_distributed_does_not_start_mpi():
    import subprocess
    import sys

    code = "import sys, hlort.distributed; print('mpi4py' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
