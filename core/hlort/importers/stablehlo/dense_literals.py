"""``dense<...>`` literals -> NumPy arrays.

Handles what MLIR prints: nested lists, splats, ``true``/``false``, complex ``(re, im)`` pairs, hex
integers standing for a float's raw bits (how NaN and inf print: ``0x7FC00000``), and hex blobs
``"0x..."`` holding the little-endian raw data of any element type (one byte per i1, or
bit-packed i1). Blobs go through ``bytes.fromhex`` + ``np.frombuffer`` so megabytes decode fast.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np

from hlort import limits
from hlort.dtypes import DType
from hlort.importers.stablehlo.mlir_ast import ScalarType, TensorType
from hlort.importers.stablehlo.types import element_dtype

LAZY_SPLAT_ELEMENTS = 1024  # the constant folder's size bound: bigger splats stay broadcasts
_ELEMENT_RE = re.compile(r"[^\s,\[\]()]+")
_TRUE = {"true": True, "false": False, "1": True, "0": False}


def decode_dense(body: str, t, fail: Callable[[str], Exception]) -> np.ndarray | None:
    """The value of ``dense<body> : t`` (an array of t's dims), or None when hlort has no
    DType for t's element type. ``fail(message)`` builds the exception for a malformed literal."""
    if isinstance(t, ScalarType):
        t = TensorType((), t)
    if not isinstance(t, TensorType):
        raise fail(f"dense literal needs a tensor type, got {t}")
    dt = element_dtype(t.element)
    if dt is None or not t.is_static:
        return None
    dims = t.dims
    size = math.prod(dims)
    nbytes = size * dt.itemsize
    limits.check_constant_size(nbytes, f"dense literal of {t}", fail=fail)
    text = body.strip()
    if text.startswith('"'):
        return _decode_blob(text, dt, dims, size, fail)
    if not text:
        if size != 0:
            raise fail(f"empty dense literal for {t}")
        return np.zeros(dims, dt.numpy)
    tokens = _ELEMENT_RE.findall(text)
    per_element = 2 if dt.is_complex else 1
    flat = _convert_tokens(tokens, dt, fail)
    if len(tokens) == per_element and not text.startswith("["):
        return splat(flat[0], dims, dt)
    if len(flat) != size:
        raise fail(f"dense literal has {len(flat)} element(s), but {t} needs {size}")
    return flat.reshape(dims)


def splat(value, dims: tuple[int, ...], dt: DType) -> np.ndarray:
    """``value`` repeated over ``dims``: a small array, or above LAZY_SPLAT_ELEMENTS a read-only
    zero-stride view of one element, so that a splat stays one value until something needs the
    array (the importer turns it into a broadcast of a scalar constant)."""
    one = np.array(value, dt.numpy)
    if math.prod(dims) <= LAZY_SPLAT_ELEMENTS:
        return np.full(dims, one, dt.numpy)
    return np.broadcast_to(one, dims)


def is_lazy_splat(value: np.ndarray) -> bool:
    """Whether ``value`` is a splat kept as one element (see :func:`splat`)."""
    return value.size > LAZY_SPLAT_ELEMENTS and not any(value.strides)


def _decode_blob(text: str, dt: DType, dims, size: int, fail) -> np.ndarray:
    if not text.startswith('"0x') or not text.endswith('"'):
        raise fail('only hex blobs ("0x...") are supported as string dense literals')
    try:
        data = bytes.fromhex(text[3:-1])
    except ValueError:
        raise fail("malformed hex blob in dense literal") from None
    item = dt.itemsize
    if dt.is_pred:
        raw = np.frombuffer(data, np.uint8)
        if len(raw) == size:
            return (raw != 0).reshape(dims)
        if len(raw) == 1 and raw[0] in (0x00, 0x01, 0xFF):  # a splat (else bit-packed)
            return splat(bool(raw[0]), dims, dt)
        if len(raw) == (size + 7) // 8:
            bits = np.unpackbits(raw, bitorder="little")[:size]
            return bits.astype(np.bool_).reshape(dims)
        raise fail(f"hex blob of {len(raw)} byte(s) does not fit {size} i1 element(s)")
    # i4/ui4: one byte per element (MLIR's storage width), read as its value so that the byte
    # hlort holds has the high nibble zero whatever MLIR wrote there
    storage = (np.int8 if dt.is_signed_integer else np.uint8) if dt.is_sub_byte_integer else None
    if len(data) == size * item:
        if storage is not None:
            return np.frombuffer(data, storage).astype(dt.numpy).reshape(dims)
        return np.frombuffer(data, dt.numpy).reshape(dims).copy()
    if len(data) == item:
        if storage is not None:
            return splat(np.frombuffer(data, storage).astype(dt.numpy)[0], dims, dt)
        return splat(np.frombuffer(data, dt.numpy)[0], dims, dt)
    raise fail(f"hex blob of {len(data)} byte(s) does not fit {size} element(s) of {dt.name}")


def _convert_tokens(tokens: list[str], dt: DType, fail) -> np.ndarray:
    try:
        if dt.is_pred:
            return np.array([_TRUE[t] for t in tokens], np.bool_)
        if dt.is_integer:
            return _integers(tokens, dt)
        if dt.is_complex:
            parts = _floats(tokens, dt.component)
            if len(parts) % 2:
                raise fail("complex dense literal needs (real, imag) pairs")
            out = np.empty(len(parts) // 2, dt.numpy)
            out.real = parts[0::2]
            out.imag = parts[1::2]
            return out
        return _floats(tokens, dt)
    except (KeyError, ValueError, OverflowError) as err:
        raise fail(f"bad element in dense literal of {dt.name}: {err}") from None


def _integers(tokens: list[str], dt: DType) -> np.ndarray:
    wide = np.uint64 if dt.is_unsigned_integer else np.int64
    if any(t.startswith(("0x", "-0x")) for t in tokens):
        values = np.array([int(t, 0) for t in tokens], dtype=wide)
    else:
        values = np.array(tokens, dtype=wide)
    return values.astype(dt.numpy)


def _floats(tokens: list[str], dt: DType) -> np.ndarray:
    hex_mask = [t.startswith("0x") for t in tokens]
    if not any(hex_mask):
        with np.errstate(over="ignore"):  # out-of-range decimals round to +-inf, as MLIR does
            return np.array(tokens, dtype=np.float64).astype(dt.numpy)
    out = np.empty(len(tokens), dt.numpy)
    bits_type = np.dtype(f"u{dt.itemsize}")
    for i, (token, is_hex) in enumerate(zip(tokens, hex_mask, strict=False)):
        if is_hex:
            out[i] = np.array(int(token, 16), bits_type).view(dt.numpy)
        else:
            with np.errstate(over="ignore"):
                out[i] = np.float64(token)
    return out
