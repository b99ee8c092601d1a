"""Executables of shape-polymorphic programs: refined and compiled per argument shape.

Like ``jax.jit`` retracing: ``hlort.compile(text)`` of a StableHLO program whose entry has ``?``
dimensions returns a :class:`PolymorphicExecutable`. Its first call with a given set of argument
shapes (and dtypes) refines the program for them (hlort.importers.stablehlo.polymorphic), then
compiles the static module as any other (verification, core passes, the backend, and the
persistent executable cache, keyed by the refined module's fingerprint, so another process
reuses it); later calls with the same shapes reuse that specialization from memory.

Dimension arguments (leading scalar integers of older JAX exports) are taken from the inputs:
call with the array arguments only, or with every argument (the given values are then used).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from hlort import dtypes
from hlort.errors import InvalidArgument
from hlort.importers.stablehlo import polymorphic
from hlort.plugin.options import CompileOptions
from hlort.runtime.buffer import Buffer
from hlort.shape import ArrayShape


def polymorphic_text(program: Any) -> str | None:
    """The StableHLO text of ``program`` when it is a polymorphic program, else None."""
    import os

    from hlort.runtime.program import (
        STABLEHLO,
        _looks_like_a_path,
        detect_format,
        read_program_file,
    )

    if isinstance(program, os.PathLike):
        text, fmt = read_program_file(program)
    elif isinstance(program, str) and not _looks_like_a_path(program):
        text = program
        fmt = detect_format(text) if polymorphic.maybe_polymorphic(text) else None
    else:
        return None
    if fmt != STABLEHLO or not polymorphic.maybe_polymorphic(text):
        return None
    sig = polymorphic.signature(polymorphic.parse(text))
    return text if sig.polymorphic else None


class PolymorphicExecutable:
    """A polymorphic program on one backend and device; one compiled specialization per
    distinct argument shapes. Thread-safe."""

    def __init__(
        self, text: str, backend, device, options: CompileOptions, compile_fn, name: str = "<text>"
    ):
        self.source_name = name
        self._compile = compile_fn  # runtime.compile.compile_on (passed in: it imports this module)
        self.mlir = polymorphic.parse(text, name)
        self.signature = polymorphic.signature(self.mlir)
        self.backend = backend
        self.device = device
        self.options = options
        self._specializations: dict[tuple, Any] = {}
        self._lock = threading.Lock()
        self.compile_count = 0  # specializations compiled (or loaded from the persistent cache)

    @property
    def name(self) -> str:
        return self.signature.entry

    @property
    def specializations(self) -> dict[tuple, Any]:
        """``{argument key: Executable}`` of the shapes seen so far."""
        return dict(self._specializations)

    def __repr__(self) -> str:
        return (
            f"PolymorphicExecutable(@{self.name}({self.signature.describe()}), "
            f"{len(self._specializations)} specialization(s))"
        )

    def __call__(self, *args: Any) -> Any:
        arrays, dim_values = self._split(args)
        exe = self.specialize([_shape_of(i, a) for i, a in enumerate(arrays)], dim_values)
        return exe(*arrays)

    def specialize(self, shapes: Sequence[ArrayShape], dim_values: Sequence[int] | None = None):
        """The executable for arguments of ``shapes`` (compiled on first use)."""
        key = (tuple((s.dtype.name, s.dims) for s in shapes), tuple(dim_values or ()))
        with self._lock:
            exe = self._specializations.get(key)
            if exe is not None:
                return exe
            refined = polymorphic.refine_stablehlo(
                self.mlir, list(shapes), dim_values=dim_values, source_name=self.source_name
            )
            exe = self._compile(self.backend, refined.result.module, self.device, self.options)
            self._specializations[key] = exe
            self.compile_count += 1
            return exe

    def _split(self, args: Sequence[Any]) -> tuple[list[Any], list[int] | None]:
        sig = self.signature
        n_all, n_arrays = len(sig.arg_types), len(sig.array_args)
        if len(args) == n_arrays:
            return list(args), None
        if len(args) == n_all and sig.dim_args:
            values = [int(np.asarray(args[i]).reshape(())) for i in sig.dim_args]
            return [args[i] for i in sig.array_args], values
        expected = f"{n_arrays}"
        if sig.dim_args:
            expected += f" (or {n_all} with its dimension arguments)"
        raise InvalidArgument(
            f"@{self.name} takes {expected} argument(s) ({sig.describe()}), got {len(args)}"
        )


def _shape_of(index: int, arg: Any) -> ArrayShape:
    if isinstance(arg, Buffer):
        return ArrayShape(dtypes.from_numpy(arg.dtype), tuple(arg.shape))
    array = np.asarray(arg)
    try:
        dtype = dtypes.from_numpy(array.dtype)
    except Exception:  # noqa: BLE001 - reported as the argument's problem
        raise InvalidArgument(
            f"argument {index}: numpy dtype {array.dtype} has no hlort element type"
        ) from None
    return ArrayShape(dtype, tuple(array.shape))
