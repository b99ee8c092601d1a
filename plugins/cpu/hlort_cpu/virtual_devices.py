"""How many cpu devices a client has: ``HLORT_CPU_DEVICES=N`` or the client option
``device_count`` (the option wins; the name is the interpreter backend's).

Every virtual device runs on the same host cores and memory, as XLA:CPU's
``--xla_force_host_platform_device_count`` devices do; each device has its own work-queue
thread, so an execution over N per-device argument lists runs the N programs concurrently and
their collectives meet in shared host memory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from hlort.errors import InvalidArgument

ENV = "HLORT_CPU_DEVICES"
OPTION = "device_count"
MAX_DEVICES = 1024


def device_count(options: Mapping[str, Any] | None = None) -> int:
    """The number of cpu devices the client options or the environment ask for (default 1)."""
    if options and options.get(OPTION) is not None:
        return _checked(options[OPTION], f"client option {OPTION}")
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return 1
    return _checked(raw, ENV)


def _checked(value: Any, where: str) -> int:
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = None
    if count is None or isinstance(value, bool) or not 1 <= count <= MAX_DEVICES:
        raise InvalidArgument(
            f"{where}={value!r} is not a device count; give an integer from 1 to {MAX_DEVICES} "
            f"(e.g. {ENV}=4)"
        )
    return count
