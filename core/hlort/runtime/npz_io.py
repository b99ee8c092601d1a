"""Reading inputs from and writing outputs to ``.npz`` files, as ``hlort run`` does.

Inputs are ``arg0..argN-1`` and outputs ``out0..outM-1``. NPZ cannot carry bfloat16 or float8
(ml_dtypes types), so such arrays travel as unsigned integers of the same width holding the raw
bits: read ``uint16`` for a ``bf16`` parameter, write ``uint8`` for an ``f8e4m3fn`` result.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence

import numpy as np

from hlort.dtypes import DType
from hlort.errors import InvalidArgument, NotFound
from hlort.shape import ArrayShape


def needs_raw_bits(dtype: DType) -> bool:
    """True for element types NPZ cannot store (those NumPy gets from ml_dtypes)."""
    return dtype.numpy.type.__module__.split(".")[0] == "ml_dtypes"


def raw_bits_dtype(dtype: DType) -> np.dtype:
    return np.dtype(f"uint{dtype.bits}")


def to_storable(array: np.ndarray) -> np.ndarray:
    """``array``, or its raw bits as unsigned integers when NPZ cannot store its dtype."""
    if array.dtype.type.__module__.split(".")[0] == "ml_dtypes":
        return np.ascontiguousarray(array).view(np.dtype(f"uint{array.dtype.itemsize * 8}"))
    return array


def from_storable(array: np.ndarray, shape: ArrayShape, label: str) -> np.ndarray:
    """Check ``array`` against ``shape`` (accepting raw bits for ml_dtypes types)."""
    want = shape.dtype.numpy
    if needs_raw_bits(shape.dtype) and array.dtype == raw_bits_dtype(shape.dtype):
        array = np.ascontiguousarray(array).view(want)
    if array.shape != shape.dims or array.dtype != want:
        how = (
            f" (store {shape.dtype} as {raw_bits_dtype(shape.dtype)} raw bits)"
            if needs_raw_bits(shape.dtype)
            else ""
        )
        raise InvalidArgument(
            f"{label} must be {shape} (numpy {raw_bits_dtype(shape.dtype) if how else want}"
            f"{list(shape.dims)}){how}, got {array.dtype}{list(array.shape)}"
        )
    return array


def read_inputs(path: str | os.PathLike, shapes: Sequence[ArrayShape]) -> list[np.ndarray]:
    """``arg0..argN-1`` from ``path``, checked against the parameter shapes."""
    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise NotFound(f"no such file: {path}") from None
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise InvalidArgument(f"{path} is not a readable .npz file: {err}") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise InvalidArgument(f"{path} holds a single array; save inputs with np.savez(arg0=...)")
    with archive:
        names = set(archive.files)
        wanted = [f"arg{i}" for i in range(len(shapes))]
        missing = [n for n in wanted if n not in names]
        extra = sorted(names - set(wanted))
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if extra:
                parts.append(f"unexpected {', '.join(extra)}")
            raise InvalidArgument(
                f"{path}: {'; '.join(parts)}; the module takes {len(shapes)} argument(s) "
                f"named arg0..arg{len(shapes) - 1}" if shapes else
                f"{path}: {'; '.join(parts)}; the module takes no arguments"
            )
        out = []
        for name, shape in zip(wanted, shapes, strict=True):
            try:
                array = archive[name]
            except ValueError as err:  # object arrays need pickle
                raise InvalidArgument(f"{path}: {name} cannot be read: {err}") from None
            out.append(from_storable(array, shape, f"{path}: {name}"))
        return out


def write_outputs(path: str | os.PathLike, arrays: Sequence[np.ndarray]) -> None:
    """Save ``out0..outM-1`` to ``path`` (ml_dtypes arrays as raw bits)."""
    np.savez(path, **{f"out{i}": to_storable(np.asarray(a)) for i, a in enumerate(arrays)})
