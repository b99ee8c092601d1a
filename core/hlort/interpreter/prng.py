"""XLA's counter-based bit generators, bit-exact, in vectorized NumPy.

``rng-bit-generator`` is implementation-defined in StableHLO; XLA's CPU and GPU compilers lower it
with ``RngBitGeneratorExpander`` onto the Threefry-2x32 and Philox-4x32 kernels of
``xla/hlo/builder/lib/prng.cc``. This module reproduces that expansion (the counter layout, the way
32-bit outputs are split into halves, the round-robin interleaving of Philox words, the new state),
so programs that draw random bits give the same numbers here as under XLA. All arithmetic is on
uint32/uint64 arrays, which wrap modulo 2**32 / 2**64 exactly like the HLO ops XLA emits.
"""

from __future__ import annotations

import math

import numpy as np

_U32 = np.uint32
_U64 = np.uint64
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_THREEFRY_PARITY = _U32(0x1BD11BDA)
_PHILOX_W32A = _U32(0x9E3779B9)
_PHILOX_W32B = _U32(0xBB67AE85)
_PHILOX_M4X32A = _U64(0xD2511F53)
_PHILOX_M4X32B = _U64(0xCD9E8D57)


def _lo32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, _U64).astype(_U32)


def _hi32(x: np.ndarray) -> np.ndarray:
    return (np.asarray(x, _U64) >> _U64(32)).astype(_U32)


def _join64(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(_U64) | (hi.astype(_U64) << _U64(32))


def _flat_u32(*values) -> tuple[tuple[int, ...], list[np.ndarray]]:
    """Broadcast to one shape and flatten to 1-d uint32, so arithmetic never hits NumPy scalars."""
    arrays = np.broadcast_arrays(*(np.asarray(v, _U32) for v in values))
    shape = arrays[0].shape
    return shape, [a.reshape(-1).copy() for a in arrays]


def threefry2x32(key0, key1, x0, x1) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32, 20 rounds (Salmon et al. 2011), elementwise over broadcast uint32 arrays."""
    shape, (k0, k1, a, b) = _flat_u32(key0, key1, x0, x1)
    ks = (k0, k1, k0 ^ k1 ^ _THREEFRY_PARITY)
    a = a + ks[0]
    b = b + ks[1]
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            a = a + b
            b = (b << _U32(r)) | (b >> _U32(32 - r))
            b = a ^ b
        a = a + ks[(block + 1) % 3]
        b = b + ks[(block + 2) % 3] + _U32(block + 1)
    return a.reshape(shape), b.reshape(shape)


def philox4x32(counter, key0, key1) -> tuple[np.ndarray, ...]:
    """Philox-4x32 with 10 rounds; ``counter`` is four uint32 arrays, least significant first."""
    shape, (c0, c1, c2, c3, k0, k1) = _flat_u32(*counter, key0, key1)
    for _ in range(10):
        p0 = c0.astype(_U64) * _PHILOX_M4X32A
        p1 = c2.astype(_U64) * _PHILOX_M4X32B
        c0, c1, c2, c3 = (_hi32(p1) ^ c1 ^ k0, _lo32(p1), _hi32(p0) ^ c3 ^ k1, _lo32(p0))
        k0 = k0 + _PHILOX_W32A
        k1 = k1 + _PHILOX_W32B
    return tuple(c.reshape(shape) for c in (c0, c1, c2, c3))


def _split_into_halves(dims: tuple[int, ...]) -> tuple[int, int]:
    """XLA's SplitShapeIntoHalves: the dimension halved (first even one, else the largest)."""
    for i, d in enumerate(dims):
        if d % 2 == 0:
            return i, (d + 1) // 2
    split = max(range(len(dims)), key=lambda i: (dims[i], -i))
    return split, (dims[split] + 1) // 2


def three_fry(state: np.ndarray, dims: tuple[int, ...], bits: int) -> tuple[np.ndarray, np.ndarray]:
    """RNG_THREE_FRY: ``state`` = u64[2] (key, counter). Returns (new state, u<bits> array)."""
    key, counter = state[0:1], state[1:2]
    k0, k1 = _lo32(key), _hi32(key)
    if bits == 64:
        n = math.prod(dims)
        ctr = counter + np.arange(n, dtype=_U64)
        x0, x1 = threefry2x32(k0, k1, _lo32(ctr), _hi32(ctr))
        values = _join64(x0, x1).reshape(dims)
    else:
        # 32 bits (narrower types truncate them): each Threefry call yields two words, placed in
        # adjacent positions of the halved dimension.
        if dims:
            split, half = _split_into_halves(dims)
            half_dims = dims[:split] + (half,) + dims[split + 1 :]
        else:
            split, half_dims = 0, (1,)
        n = math.prod(half_dims)
        ctr = counter + np.arange(n, dtype=_U64)
        x0, x1 = threefry2x32(k0, k1, _lo32(ctr), _hi32(ctr))
        if dims:
            pair = np.stack([x0.reshape(half_dims), x1.reshape(half_dims)], axis=split + 1)
            merged = pair.reshape(dims[:split] + (2 * half_dims[split],) + dims[split + 1 :])
            values = merged[(slice(None),) * split + (slice(0, dims[split]),)]
        else:
            values = x0.reshape(())
        values = values.astype(np.dtype(f"uint{bits}"))
    new_state = np.concatenate([key, counter + _U64(n)])
    return new_state, values.copy()


def _add_u128(lo: np.ndarray, hi: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hi:lo) + delta on uint64 words, carrying into the high word as XLA's Uint128AddUint64."""
    new_lo = lo + delta
    return new_lo, np.where(new_lo < lo, hi + _U64(1), hi).astype(_U64)


def philox(state: np.ndarray, dims: tuple[int, ...], bits: int) -> tuple[np.ndarray, np.ndarray]:
    """RNG_PHILOX: ``state`` = u64[3] (key, counter lo, counter hi) or u64[2] (key, counter lo;
    the counter's high word is then the key, since XLA's expander reverses a 2-word state)."""
    wide = state.shape[0] >= 3
    key = state[0:1]
    lo, hi = (state[1:2], state[2:3]) if wide else (state[1:2], state[0:1])
    n = math.prod(dims)
    nvec = -(-(2 * n if bits == 64 else n) // 4)
    ctr_lo, ctr_hi = _add_u128(lo, hi, np.arange(nvec, dtype=_U64))
    out = philox4x32(
        (_lo32(ctr_lo), _hi32(ctr_lo), _lo32(ctr_hi), _hi32(ctr_hi)), _lo32(key), _hi32(key)
    )
    if bits == 64:
        numbers = np.stack([_join64(out[0], out[1]), _join64(out[2], out[3])], axis=1)
    else:
        numbers = np.stack(out, axis=1).astype(np.dtype(f"uint{bits}"))
    values = numbers.reshape(-1)[:n].reshape(dims)
    end_lo, end_hi = _add_u128(lo, hi, np.full(1, nvec, dtype=_U64))
    new_state = np.concatenate([key, end_lo, end_hi] if wide else [key, end_lo])
    return new_state, values.copy()
