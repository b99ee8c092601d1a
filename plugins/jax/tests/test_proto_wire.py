"""The protobuf subset: compile options in, device assignment out."""

import numpy as np
import pytest
from hlort_jax import proto_wire


def test_device_assignment_round_trips():
    data = proto_wire.device_assignment_proto([[3], [5]])
    items = proto_wire.fields(data)
    assert (1, 0, 2) in items and (2, 0, 1) in items


def test_compile_options_from_jaxlib():
    xc = pytest.importorskip("jax._src.lib", reason="jax is not installed").xla_client
    options = xc.CompileOptions()
    build = options.executable_build_options
    build.num_replicas, build.num_partitions = 2, 1
    build.device_assignment = xc.DeviceAssignment.create(np.array([[3], [5]], np.int32))
    read = proto_wire.read_compile_options(options.SerializeAsString())
    assert (read.num_replicas, read.num_partitions) == (2, 1)
    assert read.device_assignment == [[3], [5]]
    assert proto_wire.device_assignment_proto([[3], [5]]) == build.device_assignment.serialize()
    default = proto_wire.read_compile_options(xc.CompileOptions().SerializeAsString())
    assert (default.num_replicas, default.num_partitions, default.device_ordinal) == (1, 1, -1)


@pytest.mark.parametrize(
    "text",
    [
        "{replicated}",
        "{maximal device=1}",
        "{devices=[2,1]0,1}",
        "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}",
        "{devices=[2,2]0,2,1,3}",
        "{{replicated}, {devices=[2]1,0}}",
        "{manual}",
    ],
)
def test_op_sharding_is_read_back_by_xla(text):
    xc = pytest.importorskip("jax._src.lib", reason="jax is not installed").xla_client
    from hlort.text.sharding_syntax import parse_sharding

    proto = xc.OpSharding()
    proto.ParseFromString(proto_wire.op_sharding_proto(parse_sharding(text)))
    assert str(xc.HloSharding.from_proto(proto)) == text


def test_spmd_build_options_are_read():
    xc = pytest.importorskip("jax._src.lib", reason="jax is not installed").xla_client
    options = xc.CompileOptions()
    build = options.executable_build_options
    build.num_partitions, build.use_spmd_partitioning = 4, True
    build.device_assignment = xc.DeviceAssignment.create(np.array([[0, 2, 1, 3]], np.int32))
    read = proto_wire.read_compile_options(options.SerializeAsString())
    assert (read.num_replicas, read.num_partitions, read.use_spmd_partitioning) == (1, 4, True)
    assert read.device_assignment == [[0, 2, 1, 3]]
