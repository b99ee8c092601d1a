"""HLO text in and out, for serialized payloads and program loading.

Looks the functions up in :mod:`hlort.text` (its documented API) when they are used, so the
plugin layer does not depend on the parser at import time; UNIMPLEMENTED says what is missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from hlort.errors import Unimplemented

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
