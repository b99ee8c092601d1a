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
