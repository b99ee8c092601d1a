"""Which process this is: the launcher's environment, and mpi4py imported only when asked for.

``mpirun`` (Open MPI) sets ``OMPI_COMM_WORLD_RANK``/``_SIZE``/``_LOCAL_RANK``; PMIx and PMI
launchers (``srun``, MPICH's hydra) set ``PMIX_RANK`` or ``PMI_RANK``/``PMI_SIZE``. These tell
``hlort.distributed`` that it runs under a launcher before MPI is touched, so a plain
``python script.py`` is a one-process run without starting MPI at all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hlort.errors import Unavailable

_RANK = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK")
_SIZE = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE")
_LOCAL_RANK = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK")

INSTALL_HINT = (
    "install the MPI extra (pip install 'hlort[mpi]': mpi4py and the Open MPI wheel) and start "
    "one process per rank with `mpirun -n N python ...`"
)


@dataclass(frozen=True)
class LauncherInfo:
    """What the launcher said about this process (None fields: it did not say)."""

    rank: int
    size: int | None
    local_rank: int | None
    variable: str  # the variable the rank came from, for messages


def _first(names: tuple[str, ...], environ) -> tuple[str, int] | None:
    for name in names:
        value = environ.get(name)
        if value is not None and value.strip().lstrip("-").isdigit():
            return name, int(value)
    return None


def launcher_info(environ=None) -> LauncherInfo | None:
    """The rank the launcher gave this process, or None when no MPI launcher started it."""
    environ = os.environ if environ is None else environ
    rank = _first(_RANK, environ)
    if rank is None:
        return None
    size = _first(_SIZE, environ)
    local = _first(_LOCAL_RANK, environ)
    return LauncherInfo(
        rank=rank[1],
        size=size[1] if size else None,
        local_rank=local[1] if local else None,
        variable=rank[0],
    )


def import_mpi():
    """``mpi4py.MPI``, initialized with MPI_THREAD_MULTIPLE; UNAVAILABLE with the fix if absent."""
    try:
        import mpi4py
    except ImportError:
        raise Unavailable(
            f"hlort.distributed needs mpi4py, which is not installed: {INSTALL_HINT}"
        ) from None
    mpi4py.rc.thread_level = "multiple"  # device threads of one launch exchange concurrently
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError) as err:
        raise Unavailable(
            f"mpi4py is installed but its MPI library does not load ({err}): {INSTALL_HINT}"
        ) from None
    return MPI


def mpi_available() -> str | None:
    """None when mpi4py and an ``mpirun`` are installed; else the one-line reason they are not."""
    import importlib.util
    import shutil
    import sys

    if importlib.util.find_spec("mpi4py") is None:
        return f"mpi4py is not installed ({INSTALL_HINT})"
    scripts = os.path.dirname(sys.executable)
    if not (os.path.exists(os.path.join(scripts, "mpirun")) or shutil.which("mpirun")):
        return f"no mpirun on PATH or beside {sys.executable} ({INSTALL_HINT})"
    return None


def mpirun_path() -> str:
    """The ``mpirun`` beside this interpreter (the Open MPI wheel's), else the one on PATH."""
    import shutil
    import sys

    beside = os.path.join(os.path.dirname(sys.executable), "mpirun")
    if os.path.exists(beside):
        return beside
    found = shutil.which("mpirun")
    if found is None:
        raise Unavailable(f"no mpirun found: {INSTALL_HINT}")
    return found
