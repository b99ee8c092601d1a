"""NumPy views of host memory described the PJRT way (dims, byte strides, layouts)."""

from __future__ import annotations

import ctypes

import numpy as np

from hlort.errors import ErrorCode, HlortError


def dense_strides(dims: tuple[int, ...], itemsize: int, minor_to_major=None) -> tuple[int, ...]:
    rank = len(dims)
    order = list(minor_to_major) if minor_to_major is not None else list(range(rank - 1, -1, -1))
    strides = [0] * rank
    step = itemsize
    for axis in order:
        strides[axis] = step
        step *= max(1, dims[axis])
    return tuple(strides)


def host_view(address: int, dims: tuple[int, ...], dtype: np.dtype, strides) -> np.ndarray:
    """An array over ``address`` (no copy); negative strides may point inside the block."""
    if any(d == 0 for d in dims):
        return np.zeros(dims, dtype)
    pairs = list(zip(strides, dims, strict=True))
    lo = sum(s * (d - 1) for s, d in pairs if s < 0)
    hi = sum(s * (d - 1) for s, d in pairs if s > 0) + dtype.itemsize
    block = (ctypes.c_char * (hi - lo)).from_address(address + lo)
    return np.ndarray(
        shape=dims,
        dtype=dtype,
        buffer=memoryview(block).cast("B"),
        offset=-lo,
        strides=tuple(strides),
    )


def layout_strides(layout_struct, dims: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a PJRT_Buffer_MemoryLayout (tiled without tiles, or strides)."""
    rank = len(dims)
    if rank == 0:
        return ()
    if layout_struct.type == 1:  # strides
        n = layout_struct.minor_to_major_size_or_num_strides
        return tuple((ctypes.c_int64 * n).from_address(layout_struct.minor_to_major_or_strides))
    if layout_struct.num_tiles:
        raise HlortError(
            "tiled host layouts are not supported by hlort-jax; use a dense (untiled) layout",
            ErrorCode.UNIMPLEMENTED,
        )
    n = layout_struct.minor_to_major_size_or_num_strides
    if n != rank:
        raise HlortError(
            f"host layout has {n} minor_to_major entries for rank {rank}",
            ErrorCode.INVALID_ARGUMENT,
        )
    m2m = tuple((ctypes.c_int64 * n).from_address(layout_struct.minor_to_major_or_strides))
    return dense_strides(dims, itemsize, m2m)


def layout_struct():
    from hlort_jax.abi_structs import STRUCTS

    return STRUCTS["MemoryLayout"]
