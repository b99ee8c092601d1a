"""The StableHLO importer's entry points: text in, HLO module out.

Parsing and conversion errors are :class:`~hlort.errors.HlortError`: ParseError (syntax, with line
and column), UNIMPLEMENTED (a feature hlort does not support, named with its line), or
INVALID_ARGUMENT / INTERNAL naming the op and line. No other exception escapes.
"""

from __future__ import annotations

from hlort.errors import HlortError, Internal
from hlort.importers.stablehlo.convert_module import ImportResult, ModuleConverter
from hlort.importers.stablehlo.mlir_parser import parse_mlir
from hlort.ir.module import Module


def import_stablehlo(
    text: str,
    source_name: str = "<text>",
    *,
    entry: str | None = None,
    collect_checks: bool = False,
) -> ImportResult:
    """Parse and convert StableHLO text. ``entry`` picks the function to run (default: @main,
    else the one no other function calls). With ``collect_checks`` the StableHLO test
    assertions (``check.*`` ops, ``@check.*`` custom calls) of the entry become extra outputs
    described by ``result.checks``; otherwise they are dropped."""
    try:
        mlir = parse_mlir(text, source_name)
        return ModuleConverter(mlir, source_name, collect_checks).convert(entry)
    except HlortError:
        raise
    except RecursionError:
        raise Internal(f"{source_name}: program nested too deeply to import") from None
    except Exception as err:  # noqa: BLE001 - the contract: only HlortError escapes
        raise Internal(f"{source_name}: importer bug: {type(err).__name__}: {err}") from err


def parse_stablehlo(text: str, source_name: str = "<text>") -> Module:
    """StableHLO MLIR text -> HLO module (entry @main or the only uncalled function)."""
    return import_stablehlo(text, source_name).module
