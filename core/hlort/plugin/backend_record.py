"""What the registry knows about one backend: its status and its record (``hlort devices``)."""

from __future__ import annotations

import enum

from hlort.errors import HlortError
from hlort.lazy_dataclass import dataclass
from hlort.plugin.api import Client, Plugin
from hlort.plugin.bounded_call import BoundedCall


class BackendStatus(enum.Enum):
    NOT_STARTED = "not started"  # usable; no client yet
    OK = "ok"  # client running
    UNAVAILABLE = "unavailable"  # probe said no
    FAILED = "failed"  # import, hook or client creation raised
    REJECTED = "rejected"  # incompatible API version or malformed plugin


BROKEN = (BackendStatus.UNAVAILABLE, BackendStatus.FAILED, BackendStatus.REJECTED)


@dataclass
class BackendRecord:
    """Everything known about one backend, working or not (what ``hlort devices`` prints)."""

    name: str
    source: str
    status: BackendStatus
    plugin: Plugin | None = None
    priority: int = 0
    message: str = ""
    fix: str = ""
    detail: str = ""  # a traceback, for --debug
    client: Client | None = None
    pending: BoundedCall | None = None  # the probe, until its answer is needed
    starting: BoundedCall | None = None  # create_client() under way

    @property
    def usable(self) -> bool:
        return self.status in (BackendStatus.OK, BackendStatus.NOT_STARTED)

    def reason(self) -> str:
        return f"{self.message}; fix: {self.fix}" if self.fix else self.message


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, HlortError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
