"""``hlort run`` of a shape-polymorphic StableHLO program: refined to the shapes of ``--inputs``.

The program is refined (hlort.importers.stablehlo.polymorphic) for the dims of the arrays in
``--inputs`` (``arg0..``, one per array argument; dimension arguments are taken from them) and
their declared element types; without ``--inputs``, every ``?`` dimension is
:data:`SAMPLE_SIZE` and the inputs are random.
"""

from __future__ import annotations

import numpy as np

from hlort.errors import InvalidArgument, NotFound
from hlort.importers.stablehlo import polymorphic
from hlort.ir.module import Module
from hlort.runtime.program import STABLEHLO, read_program_file
from hlort.shape import ArrayShape

SAMPLE_SIZE = 3


def refine_for_run(path: str, inputs: str | None) -> tuple[Module, str] | None:
    """The module refined for the run, and its format; None when it is not polymorphic."""
    text, fmt = read_program_file(path)
    if fmt != STABLEHLO or not polymorphic.maybe_polymorphic(text):
        return None
    mlir = polymorphic.parse(text, path)
    sig = polymorphic.signature(mlir)
    if not sig.polymorphic:
        return None
    if inputs is None:
        shapes = polymorphic.sample_shapes(sig, SAMPLE_SIZE)
    else:
        declared = polymorphic.sample_shapes(sig, 1)  # the element types
        dims = _input_dims(inputs, len(declared))
        shapes = [ArrayShape(d.dtype, tuple(s)) for d, s in zip(declared, dims, strict=True)]
    refined = polymorphic.refine_stablehlo(mlir, shapes, source_name=path)
    return refined.result.module, fmt


def _input_dims(path: str, count: int) -> list[tuple[int, ...]]:
    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise NotFound(f"no such file: {path}") from None
    except (OSError, ValueError, EOFError) as err:
        raise InvalidArgument(f"{path} is not a readable .npz file ({err})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise InvalidArgument(f"{path} holds a single array; save inputs with np.savez(arg0=...)")
    with archive:
        missing = [f"arg{i}" for i in range(count) if f"arg{i}" not in archive.files]
        if missing:
            raise InvalidArgument(
                f"{path}: missing {', '.join(missing)}; the polymorphic program takes {count} "
                f"array argument(s) named arg0..arg{count - 1} (its '?' dims are refined to "
                f"their shapes)"
            )
        return [tuple(archive[f"arg{i}"].shape) for i in range(count)]
