"""Passes over HLO modules, the pipeline that runs them, and the analyses backends use."""

from hlort.passes.algebraic_simplifier import AlgebraicSimplifier  # noqa: F401
from hlort.passes.buffer_assignment import (  # noqa: F401
    BufferAssignment,
    BufferSlice,
    LogicalBuffer,
    assign_buffers,
)
from hlort.passes.call_inlining import CallInliner  # noqa: F401
from hlort.passes.constant_folding import ConstantFolding  # noqa: F401
from hlort.passes.cost_analysis import InstructionCost, ModuleCost, cost_analysis  # noqa: F401
from hlort.passes.cse import CommonSubexpressionElimination  # noqa: F401
from hlort.passes.dce import DeadCodeElimination  # noqa: F401
from hlort.passes.default_pipeline import (  # noqa: F401
    default_passes,
    module_statistics,
    run_default_pipeline,
    write_compile_summary,
)
from hlort.passes.fusion_policy import FusionPolicy  # noqa: F401
from hlort.passes.instruction_fusion import InstructionFusion  # noqa: F401
from hlort.passes.multi_output_fusion import MultiOutputFusion  # noqa: F401
from hlort.passes.pass_base import Pass  # noqa: F401
from hlort.passes.pass_options import PassOptions  # noqa: F401
from hlort.passes.pipeline import (  # noqa: F401
    FixedPoint,  # noqa: F401
    PassRecord,
    Pipeline,
    PipelineReport,
)
from hlort.passes.scheduling import Scheduler  # noqa: F401
from hlort.passes.tuple_simplification import TupleSimplifier  # noqa: F401
