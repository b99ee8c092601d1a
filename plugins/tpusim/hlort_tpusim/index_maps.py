"""DMA gather descriptors: iteration spaces, tiles of them, and index maps to a source buffer.

A vector kernel walks an *iteration space* by tiles. ``flat`` spaces are the elements of an
array shape in row-major order, cut into tiles of ``tile`` elements; ``reduce`` spaces are the
elements of a reduce's operand, arranged as (kept positions x reduced positions) and cut into
``[TO, TK]`` tiles. A ``dma.in`` with a ``gather`` access brings, for one tile, the source
elements the kernel's expression needs at each position: the position's multi-index goes through
``maps`` (the broadcast / transpose / reshape / slice / reverse steps between the kernel's root
and the source), then reads the source. This is what a real DMA engine's strided descriptors do;
here NumPy computes it per tile (a contiguous slice when the maps allow, index arrays otherwise).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def space_tiles(space: dict) -> tuple[int, ...]:
    """Tile counts per tile axis: (n,) for flat spaces, (no, nk) for reduce spaces."""
    if space["kind"] == "flat":
        total = math.prod(space["dims"])
        return (max(1, -(-total // space["tile"])),)
    kept, red = reduce_extents(space)
    to, tk = space["tile"]
    return (max(1, -(-kept // to)), max(1, -(-red // tk)))


def reduce_extents(space: dict) -> tuple[int, int]:
    dims, rd = space["dims"], set(space["reduce"])
    kept = math.prod(d for i, d in enumerate(dims) if i not in rd)
    red = math.prod(d for i, d in enumerate(dims) if i in rd)
    return kept, red


def tile_bounds(space: dict, index: Sequence[int]) -> list[tuple[int, int]]:
    """[(lo, hi)] per tile axis for tile ``index``."""
    if space["kind"] == "flat":
        total = math.prod(space["dims"])
        t = space["tile"]
        return [(index[0] * t, min(total, (index[0] + 1) * t))]
    kept, red = reduce_extents(space)
    to, tk = space["tile"]
    return [
        (index[0] * to, min(kept, (index[0] + 1) * to)),
        (index[1] * tk, min(red, (index[1] + 1) * tk)),
    ]


def tile_shape(space: dict, index: Sequence[int]) -> tuple[int, ...]:
    return tuple(hi - lo for lo, hi in tile_bounds(space, index))


def multi_index(space: dict, index: Sequence[int]) -> list[np.ndarray]:
    """The multi-index (one int64 array per dim of the space's shape) of every tile position."""
    dims = tuple(space["dims"])
    bounds = tile_bounds(space, index)
    if space["kind"] == "flat":
        lo, hi = bounds[0]
        if not dims:
            return []
        return list(np.unravel_index(np.arange(lo, hi, dtype=np.int64), dims))
    rd = list(space["reduce"])
    kd = [i for i in range(len(dims)) if i not in rd]
    (olo, ohi), (klo, khi) = bounds
    kept = (
        np.unravel_index(np.arange(olo, ohi, dtype=np.int64), [dims[i] for i in kd]) if kd else ()
    )
    red = np.unravel_index(np.arange(klo, khi, dtype=np.int64), [dims[i] for i in rd]) if rd else ()
    out: list[np.ndarray] = [None] * len(dims)  # type: ignore[list-item]
    for j, d in enumerate(kd):
        out[d] = kept[j][:, None]
    for j, d in enumerate(rd):
        out[d] = red[j][None, :]
    shape = (ohi - olo, khi - klo)
    return [np.broadcast_to(a, shape) for a in out]


def apply_maps(index: list[np.ndarray], maps: Sequence[dict]) -> list[np.ndarray]:
    """Push a multi-index through the steps, from the kernel's root shape to the source."""
    for step in maps:
        op = step["op"]
        if op == "broadcast":
            index = [index[d] for d in step["dims"]]
        elif op == "transpose":
            out: list[np.ndarray] = [None] * len(index)  # type: ignore[list-item]
            for i, p in enumerate(step["perm"]):
                out[p] = index[i]
            index = out
        elif op == "reshape":
            if not step["operand"]:
                index = []
                continue
            shape = np.broadcast(*index).shape if index else ()
            flat = (
                np.ravel_multi_index([np.broadcast_to(i, shape) for i in index], step["out"])
                if index
                else np.zeros(shape, np.int64)
            )
            index = list(np.unravel_index(flat, step["operand"]))
        elif op == "slice":
            index = [
                s + i * t for i, s, t in zip(index, step["starts"], step["strides"], strict=True)
            ]
        elif op == "reverse":
            index = list(index)
            for d in step["dims"]:
                index[d] = step["sizes"][d] - 1 - index[d]
        else:
            raise ValueError(f"unknown index map step {op!r}")
    return index


def _only_reshapes(maps: Sequence[dict]) -> bool:
    return all(m["op"] == "reshape" for m in maps)


def gather(
    source: np.ndarray, space: dict, maps: Sequence[dict], index: Sequence[int]
) -> np.ndarray:
    """The tile of the source the descriptor names, shaped like the tile."""
    shape = tile_shape(space, index)
    bounds = tile_bounds(space, index)
    if _only_reshapes(maps):
        flat = source.reshape(-1)
        if space["kind"] == "flat":
            lo, hi = bounds[0]
            return flat[lo:hi]
        dims, rd = space["dims"], list(space["reduce"])
        if rd == list(range(len(dims) - len(rd), len(dims))):
            kept, red = reduce_extents(space)
            (olo, ohi), (klo, khi) = bounds
            return flat.reshape(kept, red)[olo:ohi, klo:khi]
    if source.ndim == 0:
        return np.broadcast_to(source, shape)
    idx = apply_maps(multi_index(space, index), maps)
    if all(np.ndim(i) == 0 for i in idx):
        return np.broadcast_to(source[tuple(idx)], shape)
    idx = np.broadcast_arrays(*idx)
    return source[tuple(idx)].reshape(shape)


def scatter_tile(dest: np.ndarray, space: dict, index: Sequence[int], tile: np.ndarray) -> None:
    """Write a tile of a flat space (row-major positions) into ``dest``."""
    lo, hi = tile_bounds(space, index)[0]
    dest.reshape(-1)[lo:hi] = tile.reshape(-1)[: hi - lo]


def iota_values(
    space: dict, maps: Sequence[dict], index: Sequence[int], dim: int, dtype: np.dtype
) -> np.ndarray:
    """An iota along ``dim`` of the shape reached through ``maps``, at the tile's positions."""
    idx = apply_maps(multi_index(space, index), maps)
    return np.broadcast_to(idx[dim], tile_shape(space, index)).astype(dtype)
