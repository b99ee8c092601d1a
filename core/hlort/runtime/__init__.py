"""User-facing runtime: backends, devices, buffers, executables, and the compile entry point."""

from hlort.runtime.buffer import Buffer, block_until_ready  # noqa: F401
from hlort.runtime.client import Backend  # noqa: F401
from hlort.runtime.device import Device  # noqa: F401
from hlort.runtime.executable import Executable  # noqa: F401
from hlort.runtime.program import detect_format, load_program  # noqa: F401
from hlort.runtime.selection import (  # noqa: F401
    backend,
    backend_errors,
    backends,
    compile,
    default_backend,
    device_put,
    devices,
    resolve_device,
)
