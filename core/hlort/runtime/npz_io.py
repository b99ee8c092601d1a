"""Reading inputs from and writing outputs to ``.npz`` files, as ``hlort run`` does.

Inputs are ``arg0..argN-1`` and outputs ``out0..outM-1``. NPZ cannot carry bfloat16 or float8
(ml_dtypes types), so such arrays travel as unsigned integers of the same width holding the raw
bits: read ``uint16`` for a ``bf16`` parameter, write ``uint8`` for an ``f8e4m3fn`` result. s4/u4
travel as ``uint8`` holding the 4 bits in the low nibble (0..15; s4 -1 is 15), as in memory.
(A bfloat16 array given to ``np.savez`` as is comes back as void ``|V2``, the same bits: accepted.)
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hlort.dtypes import DType
from hlort.errors import InvalidArgument, NotFound
from hlort.shape import ArrayShape


def needs_raw_bits(dtype: DType) -> bool:
    """True for element types NPZ cannot store (those NumPy gets from ml_dtypes)."""
    return dtype.numpy.type.__module__.split(".")[0] == "ml_dtypes"


def raw_bits_dtype(dtype: DType) -> np.dtype:
    return np.dtype(f"uint{dtype.itemsize * 8}")


def to_storable(array: np.ndarray) -> np.ndarray:
    """``array``, or its raw bits as unsigned integers when NPZ cannot store its dtype."""
    if array.dtype.type.__module__.split(".")[0] == "ml_dtypes":
        # order="C", not np.ascontiguousarray: that one turns a scalar (0-d) into shape (1,)
        bits = np.dtype(f"uint{array.dtype.itemsize * 8}")
        return np.asarray(array, order="C").view(bits)
    return array


def _is_raw_bits(stored: np.dtype, want: np.dtype) -> bool:
    """Unsigned integers of the width, or the void type ``np.savez`` writes for an ml_dtypes
    array saved as is (``|V2`` for bf16): both hold exactly the raw bits."""
    if (stored.kind == "u" and stored.isnative) or (stored.kind == "V" and stored.fields is None):
        return stored.itemsize == want.itemsize
    return False


def from_storable(array: np.ndarray, shape: ArrayShape, label: str) -> np.ndarray:
    """Check ``array`` against ``shape`` (accepting raw bits for ml_dtypes types)."""
    want = shape.dtype.numpy
    given = array.dtype
    if needs_raw_bits(shape.dtype) and _is_raw_bits(array.dtype, want):
        if shape.dtype.is_sub_byte_integer and np.any(np.asarray(array).view(np.uint8) > 15):
            raise InvalidArgument(
                f"{label} holds {shape.dtype} raw bits above 15: store each element's 4 bits "
                f"in the low nibble of a uint8 (s4 -1 is 15)"
            )
        array = np.asarray(array, order="C").view(want)  # keeps 0-d arrays 0-d
    if array.shape != shape.dims or array.dtype != want:
        how = (
            f" (store {shape.dtype} as {raw_bits_dtype(shape.dtype)} raw bits)"
            if needs_raw_bits(shape.dtype)
            else ""
        )
        raise InvalidArgument(
            f"{label} must be {shape} (numpy {raw_bits_dtype(shape.dtype) if how else want}"
            f"{list(shape.dims)}){how}, got {given}{list(array.shape)}"
        )
    return array


def read_inputs(path: str | os.PathLike, shapes: Sequence[ArrayShape]) -> list[np.ndarray]:
    """``arg0..argN-1`` from ``path``, checked against the parameter shapes."""
    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise NotFound(f"no such file: {path}") from None
    except IsADirectoryError:
        raise InvalidArgument(f"{path} is a directory, not an .npz file") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        # np.load takes anything that is neither a zip nor a .npy file for a pickle
        what = "neither an .npz (zip) nor an .npy file" if "pickled" in str(err) else str(err)
        raise InvalidArgument(
            f"{path} is not a readable .npz file ({what}); write inputs with "
            f"np.savez(path, arg0=..., arg1=...)"
        ) from None
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
                f"named arg0..arg{len(shapes) - 1}"
                if shapes
                else f"{path}: {'; '.join(parts)}; the module takes no arguments"
            )
        out = []
        for name, shape in zip(wanted, shapes, strict=True):
            try:
                array = archive[name]
            except ValueError as err:  # object arrays need pickle; float8 saved as is
                how = (
                    f"; store {shape.dtype} as {raw_bits_dtype(shape.dtype)} raw bits "
                    f"(x.view(np.{raw_bits_dtype(shape.dtype)}))"
                    if needs_raw_bits(shape.dtype)
                    else ""
                )
                raise InvalidArgument(f"{path}: {name} cannot be read: {err}{how}") from None
            out.append(from_storable(array, shape, f"{path}: {name}"))
        return out


def check_output_path(path: str | os.PathLike) -> None:
    """INVALID_ARGUMENT unless ``path`` can be an output file (checked before any work)."""
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise InvalidArgument(f"output file {path} is a directory; give a file name (OUT.npz)")
    if not parent.is_dir():
        raise InvalidArgument(
            f"output file {path}: directory {parent} does not exist; create "
            f"it first or write elsewhere"
        )


def write_outputs(path: str | os.PathLike, arrays: Sequence[np.ndarray]) -> None:
    """Save ``out0..outM-1`` to ``path`` (ml_dtypes arrays as raw bits)."""
    check_output_path(path)
    named = {f"out{i}": to_storable(np.asarray(a)) for i, a in enumerate(arrays)}
    try:
        with open(path, "wb") as f:  # a file object: np.savez would append .npz to a name
            np.savez(f, **named)
    except OSError as err:
        raise InvalidArgument(f"cannot write {path}: {err.strerror or err}") from None
