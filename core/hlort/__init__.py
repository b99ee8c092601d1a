"""hlort: a pluggable hardware-backend SDK for machine learning programs.

The public API is re-exported here; see docs/ for the architecture and the plugin contract.
"""

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
from hlort.version import __version__  # noqa: F401
