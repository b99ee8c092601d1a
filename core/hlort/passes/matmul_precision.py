"""The ``matmul_precision`` compile option: what a dot or convolution at DEFAULT precision gets.

JAX leaves a contraction's precision at DEFAULT, and a backend may then compute it in less than
the element type (tpusim's matrix unit, like a TPU's, rounds f32 operands to bf16);
``jax_default_matmul_precision`` raises it. ``CompileOptions(matmul_precision="highest")`` does
the same for every backend: each dot and convolution whose operands ask for no more than
DEFAULT gets ``operand_precision`` ``high`` or ``highest``. It is written into the module, so
the optimized (and serialized) HLO says what was computed. It runs before the core pipeline,
also when that is switched off: it is the program's meaning, not an optimization.
"""

from __future__ import annotations

from hlort.ir.attributes import Precision
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.log import lazy_logger

LOGGER = lazy_logger("hlort.passes")
_LEVELS = {"default": Precision.DEFAULT, "high": Precision.HIGH, "highest": Precision.HIGHEST}
_CONTRACTIONS = tuple(op for op in Opcode if op.info.attr("operand_precision") is not None)


def apply_matmul_precision(module: Module, level: str | None) -> int:
    """Raise DEFAULT-precision contractions of ``module`` to ``level`` (a normalized
    ``CompileOptions.matmul_precision``); the number of instructions changed."""
    precision = _LEVELS[level] if level else Precision.DEFAULT
    if precision is Precision.DEFAULT:
        return 0
    changed = 0
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode not in _CONTRACTIONS:
                continue
            asked = instr.attrs.get("operand_precision") or ()
            if all(Precision(p) is Precision.DEFAULT for p in asked):
                instr.attrs["operand_precision"] = (precision, precision)
                changed += 1
    LOGGER.debug("matmul_precision=%s: %d contraction(s) of %s raised", level, changed, module.name)
    return changed
