"""The top-level API: ``hlort.devices``, ``backend``, ``compile``, ``device_put``...

These use the process-wide registry (:func:`hlort.plugin.registry.default_registry`), so
discovery and client start-up happen on first use, never at ``import hlort``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from hlort.errors import InvalidArgument
from hlort.ir.module import Module
from hlort.plugin import api
from hlort.plugin.options import CompileOptions
from hlort.plugin.registry import default_registry, parse_device_string
from hlort.runtime.buffer import Buffer
from hlort.runtime.client import Backend
from hlort.runtime.device import Device
from hlort.runtime.executable import Executable

# by id: a plugin's Client may define __eq__ or be unhashable; each Backend keeps its client
# alive, and the `is` check below would catch a reused id anyway
_wrappers: dict[int, Backend] = {}
_lock = threading.Lock()


def backend_for_client(client: api.Client) -> Backend:
    """The one Backend wrapper of a started plugin client."""
    with _lock:
        backend = _wrappers.get(id(client))
        if backend is None or backend.client is not client:
            record = default_registry().record(client.platform_name)  # waits for no other
            backend = Backend(client, record.plugin if record is not None else None)
            _wrappers[id(client)] = backend
        return backend


def backends() -> dict[str, Backend]:
    """Every backend that starts, most preferred first (with HLORT_PLATFORMS: all listed)."""
    return {name: backend_for_client(c) for name, c in default_registry().clients().items()}


def backend(name: str | None = None) -> Backend:
    """The backend of platform ``name`` (started on first use), or the default one."""
    if name is None:
        return default_backend()
    return backend_for_client(default_registry().client(name))


def default_backend() -> Backend:
    """The first of HLORT_PLATFORMS, else the highest-priority backend that starts."""
    return backend_for_client(default_registry().default_client())


def backend_errors() -> dict[str, str]:
    """``{name: reason}`` for every backend that failed to load, was rejected or is unavailable."""
    return default_registry().errors()


def devices(platform: str | None = None) -> list[Device]:
    """Addressable devices of ``platform`` (default: the default backend's)."""
    return backend(platform).devices()


def resolve_device(device: Device | str | None) -> Device:
    """A Device from a Device, ``"platform"``, ``"platform:N"`` or None (the default device)."""
    if device is None:
        return default_backend().device()
    if isinstance(device, Device):
        return device
    if isinstance(device, str):
        name, index = parse_device_string(device)
        return backend(name).device(index)
    raise InvalidArgument(
        f"expected a device (hlort.Device or 'platform:N'), got {type(device).__name__}"
    )


def device_put(array: Any, device: Device | str | None = None) -> Buffer:
    """Copy ``array`` to ``device``; the caller may reuse the array as soon as this returns."""
    target = resolve_device(device)
    return target.backend.device_put(array, target)


def compile(
    program: Module | str | bytes | os.PathLike,
    device: Device | str | None = None,
    options: CompileOptions | Mapping[str, Any] | None = None,
) -> Executable:
    """Compile an HloModule, HLO text or StableHLO text (or a Path to one) for ``device``.

    Verifies, runs the core pass pipeline when present, then the backend's compile. The result
    is called with NumPy arrays (returns arrays) or buffers (returns buffers).
    """
    target = resolve_device(device)
    return target.backend.compile(program, target, options)
