"""How many devices an hlort platform shows JAX.

- ``device_count`` among the client create options (JAX's ``jax_pjrt_client_create_options``,
  e.g. ``"device_count:4"``) wins, for the backends that take it (cpu, interpreter);
- else hlort's own settings: ``HLORT_CPU_DEVICES`` (cpu), ``HLORT_INTERPRETER_DEVICES``
  (interpreter, default 8); tpusim models 4 chips;
- else, for ``hlort_cpu`` only, JAX's ``jax_num_cpu_devices`` when set (>= 1), so a program
  written for JAX's CPU with N devices finds N hlort_cpu devices too.

All are read when JAX starts the platform's client (its first ``jax.devices(...)``), as JAX
reads ``jax_num_cpu_devices``. A count other than the shared hlort backend's gets a client of
its own.
"""

from __future__ import annotations

import os

from hlort.errors import InvalidArgument, Unimplemented

OPTION = "device_count"
CPU_ENV = "HLORT_CPU_DEVICES"


def wanted_count(backend: str, options: dict) -> int | None:
    """The count the options or JAX's settings ask for; None: the backend's own default."""
    raw = options.get(OPTION)
    if raw is not None:
        try:
            count = int(raw)
        except (TypeError, ValueError):
            count = 0
        if count < 1:
            raise InvalidArgument(
                f"client option {OPTION}={raw!r} is not a device count (an integer >= 1)"
            )
        return count
    if backend == "cpu" and not os.environ.get(CPU_ENV, "").strip():
        return _jax_cpu_devices()
    return None


def check_single_process(options: dict) -> None:
    """JAX passes ``num_nodes`` after ``jax.distributed.initialize``; the bridge's devices are
    one process's, so several processes are UNIMPLEMENTED (hlort's multi-host path is MPI)."""
    nodes = options.get("num_nodes", 1)
    if isinstance(nodes, int) and nodes > 1:
        raise Unimplemented(
            f"multi-process JAX (jax.distributed.initialize, {nodes} processes) is not "
            f"supported by hlort-jax: run one process with several devices, or hlort's own "
            f"multi-host runs (hlort.distributed, docs/distributed.md)"
        )


def _jax_cpu_devices() -> int | None:
    try:
        from jax._src import xla_bridge
    except ImportError:
        return None
    state = getattr(xla_bridge, "num_cpu_devices", None)
    value = getattr(state, "value", None)
    return value if isinstance(value, int) and value >= 1 else None


def backend_with(name: str, options: dict):
    """hlort's backend ``name`` (the shared one) or, for another count, a client of its own."""
    import hlort
    from hlort.plugin.registry import default_registry
    from hlort.runtime.selection import backend_for_client

    backend = hlort.backend(name)
    count = wanted_count(name, options)
    if count is None or count == len(backend.devices()):
        return backend
    record = default_registry().record(name)
    return backend_for_client(record.plugin.create_client({OPTION: count}))
