"""HloSharding: how one value is laid out over the devices (partitions) of an SPMD program.

The forms XLA defines (``xla::HloSharding``):

- replicated: every device holds the whole value;
- maximal: one device (``device``) holds it, the others nothing;
- manual: the program is already per-device code for this value (shard_map);
- tiled: the value is cut into a grid of tiles; ``tile_assignment`` (an integer array, one axis
  per dimension of the value, plus trailing *subgroup* axes) says which device holds which tile.
  With ``replicate_on_last_tile_dim`` the last axis is a group of devices holding the same tile;
  ``last_tile_dims`` names the subgroup kinds (``replicated``, ``manual``) of the trailing axes;
- tuple: one sharding per element of a tuple-shaped value (flattened, depth first).

Tile math follows XLA: a dimension of size ``d`` cut into ``t`` tiles has tiles of
``ceil(d / t)`` elements; the last tiles may be short (padding, which the partitioner only
accepts when the tiles are even). The text form lives in :mod:`hlort.text.sharding_syntax`.
"""

from __future__ import annotations

import math
from dataclasses import field

import numpy as np

from hlort.errors import InvalidArgument
from hlort.lazy_dataclass import dataclass

REPLICATED = "replicated"
MAXIMAL = "maximal"
MANUAL = "manual"
TILED = "tiled"
TUPLE = "tuple"
UNKNOWN = "unknown"
SUBGROUP_KINDS = ("replicated", "manual")
# the module-header attributes where the SPMD partitioner records the layouts the runtime needs
SPMD_PARAMETERS_KEY = "spmd_parameters_shardings"
SPMD_OUTPUT_KEY = "spmd_output_sharding"


@dataclass(frozen=True)
class HloSharding:
    """One sharding; build with the class methods (``HloSharding.tiled([[0, 1]])``...)."""

    kind: str
    tile_shape: tuple[int, ...] = ()  # the tile assignment's dims (subgroup axes included)
    devices: tuple[int, ...] = ()  # the tile assignment flattened, row major
    last_tile_dims: tuple[str, ...] = ()  # subgroup kinds of the trailing axes
    device: int | None = None  # maximal
    elements: tuple[HloSharding, ...] = ()  # tuple
    iota: tuple[tuple[int, ...], tuple[int, ...]] | None = field(default=None, compare=False)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def replicate(cls) -> HloSharding:
        return cls(REPLICATED)

    @classmethod
    def manual(cls) -> HloSharding:
        return cls(MANUAL)

    @classmethod
    def unknown(cls) -> HloSharding:
        return cls(UNKNOWN)

    @classmethod
    def maximal(cls, device: int) -> HloSharding:
        return cls(MAXIMAL, device=int(device))

    @classmethod
    def tuple_of(cls, elements) -> HloSharding:
        return cls(TUPLE, elements=tuple(elements))

    @classmethod
    def tiled(
        cls,
        assignment,
        last_tile_dims: tuple[str, ...] = (),
        iota: tuple[tuple[int, ...], tuple[int, ...]] | None = None,
    ) -> HloSharding:
        """From a tile-assignment array; ``last_tile_dims`` the kinds of its trailing axes.

        Canonical like XLA: an all-ones tile grid is replicated, trailing subgroup axes of size 1
        are dropped, a grid that only replicates (every data axis 1, one replicated subgroup) is
        replicated."""
        array = np.asarray(assignment, dtype=np.int64)
        if array.ndim == 0:
            raise InvalidArgument("a tiled sharding needs a tile assignment of rank >= 1")
        kinds = tuple(last_tile_dims)
        for kind in kinds:
            if kind not in SUBGROUP_KINDS:
                raise InvalidArgument(
                    f"unknown subgroup kind {kind!r} in last_tile_dims; expected one of "
                    f"{list(SUBGROUP_KINDS)}"
                )
        if len(kinds) > array.ndim:
            raise InvalidArgument(
                f"tile assignment of rank {array.ndim} cannot have {len(kinds)} subgroup axes"
            )
        flat = array.reshape(-1)
        if len(set(flat.tolist())) != flat.size or (flat.size and flat.min() < 0):
            raise InvalidArgument(
                f"tile assignment {flat.tolist()} must list distinct non-negative device ids"
            )
        dims = list(array.shape)
        while kinds and dims[-1] == 1:  # a subgroup of one device is no subgroup
            dims.pop()
            kinds = kinds[:-1]
        data_dims = dims[: len(dims) - len(kinds)]
        if all(d == 1 for d in data_dims) and all(k == "replicated" for k in kinds):
            return cls.replicate()
        if kinds == ("manual",) and all(d == 1 for d in data_dims):
            return cls.manual()
        if iota is not None and tuple(dims) != tuple(array.shape):
            iota = None
        return cls(TILED, tuple(dims), tuple(int(v) for v in flat), kinds, iota=iota)

    @classmethod
    def iota_tiled(
        cls,
        tile_shape,
        reshape_dims=None,
        transpose=None,
        last_tile_dims: tuple[str, ...] = (),
    ) -> HloSharding:
        """``devices=[2,2]<=[4]`` / ``<=[2,2]T(1,0)``: devices 0..N-1 reshaped, transposed,
        reshaped to the tile shape."""
        tile_shape = tuple(int(d) for d in tile_shape)
        count = math.prod(tile_shape)
        reshape_dims = tuple(int(d) for d in (reshape_dims or (count,)))
        if math.prod(reshape_dims) != count:
            raise InvalidArgument(
                f"iota tile assignment <={list(reshape_dims)} has {math.prod(reshape_dims)} "
                f"devices; the tile shape {list(tile_shape)} needs {count}"
            )
        perm = tuple(int(p) for p in (transpose or range(len(reshape_dims))))
        if sorted(perm) != list(range(len(reshape_dims))):
            raise InvalidArgument(f"T{perm} is not a permutation of {len(reshape_dims)} axes")
        array = np.arange(count).reshape(reshape_dims).transpose(perm).reshape(tile_shape)
        return cls.tiled(array, last_tile_dims, iota=(reshape_dims, perm))

    @classmethod
    def split(cls, rank: int, dim: int, devices, replicas: int = 1) -> HloSharding:
        """The value cut along ``dim`` over ``len(devices) // replicas`` tiles; consecutive
        ``replicas`` devices of ``devices`` hold the same tile."""
        devices = list(devices)
        parts = len(devices) // replicas
        shape = [1] * rank + ([replicas] if replicas > 1 else [])
        shape[dim] = parts
        kinds = ("replicated",) if replicas > 1 else ()
        return cls.tiled(np.asarray(devices).reshape(shape), kinds)

    # -- properties ---------------------------------------------------------------------------
    @property
    def is_replicated(self) -> bool:
        return self.kind == REPLICATED

    @property
    def is_tiled(self) -> bool:
        return self.kind == TILED

    @property
    def is_tuple(self) -> bool:
        return self.kind == TUPLE

    @property
    def is_manual(self) -> bool:
        return self.kind == MANUAL

    @property
    def is_maximal(self) -> bool:
        return self.kind == MAXIMAL

    @property
    def replicate_on_last_tile_dim(self) -> bool:
        return self.last_tile_dims == ("replicated",)

    @property
    def assignment(self) -> np.ndarray:
        """The tile assignment array (subgroup axes included)."""
        return np.asarray(self.devices, dtype=np.int64).reshape(self.tile_shape)

    @property
    def data_rank(self) -> int:
        """How many axes of the tile assignment cut the value (the rest are subgroups)."""
        return len(self.tile_shape) - len(self.last_tile_dims)

    @property
    def tile_counts(self) -> tuple[int, ...]:
        """Tiles along each dimension of the value."""
        return self.tile_shape[: self.data_rank]

    @property
    def num_devices(self) -> int:
        return len(self.devices)

    def replication(self) -> int:
        """Devices per tile (1 unless there are replicated subgroup axes)."""
        return math.prod(
            d
            for d, k in zip(self.tile_shape[self.data_rank :], self.last_tile_dims, strict=True)
            if k == "replicated"
        )

    def check_rank(self, rank: int, what: str = "the value") -> None:
        if self.is_tiled and self.data_rank != rank:
            raise InvalidArgument(
                f"sharding {self} tiles {self.data_rank} dimension(s) but {what} has rank "
                f"{rank}; give one tile count per dimension"
            )

    # -- tile math ----------------------------------------------------------------------------
    def shard_dims(self, dims) -> tuple[int, ...]:
        """The dims of one tile of a value of ``dims`` (ceil division, as XLA pads)."""
        dims = tuple(int(d) for d in dims)
        if not self.is_tiled:
            return dims
        self.check_rank(len(dims))
        return tuple(-(-d // t) for d, t in zip(dims, self.tile_counts, strict=True))

    def evenly_divides(self, dims) -> bool:
        if not self.is_tiled:
            return True
        return all(d % t == 0 for d, t in zip(dims, self.tile_counts, strict=True))

    def tile_index(self, device: int) -> tuple[int, ...]:
        """Which tile (one index per dimension of the value) ``device`` holds."""
        if not self.is_tiled:
            return ()
        where = np.argwhere(self.assignment == device)
        if where.size == 0:
            raise InvalidArgument(f"device {device} is not in the tile assignment of {self}")
        return tuple(int(i) for i in where[0][: self.data_rank])

    def tile_slices(self, dims, device: int) -> tuple[slice, ...]:
        """The slices of a global array of ``dims`` that ``device`` holds (clipped at the end)."""
        dims = tuple(int(d) for d in dims)
        if not self.is_tiled:
            return tuple(slice(0, d) for d in dims)
        size = self.shard_dims(dims)
        index = self.tile_index(device)
        return tuple(
            slice(min(i * s, d), min((i + 1) * s, d))
            for i, s, d in zip(index, size, dims, strict=True)
        )

    def device_groups_along(self, dims_to_group) -> list[list[int]]:
        """Groups of devices that differ only in the tile index of ``dims_to_group`` (and share
        the same index of every other axis): the groups a collective over those dims spans."""
        array = self.assignment
        keep = [a for a in range(array.ndim) if a not in set(dims_to_group)]
        moved = np.transpose(array, keep + list(dims_to_group))
        rows = moved.reshape(math.prod(moved.shape[: len(keep)]) if keep else 1, -1)
        return [[int(v) for v in row] for row in rows]

    def to_text(self) -> str:
        """XLA's text form (``HloSharding::ToString``): ``{devices=[2,1]0,1}``, ``{replicated}``,
        ``{{replicated}, {maximal device=1}}``; iota assignments print as ``<=[4]``."""
        if self.kind == TUPLE:
            return "{" + ", ".join(e.to_text() for e in self.elements) + "}"
        if self.kind == MAXIMAL:
            return f"{{maximal device={self.device}}}"
        if self.kind != TILED:
            return "{" + self.kind + "}"
        dims = ",".join(map(str, self.tile_shape))
        if self.iota is not None:
            reshape, perm = self.iota
            devices = f"<=[{','.join(map(str, reshape))}]"
            if list(perm) != list(range(len(perm))):
                devices += f"T({','.join(map(str, perm))})"
        else:
            devices = ",".join(map(str, self.devices))
        text = f"devices=[{dims}]{devices}"
        if self.replicate_on_last_tile_dim:
            text += " last_tile_dim_replicate"
        elif self.last_tile_dims:
            text += " last_tile_dims={" + ", ".join(self.last_tile_dims) + "}"
        return "{" + text + "}"

    def __str__(self) -> str:
        return self.to_text()
