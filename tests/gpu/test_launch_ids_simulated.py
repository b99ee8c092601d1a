"""replica-id and partition-id on the GPU: LaunchId steps the runtime fills from the launch (no
host fallback), on the host simulator against the interpreter for several replica and partition
numbers (numbers above 255 and 65535 too: every byte of the u32 is written), used by kernels,
as outputs, as a dynamic-slice index and inside a host-driven loop."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, check_case_without_fallback, simulated_program

from hlort.codegen.gpu.program import GpuProgram, LaunchId, every_step
from hlort.errors import InvalidArgument
from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.gpu_program_runner import u32_byte_runs
from hlort.plugin.base.value_flattening import flatten_value
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CASES = [c for c in all_cases() if c.op in ("replica-id", "partition-id")]

IDS = [(0, 0), (1, 0), (0, 3), (5, 2), (300, 70000), (2**32 - 1, 2**24 + 1)]

PROGRAM = """HloModule ids

cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  r = u32[] replica-id()
  rf = f32[] convert(r)
  rb = f32[4] broadcast(rf), dimensions={}
  w = f32[4] add(v, rb)
  ROOT t = (s32[], f32[4]) tuple(j, w)
}

ENTRY main {
  x = f32[8] parameter(0)
  r = u32[] replica-id()
  p = u32[] partition-id()
  four = u32[] constant(4)
  at = u32[] remainder(p, four)
  part = f32[4] dynamic-slice(x, at), dynamic_slice_sizes={4}
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, part)
  loop = (s32[], f32[4]) while(init), condition=cond, body=body
  sum = f32[4] get-tuple-element(loop), index=1
  pf = f32[] convert(p)
  pb = f32[4] broadcast(pf), dimensions={}
  y = f32[4] multiply(sum, pb)
  ROOT out = (u32[], u32[], f32[4], f32[4]) tuple(r, p, sum, y)
}
"""


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_case_runs_without_fallback(case):
    program = check_case_without_fallback(case)
    assert [type(s) for s in program.steps] == [LaunchId]


@pytest.mark.parametrize("replica,partition", IDS)
def test_ids_reach_kernels_outputs_slices_and_loop_bodies(replica, partition):
    module = parse_module(PROGRAM)
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    kinds = sorted(s.which for s in every_step(program.steps) if isinstance(s, LaunchId))
    assert "partition" in kinds and "replica" in kinds
    x = np.array([1.5, -0.0, np.inf, -2.0, np.nan, 7.0, 1e30, -1e-30], np.float32)
    want = flatten_value(evaluate(module, [x], replica_id=replica, partition_id=partition))
    got = HostSimRunner(program, replica, partition).run([x])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, np.asarray(w))
        assert g.dtype == np.asarray(w).dtype


def test_a_program_round_trips_its_launch_ids():
    program = simulated_program(parse_module(PROGRAM))
    again = GpuProgram.from_bytes(program.to_bytes())
    assert [s for s in again.steps if isinstance(s, LaunchId)] == [
        s for s in program.steps if isinstance(s, LaunchId)
    ]


def test_a_launch_id_into_a_slot_that_is_no_u32_scalar_is_refused():
    import dataclasses

    program = simulated_program(parse_module(PROGRAM))
    (first,) = [s for s in program.steps if isinstance(s, LaunchId) and s.which == "replica"]
    wrong = program.parameters[0]  # f32[8]
    steps = [dataclasses.replace(first, dst=wrong) if s is first else s for s in program.steps]
    with pytest.raises(InvalidArgument, match="u32 scalar slot"):
        dataclasses.replace(program, steps=steps).check()
    steps = [dataclasses.replace(first, which="device") if s is first else s for s in program.steps]
    with pytest.raises(InvalidArgument, match="replica or partition"):
        dataclasses.replace(program, steps=steps).check()


@pytest.mark.parametrize("value", [0, 1, 255, 256, 70000, 0x01010101, 2**32 - 1])
def test_byte_runs_write_the_little_endian_u32(value):
    out = bytearray(b"\xaa" * 4)
    for offset, byte, count in u32_byte_runs(value):
        out[offset : offset + count] = bytes([byte]) * count
    assert int.from_bytes(out, "little") == value
    assert len(u32_byte_runs(value)) <= 4
    assert len(u32_byte_runs(7)) == 2  # the usual case: the number's byte, then three zeros


def test_a_number_past_u32_is_refused():
    with pytest.raises(InvalidArgument, match="does not fit a u32"):
        u32_byte_runs(2**32)
