"""Just enough of the protobuf wire format for CompileOptionsProto and DeviceAssignmentProto.

jaxlib hands ``Client_Compile`` a serialized ``xla.CompileOptionsProto`` and expects a
serialized ``xla.DeviceAssignmentProto`` back from ``GetDeviceAssignment``; hlort needs a few
numbers of the first and writes a tiny form of the second, so a small decoder/encoder
replaces a protobuf dependency. Field numbers (xla/pjrt/proto/compile_options.proto,
xla/xla_data.proto): CompileOptions.executable_build_options = 3; ExecutableBuildOptions
.device_ordinal = 1, .num_replicas = 4, .num_partitions = 5, .use_spmd_partitioning = 6,
.device_assignment = 9, .allow_spmd_sharding_propagation_to_output = 12 (repeated bool),
.use_shardy_partitioner = 19; DeviceAssignment.replica_count = 1, .computation_count = 2,
.computation_devices = 3; ComputationDevice.replica_device_ids = 1. (jaxlib 0.10.2 was seen
sending 4, 5, 6, 9, 12, 18, 19, 23 and 25 for a sharded jit over 4 devices.)
"""

from __future__ import annotations

from dataclasses import dataclass

from hlort.text.hlo_proto_writer import op_sharding_bytes
from hlort.text.protobuf_wire import Message, fields, signed, unpack_varints

__all__ = ["BuildOptions", "device_assignment_proto", "fields", "op_sharding_proto"]


def _first(items, number: int, default=None):
    for n, _, value in items:
        if n == number:
            return value
    return default


@dataclass
class BuildOptions:
    num_replicas: int = 1
    num_partitions: int = 1
    device_ordinal: int = -1
    device_assignment: list[list[int]] | None = None  # [replica][partition] device ids
    use_spmd_partitioning: bool = False
    use_shardy_partitioner: bool = False


def read_compile_options(data: bytes) -> BuildOptions:
    build = _first(fields(data), 3, b"")
    items = fields(build)
    options = BuildOptions(
        num_replicas=_first(items, 4, 1) or 1,
        num_partitions=_first(items, 5, 1) or 1,
        device_ordinal=signed(_first(items, 1, (1 << 64) - 1)),
        use_spmd_partitioning=bool(_first(items, 6, 0)),
        use_shardy_partitioner=bool(_first(items, 19, 0)),
    )
    assignment = _first(items, 9)
    if assignment:
        da = fields(assignment)
        replicas = _first(da, 1, 0)
        columns = [unpack_varints(fields(v), 1) for n, _, v in da if n == 3]
        options.device_assignment = [[col[r] for col in columns] for r in range(replicas)]
    return options


def device_assignment_proto(assignment: list[list[int]]) -> bytes:
    """Serialize a [replica][partition] device-id table as xla.DeviceAssignmentProto."""
    replicas = len(assignment)
    partitions = len(assignment[0]) if replicas else 0
    m = Message().int(1, replicas, keep=True).int(2, partitions, keep=True)
    columns = [
        Message().ints(1, [assignment[r][p] for r in range(replicas)]) for p in range(partitions)
    ]
    return m.messages(3, columns).to_bytes()


def op_sharding_proto(sharding) -> bytes:
    """An hlort.ir.sharding.HloSharding as xla.OpSharding: the core writer's encoding, so the
    Shardings extension and the optimized program's proto can never disagree."""
    return op_sharding_bytes(sharding)
