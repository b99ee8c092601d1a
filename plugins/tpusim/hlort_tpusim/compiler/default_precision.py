"""The ``default_precision`` compile option: what a dot or convolution at DEFAULT precision gets.

Like a TPU, tpusim's matrix unit rounds f32 inputs to bf16 for a DEFAULT-precision contraction,
so JAX programs (which leave precision at DEFAULT) differ from XLA:CPU by ~1e-2. The option
``default_precision`` (``CompileOptions(target_options={"default_precision": "highest"})``, the
counterpart of ``jax_default_matmul_precision``) raises every contraction whose operands ask for
no more than DEFAULT to the level named: ``default`` (bf16, one pass), ``high`` (bf16x3) or
``highest`` (bf16x6, f32-accurate); JAX's spellings ``bfloat16``, ``tensorfloat32`` and
``float32`` mean the same. The level is written into the module's ``operand_precision``, so the
serialized HLO carries it and re-deriving the program from the blob needs no option.
"""

from __future__ import annotations

from hlort.errors import InvalidArgument
from hlort.ir.attributes import Precision
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode

OPTION = "default_precision"
_LEVELS = {
    "default": Precision.DEFAULT,
    "bfloat16": Precision.DEFAULT,
    "high": Precision.HIGH,
    "tensorfloat32": Precision.HIGH,
    "highest": Precision.HIGHEST,
    "float32": Precision.HIGHEST,
}
# the ops with an operand_precision attribute in the op table (dot, convolution)
_CONTRACTIONS = tuple(op for op in Opcode if op.info.attr("operand_precision") is not None)


def level_of(value) -> Precision:
    """The Precision an option value names; INVALID_ARGUMENT naming the choices otherwise."""
    level = _LEVELS.get(str(value).strip().lower()) if value is not None else Precision.DEFAULT
    if level is None:
        raise InvalidArgument(
            f"tpusim compile option {OPTION}={value!r} is not one of {', '.join(sorted(_LEVELS))}"
        )
    return level


def apply_default_precision(module: Module, value) -> None:
    """Raise DEFAULT-precision contractions of ``module`` (every computation) to ``value``."""
    level = level_of(value)
    if level is Precision.DEFAULT:
        return
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode not in _CONTRACTIONS:
                continue
            asked = instr.attrs.get("operand_precision") or ()
            if all(p is Precision.DEFAULT for p in asked):
                instr.attrs["operand_precision"] = (level, level)
