"""HLO text in and out, for serialized payloads and program loading.

Looks the functions up in :mod:`hlort.text` (its documented API) when they are used, so the
plugin layer does not depend on the parser at import time; UNIMPLEMENTED says what is missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from hlort.errors import Unimplemented
from hlort.shape import ArrayShape, Shape, TupleShape

if TYPE_CHECKING:
    from hlort.ir.module import Module


def _function(name: str, module_names: tuple[str, ...]):
    for module_name in module_names:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        fn = getattr(module, name, None)
        if fn is not None:
            return fn
    raise Unimplemented(f"hlort.text.{name} is not available in this installation of hlort")


def print_hlo(module: Module) -> str:
    """The module as XLA HLO text."""
    return _function("print_module", ("hlort.text", "hlort.text.printer"))(module)


def parse_hlo(text: str, source_name: str = "<text>") -> Module:
    """Parse (and verify) XLA HLO text; ParseError (INVALID_ARGUMENT) gives line and column."""
    return _function("parse_module", ("hlort.text", "hlort.text.parser"))(
        text, source_name=source_name
    )


def parse_printed_hlo(text: str, source_name: str = "<text>") -> Module:
    """Parse text that :func:`print_hlo` wrote: the printer spells every default layout, which
    the module it printed did not hold, so they are dropped again (a deserialized executable
    then describes itself exactly like the freshly compiled one)."""
    module = parse_hlo(text, source_name)
    for comp in module.computations:
        for instr in comp.instructions:
            instr.shape = without_default_layouts(instr.shape)
    return module


def without_default_layouts(shape: Shape) -> Shape:
    if isinstance(shape, ArrayShape):
        rank = len(shape.dims)
        if shape.layout is not None and shape.layout == tuple(range(rank - 1, -1, -1)):
            return ArrayShape(shape.dtype, shape.dims)
        return shape
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(without_default_layouts(e) for e in shape.elements))
    return shape
