"""Shape-polymorphic StableHLO programs: their signature, and their refinement to given shapes.

A program is polymorphic when its entry takes an argument with a ``?`` dimension (JAX's
``jax.export`` with symbolic dimensions, TensorFlow). :func:`refine_stablehlo` imports it for
concrete argument shapes (see shape_refinement.py) into an ordinary static module.

Dimension arguments: older JAX exports (and the testdata corpus) pass each dimension variable
as a leading scalar integer argument (``@main(%arg0: tensor<i64>, %arg1: tensor<?x4xf32>)``).
Those are bound as constants, not parameters, of the refined module; their values are given
(``dim_values``) or taken from the actual inputs: each dimension argument is tried with the
sizes the inputs' ``?`` dimensions have, and the assignment under which the program refines
(its shapes agree, its shape assertions hold) is the one used.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import numpy as np

from hlort.errors import HlortError, Internal, InvalidArgument, Unimplemented
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.convert_module import ImportResult, ModuleConverter
from hlort.importers.stablehlo.mlir_parser import parse_mlir
from hlort.importers.stablehlo.shape_refinement import conforms, is_static_type
from hlort.importers.stablehlo.types import to_shape
from hlort.lazy_dataclass import dataclass
from hlort.shape import ArrayShape, Shape

_MAX_ASSIGNMENTS = 64  # dimension-argument assignments tried before giving up
_DYNAMIC_TYPE = re.compile(r"tensor<(?:[0-9]+x)*\?")


@dataclass
class Signature:
    """The entry function's arguments, as a polymorphic program sees them."""

    entry: str
    arg_types: list
    dim_args: list[int]  # leading scalar integer arguments: JAX's dimension arguments

    @property
    def polymorphic(self) -> bool:
        return not all(is_static_type(t) for t in self.arg_types)

    @property
    def array_args(self) -> list[int]:
        return [i for i in range(len(self.arg_types)) if i not in self.dim_args]

    def describe(self) -> str:
        return ", ".join(str(self.arg_types[i]) for i in self.array_args)


@dataclass
class RefinedProgram:
    result: ImportResult
    dim_values: dict[int, int]  # the dimension arguments' values it was refined with


def maybe_polymorphic(text: str) -> bool:
    """Cheap pre-check: the text has a tensor type with a ``?`` dimension."""
    return _DYNAMIC_TYPE.search(text) is not None


def parse(text: str, source_name: str = "<text>") -> ast.MlirModule:
    try:
        return parse_mlir(text, source_name)
    except HlortError:
        raise
    except Exception as err:  # noqa: BLE001 - the importer's contract: only HlortError escapes
        raise Internal(f"{source_name}: importer bug: {type(err).__name__}: {err}") from err


def signature(mlir: ast.MlirModule, entry: str | None = None) -> Signature:
    func = ModuleConverter(mlir, "<signature>").choose_entry(entry)
    types = [t for _, t in func.args]
    dims: list[int] = []
    if not all(is_static_type(t) for t in types):
        for i, t in enumerate(types):
            if not _is_integer_scalar(t):
                break
            dims.append(i)
        if len(dims) == len(types):
            dims = []
    return Signature(func.name, types, dims)


def _is_integer_scalar(t) -> bool:
    if not (isinstance(t, ast.TensorType) and t.dims == ()):
        return False
    try:
        return to_shape(t).dtype.is_integer
    except HlortError:
        return False


def refine_stablehlo(
    mlir: ast.MlirModule | str,
    arg_shapes: Sequence[Shape],
    *,
    dim_values: Sequence[int] | None = None,
    source_name: str = "<text>",
    entry: str | None = None,
    collect_checks: bool = False,
) -> RefinedProgram:
    """Import ``mlir`` refined for ``arg_shapes`` (one per non-dimension argument, or one per
    argument when ``dim_values`` is None and the program has no dimension arguments)."""
    if isinstance(mlir, str):
        mlir = parse(mlir, source_name)
    sig = signature(mlir, entry)
    arrays = sig.array_args
    if len(arg_shapes) != len(arrays):
        raise InvalidArgument(
            f"{source_name}: @{sig.entry} takes {len(arrays)} array argument(s) "
            f"({sig.describe()}), got {len(arg_shapes)}"
        )
    shapes: list[Shape | None] = [None] * len(sig.arg_types)
    for i, shape in zip(arrays, arg_shapes, strict=True):
        if not conforms(sig.arg_types[i], shape):
            raise InvalidArgument(
                f"{source_name}: argument {arrays.index(i)} of @{sig.entry} is {shape}, which "
                f"does not conform to {sig.arg_types[i]} (same rank and element type, equal "
                f"static dims)"
            )
        shapes[i] = shape
    if dim_values is not None:
        if len(dim_values) != len(sig.dim_args):
            raise InvalidArgument(
                f"{source_name}: @{sig.entry} takes {len(sig.dim_args)} dimension argument(s), "
                f"got {len(dim_values)}"
            )
        assignments = [tuple(int(v) for v in dim_values)]
    else:
        assignments = _candidate_assignments(sig, arg_shapes)
    first_error: HlortError | None = None
    for values in assignments:
        constants = {i: np.asarray(v) for i, v in zip(sig.dim_args, values, strict=True)}
        try:
            conv = ModuleConverter(mlir, source_name, collect_checks, shapes, constants)
            result = conv.convert(sig.entry)
        except InvalidArgument as err:  # this assignment contradicts the shapes: try the next
            first_error = first_error or err
            continue
        except HlortError:
            raise
        except RecursionError:
            raise Internal(f"{source_name}: program nested too deeply to import") from None
        except Exception as err:  # noqa: BLE001 - the contract: only HlortError escapes
            raise Internal(f"{source_name}: importer bug: {type(err).__name__}: {err}") from err
        return RefinedProgram(result, dict(zip(sig.dim_args, values, strict=True)))
    assert first_error is not None
    if len(assignments) > 1:
        first_error.message += (
            f" (no value of the dimension argument(s) {sig.dim_args} taken from the input sizes "
            f"{sorted({v for a in assignments for v in a})} refines the program)"
        )
        first_error.args = (first_error.message,)
    raise first_error


def _candidate_assignments(sig: Signature, arg_shapes: Sequence[Shape]) -> list[tuple[int, ...]]:
    if not sig.dim_args:
        return [()]
    sizes: list[int] = []
    for i, shape in zip(sig.array_args, arg_shapes, strict=True):
        t = sig.arg_types[i]
        if isinstance(t, ast.TensorType) and isinstance(shape, ArrayShape):
            for declared, actual in zip(t.dims, shape.dims, strict=True):
                if declared < 0 and actual not in sizes:
                    sizes.append(actual)
    if not sizes:
        raise Unimplemented(
            "the program has dimension arguments, but no input has a '?' dimension to take "
            "their values from; pass them (dim_values)"
        )
    combos = itertools.product(sizes, repeat=len(sig.dim_args))
    return list(itertools.islice(combos, _MAX_ASSIGNMENTS))


def sample_shapes(sig: Signature, size: int) -> list[ArrayShape]:
    """The array arguments' shapes with every ``?`` dimension ``size`` (testdata smoke runs)."""
    out = []
    for i in sig.array_args:
        t = sig.arg_types[i]
        if isinstance(t, ast.TensorType):
            t = ast.TensorType(tuple(size if d < 0 else d for d in t.dims), t.element, t.encoding)
        out.append(to_shape(t))
    return out
