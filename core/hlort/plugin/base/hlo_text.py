"""HLO text in and out, for serialized payloads and program loading.

The text layer sits below the plugin layer; it is imported when first used, so importing a
plugin (discovery, probes) does not load the parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hlort.shape import ArrayShape, Shape, TupleShape

if TYPE_CHECKING:
    from hlort.ir.module import Module


def print_hlo(module: Module) -> str:
    """The module as XLA HLO text."""
    from hlort.text.printer import print_module

    return print_module(module)


def parse_hlo(text: str, source_name: str = "<text>") -> Module:
    """Parse (and verify) XLA HLO text; ParseError (INVALID_ARGUMENT) gives line and column."""
    from hlort.text.parser import parse_module

    return parse_module(text, source_name=source_name)


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
