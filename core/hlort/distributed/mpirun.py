"""The ``mpirun`` command line that starts N ranks of a Python program on this machine only.

Used by the tests and the benchmark, and shown in docs/distributed.md for people: every rank is
a process here (``--oversubscribe``: more ranks than cores is fine for tests), they talk through
shared memory (``pml ob1`` with ``btl self,sm``: no network transport is even loaded; UCX,
which would pick its own transports, is not used), unbound (``--bind-to
none``: ranks share the cores with everything else). Open MPI's launcher (PRRTE) insists on one
non-loopback interface for its own control listener even when every rank is local; with one
host nothing ever connects to it from outside.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from hlort.distributed.process_env import mpirun_path

LOCAL_OPTIONS = (
    "--oversubscribe",
    "--bind-to",
    "none",
    "--mca",
    "pml",
    "ob1",
    "--mca",
    "btl",
    "self,sm",
)


def mpirun_command(ranks: int, program: Sequence[str], *, python: str | None = None) -> list[str]:
    """``mpirun -n RANKS ... python PROGRAM...`` for this interpreter, on this machine."""
    command = [mpirun_path(), "-n", str(int(ranks)), *LOCAL_OPTIONS]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-run-as-root")  # containers and CI run as root
    return [*command, python or sys.executable, *program]


def mpirun_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for ``mpirun``: the Open MPI wheel's ``bin`` first on PATH."""
    env = dict(os.environ if base is None else base)
    scripts = os.path.dirname(sys.executable)
    env["PATH"] = scripts + os.pathsep + env.get("PATH", "")
    return env
