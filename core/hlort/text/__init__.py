"""XLA HLO text: parse what XLA and JAX print, print in XLA's style, compare modules.

The names below load their module on first use: printing (fingerprints, on the warm-cache
path) never imports the parser or the comparison code.
"""

import importlib

_EXPORTS = {
    "module_difference": "equality",
    "modules_equal": "equality",
    "parse_module": "parser",
    "parse_shape": "parser",
    "print_computation": "printer",
    "print_instruction": "printer",
    "print_module": "printer",
}
__all__ = sorted(_EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hlort.text' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"hlort.text.{module}"), name)
    globals()[name] = value
    return value
