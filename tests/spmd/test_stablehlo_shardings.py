"""Shardings from StableHLO as JAX 0.10 emits them (samples lowered with NamedSharding on a
2x2 mesh: tests/spmd/samples, mhlo.sharding and Shardy spellings of one program)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hlort.errors import InvalidArgument, Unimplemented
from hlort.importers.stablehlo.importer import parse_stablehlo
from hlort.importers.stablehlo.shardings import Mesh, sdy_to_hlo
from hlort.ir.opcodes import Opcode
from hlort.ir.sharding import HloSharding
from hlort.text.sharding_syntax import parse_sharding, sharding_of

SAMPLES = Path(__file__).parent / "samples"


def _shardings(name: str):
    module = parse_stablehlo((SAMPLES / name).read_text(), name)
    entry = module.entry
    constraint = next(i for i in entry.instructions if i.opcode is Opcode.CUSTOM_CALL)
    return module, [sharding_of(p) for p in entry.parameters], sharding_of(entry.root), constraint


@pytest.mark.parametrize("name", ["jit_mhlo.mlir", "jit_sdy.mlir"])
def test_jax_shardings_land_on_parameters_root_and_constraint(name):
    module, params, root, constraint = _shardings(name)
    assert module.config["num_partitions"] == 4 and module.config["num_replicas"] == 1
    assert params[0] == parse_sharding("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}")
    assert params[1] == parse_sharding("{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}")
    assert params[2].is_replicated
    assert root == parse_sharding(
        "{{devices=[2,2]0,1,2,3 last_tile_dim_replicate}, {devices=[1,4]0,1,2,3}}"
    )
    assert constraint.attrs["custom_call_target"] == "Sharding"
    assert sharding_of(constraint) == params[0]


def test_both_spellings_agree():
    _, mhlo_params, mhlo_root, _ = _shardings("jit_mhlo.mlir")
    _, sdy_params, sdy_root, _ = _shardings("jit_sdy.mlir")
    assert mhlo_params == sdy_params and mhlo_root == sdy_root


def test_sdy_forms():
    mesh = {"m": Mesh([("a", 2), ("b", 3)])}
    assert sdy_to_hlo('@m, [{"b"}, {"a"}]', mesh).assignment.tolist() == [
        [0, 3],
        [1, 4],
        [2, 5],
    ]
    assert sdy_to_hlo('@m, [{"a", "b"}]', mesh) == HloSharding.tiled([0, 1, 2, 3, 4, 5])
    assert sdy_to_hlo("@m, [{}, {}]", mesh).is_replicated
    assert sdy_to_hlo('@m, [{"a", ?}, {?}]', mesh).tile_counts == (2, 1)
    ids = {"m": Mesh([("a", 2)], [1, 0])}
    assert sdy_to_hlo('@m, [{"a"}]', ids).devices == (1, 0)
    assert sdy_to_hlo('mesh<["x"=2]>, [{}, {"x"}]', {}).tile_counts == (1, 2)
    with pytest.raises(Unimplemented, match="sub-axis"):
        sdy_to_hlo('@m, [{"a":(1)2}]', mesh)
    with pytest.raises(InvalidArgument, match="mesh axis 'c'"):
        sdy_to_hlo('@m, [{"c"}]', mesh)
    with pytest.raises(InvalidArgument, match="not defined"):
        sdy_to_hlo('@other, [{"a"}]', mesh)


def test_empty_mhlo_sharding_means_none():
    # jax2tf's exported corpus programs write mhlo.sharding = "" on arguments
    text = """module @m {
  func.func public @main(%arg0: tensor<2xf32> {mhlo.sharding = ""}) -> tensor<2xf32> {
    %0 = stablehlo.negate %arg0 : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
"""
    module = parse_stablehlo(text)
    assert sharding_of(module.entry.parameters[0]) is None


def test_one_partition_constraint_stays_an_identity():
    text = (
        (SAMPLES / "jit_sdy.mlir")
        .read_text()
        .replace("mhlo.num_partitions = 4", "mhlo.num_partitions = 1")
    )
    module = parse_stablehlo(text)
    assert not any(i.opcode is Opcode.CUSTOM_CALL for i in module.entry.instructions)
