"""TemplateClient: the started backend. It owns the devices and says which executable class
compiles programs; :class:`~hlort.plugin.base.SimpleClient` provides device lookup, compile,
deserialize and ``buffer_from_host`` with PJRT's four host-buffer semantics.

Client options (``plugin.create_client({"device_count": 4})``): ``device_count`` (default 2)
and ``arena_bytes`` per device (default 256 MiB, or ``HLORT_TEMPLATE_ARENA_BYTES``).
"""

from __future__ import annotations

import os

from hlort.errors import InvalidArgument
from hlort.plugin.base import SimpleClient
from hlort_template.device import TemplateDevice
from hlort_template.executable import TemplateExecutable

DEFAULT_DEVICE_COUNT = 2
DEFAULT_ARENA_BYTES = 256 << 20


class TemplateClient(SimpleClient):
    executable_class = TemplateExecutable

    def create_devices(self) -> list[TemplateDevice]:
        count = _as_int(
            self.client_options.get("device_count", DEFAULT_DEVICE_COUNT),
            "client option device_count",
        )
        if "arena_bytes" in self.client_options:
            arena_bytes = _as_int(self.client_options["arena_bytes"], "client option arena_bytes")
        else:
            env = os.environ.get("HLORT_TEMPLATE_ARENA_BYTES")
            arena_bytes = (
                DEFAULT_ARENA_BYTES if env is None else _as_int(env, "HLORT_TEMPLATE_ARENA_BYTES")
            )
        if count < 1 or arena_bytes < 0:
            raise InvalidArgument(
                f"device_count={count} must be >= 1 and arena_bytes={arena_bytes} >= 0"
            )
        return [TemplateDevice(self, i, arena_bytes) for i in range(count)]

    def close(self) -> None:
        """The work queues finish what they hold (launches waiting on the streams), then the
        compute streams."""
        super().close()
        for device in self.devices():
            device.stream.close()


def _as_int(value: object, what: str) -> int:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise InvalidArgument(f"{what}={value!r} is not an integer") from None
