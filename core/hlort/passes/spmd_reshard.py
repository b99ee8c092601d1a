"""The partitioner's emitter: per-device code for one partition, collectives and resharding.

Every device runs the same program; what differs is ``partition-id``. A device finds its own
tile offsets in small constant tables indexed by it, and the collectives name their groups by
flattened device ids (``channel_id`` + ``use_global_device_ids``, XLA's flattened-id mode), one
group per replica and per set of partitions that talk, so the program is correct for any number
of replicas. Resharding goes through the replicated form: all-gathers along each tiled
dimension, then a local dynamic-slice; replicated to tiled needs no communication.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from hlort.builder import Builder
from hlort.errors import InvalidArgument
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.sharding import HloSharding
from hlort.shape import ArrayShape, Shape, TupleShape, scalar


class CannotPartition(Exception):  # noqa: N818 - a signal inside the pass, never raised out of it
    """A rule cannot partition this instruction; the pass replicates it and records ``reason``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def local_shape(shape: Shape, sharding: HloSharding) -> Shape:
    """The per-device shape of a value of global ``shape`` laid out as ``sharding``."""
    if isinstance(shape, TupleShape):
        if sharding.is_tuple:
            return TupleShape(
                tuple(
                    local_shape(s, e)
                    for s, e in zip(shape.elements, sharding.elements, strict=True)
                )
            )
        return shape
    if not isinstance(shape, ArrayShape) or not sharding.is_tiled:
        return shape
    return ArrayShape(shape.dtype, sharding.shard_dims(shape.dims), shape.layout)


def derive(source: HloSharding, mapping: Sequence[int | None]) -> HloSharding:
    """A sharding of another value built from ``source``'s tile assignment: dimension ``j`` of
    the new value is cut like axis ``mapping[j]`` of ``source`` (None: not cut); every axis of
    ``source`` no dimension takes becomes one replicated subgroup (those devices hold the same
    tile). CannotPartition when such an axis is a manual subgroup."""
    if not source.is_tiled:
        return HloSharding.replicate()
    array = source.assignment
    used = [a for a in mapping if a is not None]
    rest = [a for a in range(array.ndim) if a not in used]
    for axis in rest:
        if axis >= source.data_rank and source.last_tile_dims[axis - source.data_rank] != (
            "replicated"
        ):
            raise CannotPartition("the value has manual subgroups (shard_map)")
    moved = array.transpose(used + rest)
    dims = [array.shape[a] if a is not None else 1 for a in mapping]
    if rest:
        dims.append(math.prod(array.shape[a] for a in rest))
    return HloSharding.tiled(moved.reshape(dims), ("replicated",) if rest else ())


class SpmdEmitter:
    """Builds the per-device entry computation; one per partitioned module."""

    def __init__(self, builder: Builder, num_partitions: int, num_replicas: int):
        self.b = builder
        self.partitions = num_partitions
        self.replicas = num_replicas
        self._channels = itertools.count(1)
        self._partition_id: Instruction | None = None
        self._tables: dict[tuple[int, ...], Instruction] = {}
        self._zero: Instruction | None = None
        self._adders: dict[str, Computation] = {}
        self._reductions: dict[Instruction, tuple] = {}  # all-reduce -> (operand, groups, fn)

    def rollback(self, mark: int) -> None:
        """Drop the instructions appended since ``mark`` (a rule that gave up), and the cached
        ones among them."""
        comp = self.b.computation
        dropped = comp.instructions[mark:]
        comp.instructions = comp.instructions[:mark]
        for instr in dropped:
            instr.parent = None
        if self._partition_id is not None and self._partition_id.parent is None:
            self._partition_id = None
        if self._zero is not None and self._zero.parent is None:
            self._zero = None
        self._tables = {k: v for k, v in self._tables.items() if v.parent is not None}

    # -- device identity ------------------------------------------------------------------------
    def partition_id(self) -> Instruction:
        if self._partition_id is None:
            self._partition_id = self.b.op(Opcode.PARTITION_ID, (), scalar("u32"))
        return self._partition_id

    def per_partition(self, values: Sequence[int]) -> Instruction:
        """A s32 scalar holding ``values[partition-id]`` on each device."""
        key = tuple(int(v) for v in values)
        if len(set(key)) == 1:
            return self._s32(key[0])
        hit = self._tables.get(key)
        if hit is None:
            table = self.b.constant(np.asarray(key, np.int32))
            one = self.b.dynamic_slice(table, [self.partition_id()], [1])
            hit = self.b.reshape(one, [])
            self._tables[key] = hit
        return hit

    def _s32(self, value: int) -> Instruction:
        if value == 0:
            if self._zero is None:
                self._zero = self.b.constant(np.int32(0))
            return self._zero
        return self.b.constant(np.int32(value))

    def check_devices(self, sharding: HloSharding, what: str) -> None:
        if sharding.is_tiled and sorted(sharding.devices) != list(range(self.partitions)):
            raise InvalidArgument(
                f"sharding {sharding} of {what} must name each of the {self.partitions} "
                f"partition(s) once (devices 0..{self.partitions - 1}); it names "
                f"{sorted(sharding.devices)}"
            )

    def adder(self, dtype) -> Computation:
        """``(a, b) -> a + b`` on scalars of ``dtype`` (or), the reducer of partial sums."""
        comp = self._adders.get(dtype.name)
        if comp is None:
            op = Opcode.OR if dtype.is_pred else Opcode.ADD
            comp = self.b.scalar_computation(op, dtype, name=f"spmd_sum_{dtype.name}")
            self._adders[dtype.name] = comp
        return comp

    # -- collectives ----------------------------------------------------------------------------
    def _flattened(self, groups: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
        p = self.partitions
        return tuple(
            tuple(r * p + d for d in group) for r in range(self.replicas) for group in groups
        )

    def all_reduce(
        self, x: Instruction, groups: Sequence[Sequence[int]], reducer: Computation
    ) -> Instruction:
        if all(len(g) == 1 for g in groups):
            return x
        total = self.b.op(
            Opcode.ALL_REDUCE,
            (x,),
            x.shape,
            channel_id=next(self._channels),
            replica_groups=self._flattened(groups),
            use_global_device_ids=True,
            to_apply=self.b._comp(reducer),
        )
        self._reductions[total] = (x, [list(g) for g in groups], reducer)
        return total

    def _reduce_scatter(self, x: Instruction, dst: HloSharding) -> Instruction | None:
        """An all-reduce just made whose sum each device then slices to its tile along one
        dimension, when the tiles follow the all-reduce's groups: one reduce-scatter instead
        (each device receives only its part of the sum)."""
        made = self._reductions.get(x)
        cut = [d for d, t in enumerate(dst.tile_counts) if t > 1]
        if made is None or len(cut) != 1 or x is self.b.computation.root:
            return None
        operand, groups, reducer = made
        if dst.device_groups_along(cut) != groups:
            return None
        comp = self.b.computation
        if any(x in i.operands for i in comp.instructions):
            return None  # something else reads the whole sum
        comp.instructions.remove(x)
        x.parent = None
        del self._reductions[x]
        dims = list(operand.shape.dims)
        dims[cut[0]] //= dst.tile_counts[cut[0]]
        return self.b.op(
            Opcode.REDUCE_SCATTER,
            (operand,),
            ArrayShape(operand.shape.dtype, tuple(dims), operand.shape.layout),
            channel_id=next(self._channels),
            replica_groups=self._flattened(groups),
            use_global_device_ids=True,
            dimensions=(cut[0],),
            to_apply=reducer,
        )

    def all_gather(self, x: Instruction, dim: int, groups: Sequence[Sequence[int]]) -> Instruction:
        size = len(groups[0])
        if size == 1:
            return x
        dims = list(x.shape.dims)
        dims[dim] *= size
        return self.b.op(
            Opcode.ALL_GATHER,
            (x,),
            ArrayShape(x.shape.dtype, tuple(dims), x.shape.layout),
            channel_id=next(self._channels),
            replica_groups=self._flattened(groups),
            dimensions=(dim,),
            use_global_device_ids=True,
        )

    # -- resharding -----------------------------------------------------------------------------
    def reshard(
        self,
        x: Instruction,
        src: HloSharding,
        dst: HloSharding,
        global_shape: Shape,
        replaces: bool = False,
    ) -> Instruction:
        """``x`` (laid out as ``src``) laid out as ``dst``. ``replaces``: the result takes
        ``x``'s place (nothing else will read ``x``), so a fresh all-reduce may become a
        reduce-scatter."""
        if src == dst or not isinstance(global_shape, ArrayShape):
            return x
        if replaces and src.is_replicated and dst.is_tiled:
            scattered = self._reduce_scatter(x, dst)
            if scattered is not None:
                return scattered
        if src.is_tiled:
            x = self.replicate(x, src)
        if dst.is_tiled:
            x = self.local_tile(x, dst, global_shape)
        return x

    def replicate(self, x: Instruction, src: HloSharding) -> Instruction:
        """All-gather a tiled value along each of its tiled dimensions."""
        for axis, tiles in enumerate(src.tile_counts):
            if tiles > 1:
                x = self.all_gather(x, axis, src.device_groups_along([axis]))
        return x

    def local_tile(self, x: Instruction, dst: HloSharding, global_shape: ArrayShape) -> Instruction:
        """Each device's tile of a replicated value: a dynamic-slice at its own offsets."""
        if x.opcode is Opcode.BROADCAST:
            kept = set(x.attrs["dimensions"])
            if all(t == 1 for d, t in enumerate(dst.tile_counts) if d in kept):
                # only new dimensions are cut: broadcast at the tile's shape, slice nothing
                dims = dst.shard_dims(global_shape.dims)
                return self.b.broadcast(x.operands[0], dims, x.attrs["dimensions"])
        size = dst.shard_dims(global_shape.dims)
        starts = []
        for axis, tiles in enumerate(dst.tile_counts):
            if tiles == 1:
                starts.append(self._s32(0))
                continue
            offsets = [dst.tile_index(p)[axis] * size[axis] for p in range(self.partitions)]
            starts.append(self.per_partition(offsets))
        return self.b.dynamic_slice(x, starts, size)
