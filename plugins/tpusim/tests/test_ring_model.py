"""The inter-chip ring model of collectives against the textbook ring formulas."""

from __future__ import annotations

import pytest

from hlort.errors import HlortError
from hlort_tpusim.machine_config import MachineConfig
from hlort_tpusim.ring_model import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    BROADCAST,
    PERMUTE,
    REDUCE_SCATTER,
    RingLinks,
)

CFG = MachineConfig()
BW, LAT = CFG.ici_bandwidth, CFG.ici_latency_s
REL = 1e-12  # the model sums the same terms in another order: float rounding only


def links(n: int = 4) -> RingLinks:
    return RingLinks(n, BW, LAT)


@pytest.mark.parametrize("n", [2, 3, 4, 8])
@pytest.mark.parametrize("nbytes", [4, 4096, 1 << 24])
def test_all_reduce_is_the_ring_formula(n, nbytes):
    got = links(n).collective(ALL_REDUCE, nbytes, [list(range(n))])
    expected = 2 * (n - 1) / n * nbytes / BW + 2 * (n - 1) * LAT
    assert got.seconds == pytest.approx(expected, rel=REL)
    assert got.steps == 2 * (n - 1)
    assert got.bytes_sent_per_chip == pytest.approx(2 * (n - 1) / n * nbytes, rel=REL)


@pytest.mark.parametrize("kind", [ALL_GATHER, REDUCE_SCATTER])
@pytest.mark.parametrize("n", [2, 4])
def test_gather_and_scatter_are_half_an_all_reduce(kind, n):
    nbytes = 1 << 20
    got = links(n).collective(kind, nbytes, [list(range(n))])
    assert got.seconds == pytest.approx((n - 1) / n * nbytes / BW + (n - 1) * LAT, rel=REL)


def test_permute_to_a_neighbour_is_one_hop_and_further_costs_more():
    nbytes = 1 << 20
    ring = [(i, (i + 1) % 4) for i in range(4)]
    one = links().collective(PERMUTE, nbytes, [[0, 1, 2, 3]], ring)
    assert one.seconds == pytest.approx(nbytes / BW + LAT, rel=REL)
    across = [(0, 2), (1, 3), (2, 0), (3, 1)]  # two hops each, links shared
    two = links().collective(PERMUTE, nbytes, [[0, 1, 2, 3]], across)
    assert two.seconds > 2 * one.seconds - 1e-15
    assert links().collective(PERMUTE, nbytes, [[0]], [(0, 0)]).seconds == 0.0


def test_one_chip_moves_nothing():
    for kind in (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, BROADCAST):
        assert links().collective(kind, 1 << 20, [[2]]).seconds == 0.0


def test_all_to_all_on_four_chips_by_hand():
    """Step 1 and 3: one hop of B/4; step 2: two hops, every clockwise link carrying two chunks
    (ties go clockwise)."""
    b = 1 << 20
    got = links().collective(ALL_TO_ALL, b, [[0, 1, 2, 3]])
    chunk = b / 4
    expected = 2 * (LAT + chunk / BW) + 2 * (LAT + 2 * chunk / BW)
    assert got.seconds == pytest.approx(expected, rel=REL)


def test_broadcast_goes_round_the_ring():
    b = 1 << 16
    got = links().collective(BROADCAST, b, [[0, 1, 2, 3]])
    assert got.seconds == pytest.approx(3 * (LAT + b / BW), rel=REL)


def test_groups_that_share_links_slow_each_other():
    """{0,2} and {1,3}: each ring step is two hops, and the two groups' chunks share links."""
    b = 1 << 20
    alone = links().collective(ALL_REDUCE, b, [[0, 2]])
    both = links().collective(ALL_REDUCE, b, [[0, 2], [1, 3]])
    neighbours = links().collective(ALL_REDUCE, b, [[0, 1], [2, 3]])
    assert both.seconds > alone.seconds
    assert neighbours.seconds == pytest.approx(b / 2 / BW * 2 + 2 * LAT, rel=REL)
    assert alone.seconds > neighbours.seconds


def test_unknown_kind_is_an_error():
    with pytest.raises(HlortError):
        links().collective("all-sum", 8, [[0, 1]])
