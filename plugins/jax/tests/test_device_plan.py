"""Which devices a compile runs on, and the errors when the platform cannot (no jax needed)."""

from types import SimpleNamespace

import pytest
from hlort_jax import device_count
from hlort_jax.device_plan import plan_devices
from hlort_jax.proto_wire import BuildOptions

from hlort.errors import HlortError, InvalidArgument


def _client(n: int, backend: str = "cpu"):
    devices = [SimpleNamespace(raw=SimpleNamespace(id=10 + i)) for i in range(n)]
    return SimpleNamespace(
        devices=devices,
        by_id={d.raw.id: d for d in devices},
        platform_name=f"hlort_{backend}",
        backend=SimpleNamespace(platform=backend),
    )


def test_partitions_run_on_the_assigned_devices_in_order():
    client = _client(4)
    plan = plan_devices(client, BuildOptions(1, 4, device_assignment=[[13, 11, 10, 12]]), (1, 4))
    assert [d.raw.id for d in plan.devices] == [13, 11, 10, 12]
    assert plan.assignment == ((13, 11, 10, 12),)


def test_replicas_x_partitions_without_an_assignment_take_the_first_devices():
    plan = plan_devices(_client(4), BuildOptions(2, 2))
    assert plan.assignment == ((10, 11), (12, 13))


def test_the_module_header_counts_when_the_options_leave_one_device():
    plan = plan_devices(_client(4), BuildOptions(), (1, 2))
    assert (plan.num_replicas, plan.num_partitions, len(plan.devices)) == (1, 2, 2)


@pytest.mark.parametrize(
    "backend,hint", [("cpu", "HLORT_CPU_DEVICES=N"), ("interpreter", "HLORT_INTERPRETER_DEVICES=N")]
)
def test_too_few_devices_names_the_count_and_the_setting(backend, hint):
    with pytest.raises(InvalidArgument, match=rf"needs 8 devices .* has 2; .*{hint}"):
        plan_devices(_client(2, backend), BuildOptions(1, 8), (1, 8))


def test_disagreeing_counts_and_unknown_devices_are_invalid():
    with pytest.raises(InvalidArgument, match="module asks for 1 replica.* x 4 .* for 1 x 2"):
        plan_devices(_client(4), BuildOptions(1, 2), (1, 4))
    with pytest.raises(InvalidArgument, match="no device 99"):
        plan_devices(_client(4), BuildOptions(1, 2, device_assignment=[[10, 99]]))
    with pytest.raises(InvalidArgument, match="uses a device twice"):
        plan_devices(_client(4), BuildOptions(1, 2, device_assignment=[[10, 10]]))
    with pytest.raises(InvalidArgument, match="no device ordinal 5"):
        plan_devices(_client(4), BuildOptions(device_ordinal=5))


def test_device_count_option_wins_and_must_be_a_count(monkeypatch):
    monkeypatch.setenv("HLORT_CPU_DEVICES", "2")
    assert device_count.wanted_count("cpu", {"device_count": "5"}) == 5
    assert device_count.wanted_count("cpu", {}) is None  # HLORT_CPU_DEVICES: hlort's own default
    with pytest.raises(HlortError, match="device_count='x' is not a device count"):
        device_count.wanted_count("cpu", {"device_count": "x"})


def test_several_jax_processes_are_unimplemented():
    device_count.check_single_process({"num_nodes": 1})
    with pytest.raises(HlortError, match="UNIMPLEMENTED: multi-process JAX .* 2 processes"):
        device_count.check_single_process({"num_nodes": 2, "node_id": 0})
