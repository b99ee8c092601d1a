"""hlort: a pluggable hardware-backend SDK for machine learning programs.

The public API is re-exported here; see docs/ for the architecture and the plugin contract.
Names are loaded on first use (PEP 562 ``__getattr__``): ``import hlort`` costs a few
milliseconds, and NumPy, ml_dtypes and the runtime are imported only when a name that needs them
is touched. Every pytest run in an environment with hlort imports this package (the pytest11
entry point), and so does ``hlort --help``; neither should pay for the whole SDK.
"""

from __future__ import annotations

import importlib
import importlib.util

from hlort.deferred_registrations import defer
from hlort.version import __version__  # noqa: F401

# the custom-call targets hlort ships: registered on the registry's first read, not at import
defer("custom_calls", lambda: importlib.import_module("hlort.interpreter.custom_call_targets"))

# public name -> (the module defining it, attribute); attribute None re-exports the module itself.
# Defining modules, not packages: a package's attribute can be rebound by importing a submodule
# of the same name (hlort.runtime.compile, the module, would shadow hlort.runtime's compile).
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "dtypes": ("hlort.dtypes", None),
    "shape": ("hlort.shape", None),
    "Builder": ("hlort.builder", "Builder"),
    "ErrorCode": ("hlort.errors", "ErrorCode"),
    "HlortError": ("hlort.errors", "HlortError"),
    "evaluate": ("hlort.interpreter.evaluator", "evaluate"),
    "Computation": ("hlort.ir.computation", "Computation"),
    "Instruction": ("hlort.ir.instruction", "Instruction"),
    "Module": ("hlort.ir.module", "Module"),
    "Opcode": ("hlort.ir.opcodes", "Opcode"),
    "verify_module": ("hlort.ir.verifier", "verify_module"),
    "CompileOptions": ("hlort.plugin.options", "CompileOptions"),
    "ExecuteOptions": ("hlort.plugin.options", "ExecuteOptions"),
    "block_until_ready": ("hlort.runtime.buffer", "block_until_ready"),
    "backend": ("hlort.runtime.selection", "backend"),
    "backend_errors": ("hlort.runtime.selection", "backend_errors"),
    "backends": ("hlort.runtime.selection", "backends"),
    "compile": ("hlort.runtime.selection", "compile"),
    "default_backend": ("hlort.runtime.selection", "default_backend"),
    "device_put": ("hlort.runtime.selection", "device_put"),
    "devices": ("hlort.runtime.selection", "devices"),
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str):
    """Load a public name on first use and cache it in the module's namespace."""
    try:
        module_name, attribute = _EXPORTS[name]
    except KeyError:  # a subpackage (hlort.runtime, hlort.ir...), as an eager import made them
        if name.startswith("_") or importlib.util.find_spec(f"hlort.{name}") is None:
            raise AttributeError(f"module 'hlort' has no attribute {name!r}") from None
        module_name, attribute = f"hlort.{name}", None
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, imported eagerly
    from hlort import dtypes, shape  # noqa: F401
    from hlort.builder import Builder  # noqa: F401
    from hlort.errors import ErrorCode, HlortError  # noqa: F401
    from hlort.interpreter import evaluate  # noqa: F401
    from hlort.ir import Computation, Instruction, Module, Opcode, verify_module  # noqa: F401
    from hlort.plugin.options import CompileOptions, ExecuteOptions  # noqa: F401
    from hlort.runtime import (  # noqa: F401
        backend,
        backend_errors,
        backends,
        block_until_ready,
        compile,
        default_backend,
        device_put,
        devices,
    )
