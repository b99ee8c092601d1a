"""The inter-chip link model of collectives: ring schedules over the chips' ring of links.

The chips of a client sit on a ring (chip ``c`` is joined to ``c - 1`` and ``c + 1`` modulo
``num_chips``); each link carries ``ici_bandwidth`` bytes/s in each direction and a hop costs
``ici_latency_s`` before its first byte, store and forward, as ``TpuSimDevice.ici_seconds``
charges a chip-to-chip copy. A collective runs as a sequence of *steps*; in a step every chip
sends at most one chunk, all at once, and the step lasts as long as its slowest transfer. A
transfer goes the shorter way round (clockwise on a tie) and pays, per hop, the latency plus the
bytes that every transfer of the step puts on that link in that direction, over the bandwidth
(so two groups whose traffic shares a link slow each other down).

The schedules, for a group of ``n`` chips in group order (``B`` = the bytes named below):

============================ ===================================================== =========
collective                   steps                                                 B
============================ ===================================================== =========
all-reduce                   reduce-scatter then all-gather: 2(n-1) ring steps of   operand
                             B/n to the next chip of the group
reduce-scatter, all-gather   n-1 ring steps of B/n                                  the whole
                                                                                    (unscattered)
                                                                                    array
all-to-all                   n-1 steps; in step k chip i sends its B/n chunk for    operand
                             chip i+k
collective-permute           one step: every source sends B to its target           operand
collective-broadcast         n-1 ring steps of B (the root's value goes round)      operand
============================ ===================================================== =========

On a group of neighbouring chips this is the textbook ring cost: an all-reduce takes
``2(n-1)/n * B / bandwidth + 2(n-1) * latency``, an all-gather or reduce-scatter
``(n-1)/n * B / bandwidth + (n-1) * latency`` and a permute to a neighbour
``B / bandwidth + latency``. The data moves through the execution's rendezvous
(``hlort.plugin.base``); this module only says how long the links take.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from hlort.errors import Internal

ALL_REDUCE = "all-reduce"
REDUCE_SCATTER = "reduce-scatter"
ALL_GATHER = "all-gather"
ALL_TO_ALL = "all-to-all"
PERMUTE = "collective-permute"
BROADCAST = "collective-broadcast"
KINDS = (ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, ALL_TO_ALL, PERMUTE, BROADCAST)


@dataclass(frozen=True)
class Transfer:
    """``nbytes`` from chip ``src`` to chip ``dst`` within one step."""

    src: int
    dst: int
    nbytes: float


@dataclass(frozen=True)
class CollectiveTime:
    """What a collective costs on the links: its steps, their total time, and the bytes the
    busiest chip sent (for the profile)."""

    kind: str
    nbytes: int
    group_size: int
    steps: int
    seconds: float
    bytes_sent_per_chip: float

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "bytes": self.nbytes,
            "group_size": self.group_size,
            "steps": self.steps,
            "seconds": self.seconds,
            "bytes_sent_per_chip": self.bytes_sent_per_chip,
        }


class RingLinks:
    """The ring of ``num_chips`` chips and its links' bandwidth (bytes/s) and hop latency (s)."""

    def __init__(self, num_chips: int, bandwidth: float, latency_s: float):
        self.num_chips, self.bandwidth, self.latency_s = num_chips, bandwidth, latency_s

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        """The directed links from ``src`` to ``dst``, the shorter way (clockwise on a tie)."""
        n = self.num_chips
        forward = (dst - src) % n
        step = 1 if forward <= n - forward else -1
        hops = forward if step == 1 else n - forward
        links, chip = [], src
        for _ in range(hops):
            nxt = (chip + step) % n
            links.append((chip, nxt))
            chip = nxt
        return links

    def step_seconds(self, transfers: Sequence[Transfer]) -> float:
        """How long one step takes: its slowest transfer, each hop paying latency plus the
        step's load on that link over the bandwidth."""
        routes = [self.route(t.src, t.dst) for t in transfers if t.src != t.dst and t.nbytes]
        moving = [t for t in transfers if t.src != t.dst and t.nbytes]
        load: dict[tuple[int, int], float] = defaultdict(float)
        for t, links in zip(moving, routes, strict=True):
            for link in links:
                load[link] += t.nbytes
        slowest = 0.0
        for links in routes:
            time = sum(self.latency_s + load[link] / self.bandwidth for link in links)
            slowest = max(slowest, time)
        return slowest

    def collective(
        self,
        kind: str,
        nbytes: int,
        groups: Sequence[Sequence[int]],
        pairs: Sequence[tuple[int, int]] = (),
    ) -> CollectiveTime:
        """The time of collective ``kind`` run by every group of ``groups`` (chip ids, in group
        order) at once; ``pairs`` are a permute's (source chip, target chip)."""
        steps = schedule(kind, nbytes, groups, pairs)
        seconds = sum(self.step_seconds(step) for step in steps)
        sent: dict[int, float] = defaultdict(float)
        for step in steps:
            for t in step:
                if t.src != t.dst:
                    sent[t.src] += t.nbytes
        size = max((len(g) for g in groups), default=1)
        return CollectiveTime(
            kind, int(nbytes), size, len(steps), seconds, max(sent.values(), default=0.0)
        )


def schedule(
    kind: str,
    nbytes: int,
    groups: Sequence[Sequence[int]],
    pairs: Sequence[tuple[int, int]] = (),
) -> list[list[Transfer]]:
    """The steps of ``kind`` over ``groups`` (see the module docstring); a group of one chip
    moves nothing."""
    if kind == PERMUTE:
        moving = [Transfer(s, t, nbytes) for s, t in pairs if s != t]
        return [moving] if moving else []
    if kind not in KINDS:
        raise Internal(f"tpusim: no ring schedule for {kind!r}; known: {', '.join(KINDS)}")
    size = max((len(g) for g in groups), default=1)
    if size <= 1:
        return []
    chunk = nbytes / size
    ring_steps = {
        ALL_REDUCE: (2 * (size - 1), chunk),
        REDUCE_SCATTER: (size - 1, chunk),
        ALL_GATHER: (size - 1, chunk),
        BROADCAST: (size - 1, float(nbytes)),
    }
    if kind == ALL_TO_ALL:
        return [
            [Transfer(g[i], g[(i + k) % len(g)], chunk) for g in groups for i in range(len(g))]
            for k in range(1, size)
        ]
    count, per = ring_steps[kind]
    if kind == BROADCAST:  # the root's value moves one chip further each step
        return [
            [Transfer(g[k], g[k + 1], per) for g in groups if k + 1 < len(g)] for k in range(count)
        ]
    return [
        [Transfer(g[i], g[(i + 1) % len(g)], per) for g in groups for i in range(len(g))]
        for _ in range(count)
    ]
