"""FusionPolicy: the knobs a backend turns to shape the kernels fusion makes for it.

A plugin passes one to ``run_default_pipeline(module, policy=...)``. The defaults suit a
backend that compiles every fusion to one loop nest (the CPU plugin): loop, input (reduce) and
multi-output fusion on, epilogue fusion after dot off (its dot is a library call).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field

from hlort.ir.computation import Computation
from hlort.lazy_dataclass import dataclass


@dataclass(frozen=True)
class FusionPolicy:
    """``loop_fusion``: elementwise ops with their broadcast/reshape/transpose/slice/iota/
    constant/convert producers become kLoop fusions.
    ``reduce_input_fusion``: elementwise producers fuse into reduce and reduce-window (kInput).
    ``epilogue_fusion``: elementwise consumers fuse after a dot or convolution (kOutput).
    ``multi_output_fusion``: fusions and reductions sharing an input or feeding one another in the
    same iteration space merge into one fusion with a tuple root.
    ``row_epilogue_fusion``: a loop over a row reduction's *input* shape that reads the reduction
    (softmax's divide after its max and sum) joins the reduction's fusion, so a row is read from
    cache, not memory, by every pass over it; only for backends that emit such fusions per row.
    ``duplicate_cheap_producers``: a producer with several users is copied into each of them when
    it is cheap (broadcast, iota, small constant, non-transcendental elementwise, reshape...).
    ``max_fused_instructions`` / ``max_operands`` / ``max_outputs``: size limits of one fusion.
    ``max_duplicated_constant_elements``: larger constants are not copied into several fusions.
    ``can_emit``: the backend's answer to "would you compile this fused computation as one
    kernel?"; when set, fusion never makes a reduction fusion or a multi-output merge it answers
    False for (the producer or the merge partner stays apart and compiles, or falls back, on its
    own). Not asked about loop fusions, which are what their ops are one by one. Not part of
    the repr: the executable cache keys it by name and source (hlort.runtime.pass_identity).
    """

    loop_fusion: bool = True
    reduce_input_fusion: bool = True
    epilogue_fusion: bool = False
    multi_output_fusion: bool = True
    row_epilogue_fusion: bool = False
    duplicate_cheap_producers: bool = True
    max_fused_instructions: int = 128
    max_operands: int = 32
    max_outputs: int = 8
    max_duplicated_constant_elements: int = 1024
    can_emit: Callable[[Computation], bool] | None = field(default=None, repr=False, compare=False)

    def emits(self, comp: Computation) -> bool:
        return self.can_emit is None or bool(self.can_emit(comp))
