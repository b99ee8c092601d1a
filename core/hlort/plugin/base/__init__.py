"""Reusable pieces for plugins: events, work queues, buffers, host transfers, serialization.

A plugin subclasses :class:`SimplePlugin`, :class:`SimpleClient`, :class:`SimpleExecutable` and
(for real device memory) :class:`SimpleDevice`; see :mod:`hlort.plugin.base.simple_client`.
"""

from hlort.plugin.base.buffer import SimpleBuffer  # noqa: F401
from hlort.plugin.base.events import (  # noqa: F401
    AsyncValue,
    all_ready,
    as_hlort_error,
    failed_value,
    ready_value,
)
from hlort.plugin.base.fallback_policy import (  # noqa: F401
    FallbackPolicy,
    FallbackRecord,
    FallbackReport,
    fallback_policy,
)
from hlort.plugin.base.host_buffer import can_alias, transfer_to_device  # noqa: F401
from hlort.plugin.base.launch_context import (  # noqa: F401
    CrossProcessTransport,
    LaunchContext,
    Rendezvous,
)
from hlort.plugin.base.memory_overlap import memory_owner, unshared_outputs  # noqa: F401
from hlort.plugin.base.serialization import (  # noqa: F401
    FORMAT_VERSION,
    MAGIC,
    FrameHeader,
    frame_executable,
    unframe_executable,
)
from hlort.plugin.base.simple_client import SimpleClient, SimplePlugin  # noqa: F401
from hlort.plugin.base.simple_device import SimpleDevice, SimpleMemorySpace  # noqa: F401
from hlort.plugin.base.simple_executable import (  # noqa: F401
    AsyncLaunch,
    Placement,
    SimpleExecutable,
    flatten_array_shapes,
)
from hlort.plugin.base.work_queue import WorkQueue  # noqa: F401
