"""Multi-process runs on MPI: the global device list and collectives that cross processes.

``initialize()`` joins the processes started by ``mpirun``; see docs/distributed.md. mpi4py is
imported by ``initialize`` (and the transport), never by ``import hlort.distributed``.
"""

from hlort.distributed.collectives import (  # noqa: F401
    all_gather,
    all_reduce,
    all_to_all,
    collective_permute,
)
from hlort.distributed.executable import DistributedExecutable, compile  # noqa: F401
from hlort.distributed.global_devices import GlobalDevice, GlobalDeviceTable  # noqa: F401
from hlort.distributed.initialize import (  # noqa: F401
    DistributedRun,
    addressable_devices,
    current,
    device,
    devices,
    initialize,
    is_initialized,
    local_device,
    process_count,
    process_index,
)
from hlort.distributed.process_env import mpi_available  # noqa: F401
from hlort.distributed.transport import MpiTransport, collective_timeout_s  # noqa: F401
