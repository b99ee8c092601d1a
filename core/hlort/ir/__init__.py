"""The HLO intermediate representation."""

from hlort.ir.attributes import (  # noqa: F401
    ComparisonDirection,
    ComparisonType,
    ConvDimensionNumbers,
    DotDimensionNumbers,
    FftType,
    FusionKind,
    GatherDimensionNumbers,
    PadDim,
    Precision,
    RngAlgorithm,
    ScatterDimensionNumbers,
    SliceDim,
    Transpose,
    WindowDim,
)
from hlort.ir.computation import Computation  # noqa: F401
from hlort.ir.instruction import Instruction  # noqa: F401
from hlort.ir.module import Module  # noqa: F401
from hlort.ir.op_def import OpDef  # noqa: F401
from hlort.ir.opcodes import OP_DEFS, Opcode  # noqa: F401
from hlort.ir.shape_inference import infer_shape  # noqa: F401
from hlort.ir.verifier import verify_module  # noqa: F401
