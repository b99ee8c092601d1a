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

from hlort.errors import InvalidArgument


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise InvalidArgument("truncated protobuf varint in the compile options")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """[(field number, wire type, value)] of one message (varints as ints, others as bytes)."""
    out = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise InvalidArgument(f"unsupported protobuf wire type {wire} in compile options")
        out.append((number, wire, value))
    return out


def _first(items, number: int, default=None):
    for n, _, value in items:
        if n == number:
            return value
    return default


def _ints(items, number: int) -> list[int]:
    out: list[int] = []
    for n, wire, value in items:
        if n != number:
            continue
        if wire == 0:
            out.append(value)
        else:  # packed
            pos = 0
            while pos < len(value):
                v, pos = _varint(value, pos)
                out.append(v)
    return out


@dataclass
class BuildOptions:
    num_replicas: int = 1
    num_partitions: int = 1
    device_ordinal: int = -1
    device_assignment: list[list[int]] | None = None  # [replica][partition] device ids
    use_spmd_partitioning: bool = False
    use_shardy_partitioner: bool = False


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def read_compile_options(data: bytes) -> BuildOptions:
    build = _first(fields(data), 3, b"")
    items = fields(build)
    options = BuildOptions(
        num_replicas=_first(items, 4, 1) or 1,
        num_partitions=_first(items, 5, 1) or 1,
        device_ordinal=_signed(_first(items, 1, (1 << 64) - 1)),
        use_spmd_partitioning=bool(_first(items, 6, 0)),
        use_shardy_partitioner=bool(_first(items, 19, 0)),
    )
    assignment = _first(items, 9)
    if assignment:
        da = fields(assignment)
        replicas = _first(da, 1, 0)
        columns = [_ints(fields(v), 1) for n, _, v in da if n == 3]
        options.device_assignment = [[col[r] for col in columns] for r in range(replicas)]
    return options


def _key(number: int, wire: int) -> bytes:
    return _encode_varint(number << 3 | wire)


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def device_assignment_proto(assignment: list[list[int]]) -> bytes:
    """Serialize a [replica][partition] device-id table as xla.DeviceAssignmentProto."""
    replicas = len(assignment)
    partitions = len(assignment[0]) if replicas else 0
    out = _key(1, 0) + _encode_varint(replicas) + _key(2, 0) + _encode_varint(partitions)
    for p in range(partitions):
        ids = b"".join(_encode_varint(assignment[r][p]) for r in range(replicas))
        device = _key(1, 2) + _encode_varint(len(ids)) + ids
        out += _key(3, 2) + _encode_varint(len(device)) + device
    return out


# xla.OpSharding (xla_data.proto): type = 1, tile_assignment_dimensions = 3,
# tile_assignment_devices = 4, tuple_shardings = 5, replicate_on_last_tile_dim = 6,
# last_tile_dims = 8; Type: REPLICATED 0, MAXIMAL 1, TUPLE 2, OTHER 3, MANUAL 4.
_OP_TYPES = {"replicated": 0, "maximal": 1, "tuple": 2, "tiled": 3, "manual": 4}


def _packed(number: int, values) -> bytes:
    body = b"".join(_encode_varint(v) for v in values)
    return _key(number, 2) + _encode_varint(len(body)) + body


def op_sharding_proto(sharding) -> bytes:
    """Serialize an hlort.ir.sharding.HloSharding as xla.OpSharding (devices are partition
    numbers, as in XLA's spmd_output_sharding / spmd_parameters_shardings)."""
    kind = sharding.kind
    if kind not in _OP_TYPES:
        raise InvalidArgument(f"no xla.OpSharding form for a {kind} sharding")
    out = _key(1, 0) + _encode_varint(_OP_TYPES[kind]) if kind != "replicated" else b""
    if kind == "maximal":
        out += _packed(3, [1]) + _packed(4, [sharding.device])
    elif kind == "tiled":
        out += _packed(3, sharding.tile_shape) + _packed(4, sharding.devices)
        if sharding.replicate_on_last_tile_dim:
            out += _key(6, 0) + _encode_varint(1)
        elif sharding.last_tile_dims:
            out += _packed(8, [_OP_TYPES[k] for k in sharding.last_tile_dims])
    elif kind == "tuple":
        for element in sharding.elements:
            body = op_sharding_proto(element)
            out += _key(5, 2) + _encode_varint(len(body)) + body
    return out
