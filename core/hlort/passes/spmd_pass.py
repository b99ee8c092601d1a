"""The SPMD partitioner pass, without the partitioner: the default pipeline holds one in every
compile, and only a module with ``num_partitions > 1`` needs the rules, the resharding emitter
and the sharding parser (spmd_partitioner.py imports them; this module imports it on first use).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from hlort.ir.module import Module
from hlort.ir.sharding import SPMD_PARAMETERS_KEY as PARAMETERS_KEY
from hlort.passes.call_inlining import CallInliner
from hlort.passes.pass_base import Pass

if TYPE_CHECKING:
    from hlort.passes.spmd_partitioner import SpmdReport

REPORT_FILE = "spmd-report.txt"


class SpmdPartitioner(Pass):
    """Partition a module with ``num_partitions > 1`` (a no-op otherwise)."""

    name = "spmd-partitioner"

    def __init__(self) -> None:
        self.last_report: SpmdReport | None = None  # spmd_partitioner.SpmdReport

    def run(self, module: Module) -> bool:
        if int(module.config.get("num_partitions", 1)) <= 1 or PARAMETERS_KEY in module.attributes:
            return False
        CallInliner().run(module)
        from hlort.passes.spmd_partitioner import partition_module

        self.last_report = partition_module(module)
        return True


def write_spmd_report(passes, dump_dir: str) -> None:
    """``spmd-report.txt`` in the dump directory, when a partitioner in ``passes`` ran."""
    for p in passes:
        if isinstance(p, SpmdPartitioner) and p.last_report is not None:
            with open(os.path.join(dump_dir, REPORT_FILE), "w") as f:
                f.write(p.last_report.text())
