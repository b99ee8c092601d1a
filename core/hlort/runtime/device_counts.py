"""How many copies of a program run: the module header's counts, unless the options say.

A module written for ``num_partitions=4`` (XLA's header, JAX's ``mhlo.num_partitions``) is
compiled for 4 devices when the compile options leave the counts at 1; options that ask for
other counts than the module's are INVALID_ARGUMENT, never silently one of the two.
"""

from __future__ import annotations

import dataclasses

from hlort.errors import InvalidArgument
from hlort.ir.module import Module
from hlort.plugin.options import CompileOptions


def device_counts(module: Module) -> tuple[int, int]:
    """(replicas, partitions) the module's header asks for."""
    return int(module.config.get("num_replicas", 1)), int(module.config.get("num_partitions", 1))


def with_module_counts(options: CompileOptions, module: Module) -> CompileOptions:
    replicas, partitions = device_counts(module)
    if (replicas, partitions) == (options.num_replicas, options.num_partitions):
        return options
    for field, wanted in (("num_replicas", replicas), ("num_partitions", partitions)):
        given = getattr(options, field)
        if given not in (1, wanted) and wanted != 1:
            raise InvalidArgument(
                f"compile options ask for {field}={given} but module {module.name} is written "
                f"for {wanted}; leave the option out or make them agree"
            )
    return dataclasses.replace(
        options,
        num_replicas=replicas if replicas != 1 else options.num_replicas,
        num_partitions=partitions if partitions != 1 else options.num_partitions,
    )
