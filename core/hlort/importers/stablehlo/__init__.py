"""StableHLO MLIR text (pretty and generic forms) -> hlort HLO module."""

from hlort.importers.stablehlo.checks import CheckSpec  # noqa: F401
from hlort.importers.stablehlo.convert_module import ImportResult  # noqa: F401
from hlort.importers.stablehlo.importer import import_stablehlo, parse_stablehlo  # noqa: F401
from hlort.importers.stablehlo.mlir_parser import parse_mlir  # noqa: F401
