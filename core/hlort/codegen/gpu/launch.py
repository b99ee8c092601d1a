"""Launch shapes chosen at compile time, and the thread numbering every schedule starts with."""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.llvm.llvm_types import I64


@dataclass(frozen=True)
class LaunchShape:
    blocks: int
    block: int  # threads per block (x only)
    shared_bytes: int = 0  # dynamic shared memory (the schedules use static shared memory)

    @property
    def threads(self) -> int:
        return self.blocks * self.block

    @staticmethod
    def for_elements(work: int, block: int, max_blocks: int) -> LaunchShape:
        """Enough blocks of ``block`` threads for ``work`` items, at most ``max_blocks``."""
        return LaunchShape(max(1, min(max_blocks, -(-work // block))), block)

    def grid3(self) -> tuple[int, int, int]:
        return (self.blocks, 1, 1)

    def block3(self) -> tuple[int, int, int]:
        return (self.block, 1, 1)


def grid_stride_start(target: GpuTarget, b: ir.IRBuilder, launch: LaunchShape) -> ir.Value:
    """blockIdx.x * blockDim.x + threadIdx.x as i64."""
    tid = b.zext(target.thread_index(b), I64)
    if launch.blocks == 1:
        return tid
    bid = b.zext(target.block_index(b), I64)
    return b.add(
        b.mul(bid, ir.Constant(I64, launch.block), flags=("nuw", "nsw")), tid, flags=("nuw", "nsw")
    )


__all__ = ["LaunchShape", "grid_stride_start"]
