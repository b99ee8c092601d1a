"""HloSharding: the forms XLA defines, their tile math, and the HLO text round trip."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlort.errors import ParseError
from hlort.ir.sharding import HloSharding
from hlort.text.parser import parse_module
from hlort.text.printer import print_module
from hlort.text.sharding_syntax import parse_sharding, sharding_of

ROUND_TRIP = [
    "{replicated}",
    "{manual}",
    "{maximal device=3}",
    "{devices=[2,1]0,1}",
    "{devices=[1,2]1,0}",
    "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}",
    "{devices=[2,2]<=[4]}",
    "{devices=[2,2]<=[2,2]T(1,0)}",
    "{devices=[1,2,2]<=[4] last_tile_dims={manual}}",
    "{{replicated}, {devices=[2]1,0}, {maximal device=0}}",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_text_round_trip(text):
    sharding = parse_sharding(text)
    assert sharding.to_text() == text
    assert parse_sharding(sharding.to_text()) == sharding


def test_canonical_forms_like_xla():
    assert parse_sharding("{devices=[1,1]0}") == HloSharding.replicate()
    assert parse_sharding("{devices=[1,1,4]<=[4] last_tile_dim_replicate}").is_replicated
    assert parse_sharding('{replicated metadata={op_name="x"}}').is_replicated
    # an iota list equals the same explicit list
    assert parse_sharding("{devices=[2,2]<=[2,2]T(1,0)}") == parse_sharding(
        "{devices=[2,2]0,2,1,3}"
    )


def test_tile_math():
    s = parse_sharding("{devices=[2,2]<=[2,2]T(1,0)}")  # assignment [[0,2],[1,3]]
    assert s.assignment.tolist() == [[0, 2], [1, 3]]
    assert s.tile_index(1) == (1, 0)
    assert s.shard_dims((8, 6)) == (4, 3)
    assert s.tile_slices((8, 6), 2) == (slice(0, 4), slice(3, 6))
    assert s.device_groups_along([1]) == [[0, 2], [1, 3]]
    assert s.device_groups_along([0]) == [[0, 1], [2, 3]]
    r = parse_sharding("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}")
    assert r.tile_counts == (2, 1) and r.replication() == 2
    assert r.tile_index(1) == r.tile_index(0) == (0, 0) and r.tile_index(2) == (1, 0)
    uneven = HloSharding.tiled([[0], [1], [2]])
    assert uneven.shard_dims((8, 2)) == (3, 2) and not uneven.evenly_divides((8, 2))
    assert uneven.tile_slices((8, 2), 2) == (slice(6, 8), slice(0, 2))


def test_split_helper():
    s = HloSharding.split(2, 1, [0, 1, 2, 3], replicas=2)
    assert s.to_text() == "{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}"


@pytest.mark.parametrize(
    "text, message",
    [
        ("{devices=[2,1]0}", "needs 2 device ids, got 1"),
        ("{devices=[2]0,0}", "distinct"),
        ("{shards}", "unknown sharding 'shards'"),
        ("{devices=[2,2]<=[3]}", "has 3 devices"),
        ("{devices=[2]0,1 last_tile_dims={foo}}", "unknown subgroup kind"),
    ],
)
def test_bad_shardings_are_parse_errors(text, message):
    with pytest.raises(ParseError, match=message):
        parse_sharding(text)


MODULE = """HloModule m, num_partitions=2

ENTRY %e (p: f32[4,2], q: f32[4,2]) -> (f32[4,2], f32[4,2]) {
  %p = f32[4,2]{1,0} parameter(0), sharding={devices=[2,1]0,1}
  %q = f32[4,2]{1,0} parameter(1), sharding={replicated}
  %a = f32[4,2]{1,0} add(f32[4,2]{1,0} %p, f32[4,2]{1,0} %q), sharding={devices=[2,2]<=[4]}
  ROOT %t = (f32[4,2]{1,0}, f32[4,2]{1,0}) tuple(%a, %p),
    sharding={{replicated}, {maximal device=1}}
}
"""


def test_instruction_shardings_parse_and_print_back():
    module = parse_module(MODULE)
    by_name = {i.name: i for i in module.entry.instructions}
    assert sharding_of(by_name["p"]) == HloSharding.tiled(np.array([[0], [1]]))
    assert sharding_of(by_name["q"]).is_replicated
    assert sharding_of(by_name["t"]).elements[1] == HloSharding.maximal(1)
    text = print_module(module)
    assert "sharding={devices=[2,2]<=[4]}" in text
    assert print_module(parse_module(text)) == text


def test_bad_sharding_in_module_names_line_and_column():
    bad = MODULE.replace("{devices=[2,1]0,1}", "{devices=[2,1]0,1,2}")
    with pytest.raises(ParseError, match=r":4:\d+: tile shape \[2, 1\] needs 2 device ids"):
        parse_module(bad)


@st.composite
def _tiled(draw):
    rank = draw(st.integers(1, 3))
    tiles = [draw(st.sampled_from([1, 2, 3])) for _ in range(rank)]
    subgroup = draw(st.sampled_from([None, "replicated", "manual"]))
    shape = tiles + ([draw(st.integers(2, 3))] if subgroup else [])
    count = int(np.prod(shape))
    devices = draw(st.permutations(list(range(count))))
    kinds = (subgroup,) if subgroup else ()
    return HloSharding.tiled(np.asarray(devices).reshape(shape), kinds), tiles


@settings(max_examples=150, deadline=None, derandomize=True)
@given(_tiled(), st.lists(st.integers(1, 4), min_size=3, max_size=3))
def test_round_trip_and_tiles_cover_the_array_exactly(case, multiples):
    sharding, tiles = case
    assert parse_sharding(sharding.to_text()) == sharding
    if not sharding.is_tiled:
        return
    dims = [t * m for t, m in zip(sharding.tile_counts, multiples, strict=False)]
    covered = np.zeros(dims, np.int64)
    for device in sharding.devices:
        covered[sharding.tile_slices(dims, device)] += 1
    # every element is held by exactly the devices of one tile (the subgroup's size)
    assert (covered == sharding.num_devices // int(np.prod(sharding.tile_counts))).all()
