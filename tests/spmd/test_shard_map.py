"""shard_map as JAX 0.10 lowers it (``sdy.manual_computation`` with a psum; sample in
tests/spmd/samples): imported the way XLA writes it (@Sharding, @SPMDFullToShardShape, the body,
@SPMDShardToFullShape) and run on 4 interpreter devices as the per-device code it is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hlort.errors import Unimplemented
from hlort.importers.stablehlo.importer import parse_stablehlo
from hlort.runtime.sharded_call import compile_sharded

SAMPLE = Path(__file__).parent / "samples" / "shard_map_psum.mlir"


def test_shard_map_with_psum_runs_per_device(interpreter):
    module = parse_stablehlo(SAMPLE.read_text(), SAMPLE.name)
    targets = [i.attrs.get("custom_call_target") for i in module.entry.instructions]
    assert targets.count("SPMDFullToShardShape") == 2 and targets.count("SPMDShardToFullShape") == 2
    sharded = compile_sharded(interpreter, module)
    a = np.arange(8, dtype=np.float32)
    b = np.linspace(-1, 1, 8, dtype=np.float32)
    total, plus_one = sharded(a, b)
    # body: psum over the 4 devices of (a_tile * b_tile), and a_tile + 1 (out_specs P(), P("x"))
    np.testing.assert_allclose(total, (a * b).reshape(4, 2).sum(0), rtol=1e-6)
    np.testing.assert_array_equal(plus_one, a + 1)


def test_partially_manual_shard_map_is_unimplemented():
    text = SAMPLE.read_text().replace('<["x"=4]>', '<["x"=4, "y"=1, "z"=2]>')
    text = text.replace("mhlo.num_partitions = 4", "mhlo.num_partitions = 8")
    with pytest.raises(Unimplemented, match="only fully manual shard_map"):
        parse_stablehlo(text)


def test_shard_map_with_a_scan_of_psum_runs_per_device(interpreter):
    # JAX's testIssue804 (jax.pmap of lax.scan with a psum, lowered by jax 0.10.2): once the
    # body's calls are inlined, the loop state mixes the manual tile with replicated constants.
    sample = SAMPLE.parent / "shard_map_scan_psum.mlir"
    sharded = compile_sharded(interpreter, parse_stablehlo(sample.read_text(), sample.name))
    carry, ys = sharded(np.ones((4, 4), np.float32))
    np.testing.assert_array_equal(carry, np.full(4, 16, np.float32))  # 4 steps of psum(1) = 4
    np.testing.assert_array_equal(ys, np.tile(np.arange(0, 16, 4, dtype=np.float32), (4, 1)))


def test_per_device_code_mixed_with_an_automatic_tile_is_unimplemented(interpreter):
    # Before: compiled, adding each device's piece of `b` as if it were the whole of `b`.
    text = """HloModule mix, num_partitions=4

ENTRY %main (a: f32[8], b: f32[2]) -> f32[8] {
  %a = f32[8] parameter(0), sharding={devices=[4]0,1,2,3}
  %b = f32[2] parameter(1), sharding={devices=[2,2]0,1,2,3 last_tile_dim_replicate}
  %m = f32[2] custom-call(%a), custom_call_target="SPMDFullToShardShape", sharding={manual}
  %s = f32[2] add(%m, %b)
  ROOT %r = f32[8] custom-call(%s), custom_call_target="SPMDShardToFullShape",
    sharding={devices=[4]0,1,2,3}
}
"""
    with pytest.raises(Unimplemented, match="mixes shard_map's per-device values with b"):
        compile_sharded(interpreter, text)


def test_a_shard_map_inside_a_loop_body_is_partitioned_too(interpreter):
    # JAX's test_while_loop_of_pmap (a pmap with a psum inside lax.fori_loop, jax 0.10.2): the
    # loop body holds the shard_map; before, the loop ran whole with the shard_map's custom calls
    # left for the backend ("SPMDFullToShardShape ... needs a partitioned backend").
    sample = SAMPLE.parent / "fori_loop_of_shard_map.mlir"
    sharded = compile_sharded(interpreter, parse_stablehlo(sample.read_text(), sample.name))
    got = sharded(np.ones(4, np.float32))
    want = np.ones(4, np.float32)
    for _ in range(3):
        want = np.sin(want).sum() + want  # psum over the 4 devices of sin(x_i), plus x
    np.testing.assert_allclose(got, want, rtol=1e-6)
    text = sharded.exe.as_text()
    assert "SPMDFullToShardShape" not in text and "all-reduce" in text
    # the partitioned loop computations' names are unique, so the serialized executable reads back
    # (a warm persistent cache deserializes it: before, "'get_tuple_element' is used twice")
    interpreter.deserialize(sharded.exe.serialize())
