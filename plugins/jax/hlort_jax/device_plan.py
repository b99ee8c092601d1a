"""Which devices a JAX program runs on, from its compile options and its module header.

jaxlib sends ``num_replicas``, ``num_partitions`` and a ``device_assignment`` (device ids,
``[replica][partition]``) in the compile options' ``ExecutableBuildOptions``; the StableHLO
module repeats the counts as ``mhlo.num_replicas`` / ``mhlo.num_partitions``. A program over
more devices than the platform has is INVALID_ARGUMENT naming the count and how to start more.
"""

from __future__ import annotations

from dataclasses import dataclass

from hlort.errors import InvalidArgument
from hlort_jax.bridge_objects import BridgeDevice

# How each backend gets more devices (the bridge reads the count when JAX starts the platform).
MORE_DEVICES = {
    "cpu": "set HLORT_CPU_DEVICES=N (or jax.config.update('jax_num_cpu_devices', N)) before JAX "
    "starts its backends",
    "interpreter": "set HLORT_INTERPRETER_DEVICES=N before JAX starts its backends",
    "tpusim": "tpusim models 4 chips",
}


def more_devices_hint(client) -> str:
    name = getattr(client.backend, "platform", "")
    return MORE_DEVICES.get(name, f"{client.platform_name} has no setting for more devices")


def too_few_devices(client, replicas: int, partitions: int) -> InvalidArgument:
    needed = replicas * partitions
    return InvalidArgument(
        f"the program needs {needed} devices ({replicas} replica(s) x {partitions} "
        f"partition(s)) but {client.platform_name} has {len(client.devices)}; "
        f"{more_devices_hint(client)}"
    )


@dataclass
class DevicePlan:
    num_replicas: int
    num_partitions: int
    devices: list[BridgeDevice]  # copy (r, p) runs on devices[r * num_partitions + p]

    @property
    def assignment(self) -> tuple[tuple[int, ...], ...]:
        p = self.num_partitions
        ids = [d.raw.id for d in self.devices]
        return tuple(tuple(ids[r * p : (r + 1) * p]) for r in range(self.num_replicas))


def plan_devices(client, build, header: tuple[int, int] = (1, 1)) -> DevicePlan:
    """The copies and their devices; ``build`` is proto_wire.BuildOptions, ``header`` the
    module's (replicas, partitions)."""
    replicas, partitions = build.num_replicas, build.num_partitions
    if header != (1, 1) and (replicas, partitions) != header:
        if (replicas, partitions) != (1, 1) or build.device_assignment:
            raise InvalidArgument(
                f"the program's module asks for {header[0]} replica(s) x {header[1]} "
                f"partition(s) but its compile options for {replicas} x {partitions}"
            )
        replicas, partitions = header
    needed = replicas * partitions
    assignment = build.device_assignment
    if assignment:
        if len(assignment) != replicas or any(len(row) != partitions for row in assignment):
            raise InvalidArgument(
                f"the compile options' device assignment {assignment} is not {replicas} "
                f"replica(s) x {partitions} partition(s)"
            )
        devices = [_lookup(client, d) for row in assignment for d in row]
    elif needed > len(client.devices):
        raise too_few_devices(client, replicas, partitions)
    elif needed == 1 and build.device_ordinal >= 0:
        if build.device_ordinal >= len(client.devices):
            raise InvalidArgument(
                f"{client.platform_name} has no device ordinal {build.device_ordinal} (it has "
                f"{len(client.devices)}); {more_devices_hint(client)}"
            )
        devices = [client.devices[build.device_ordinal]]
    else:
        devices = list(client.devices[:needed])
    if len({id(d) for d in devices}) != len(devices):
        raise InvalidArgument(f"the device assignment {assignment} uses a device twice")
    return DevicePlan(replicas, partitions, devices)


def _lookup(client, device_id: int) -> BridgeDevice:
    device = client.by_id.get(device_id)
    if device is None:
        known = sorted(client.by_id)
        raise InvalidArgument(
            f"{client.platform_name} has no device {device_id} (its devices: {known}); "
            f"{more_devices_hint(client)}"
        )
    return device
