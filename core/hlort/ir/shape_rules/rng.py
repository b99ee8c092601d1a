"""Shape rule: rng-bit-generator.

The state is u64[2] for Threefry and u64[2] or u64[3] for Philox (StableHLO's constraint; XLA's
expander reads a 2-word Philox state as (key, counter) with the key doubling as the counter's high
word). DEFAULT is Philox, as XLA's CPU and GPU compilers expand it. The result is
``(state shape, bits shape)``; the bits may be any 8/16/32/64-bit integer or float type (they are
raw bits of that width).
"""

from __future__ import annotations

from hlort import dtypes
from hlort.ir.attributes import RngAlgorithm
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.shape import ArrayShape, Shape, TupleShape

STATE_SIZES = {
    RngAlgorithm.THREE_FRY: (2,),
    RngAlgorithm.PHILOX: (2, 3),
    RngAlgorithm.DEFAULT: (2, 3),
}


@shape_rule(Opcode.RNG_BIT_GENERATOR)
def _rng_bit_generator(q: ShapeQuery) -> Shape:
    algorithm = q.attr("algorithm", RngAlgorithm.DEFAULT)
    if not isinstance(algorithm, RngAlgorithm):
        q.fail(f"algorithm must be an RngAlgorithm, got {algorithm!r}")
    state = q.array(0)
    sizes = STATE_SIZES[algorithm]
    if state.dtype != dtypes.U64 or state.rank != 1 or state.dims[0] not in sizes:
        want = " or ".join(f"u64[{n}]" for n in sizes)
        q.fail(f"the state of {algorithm.value} must be {want}, got {state}")
    declared = q.need_declared()
    if not isinstance(declared, TupleShape) or len(declared.elements) != 2:
        q.fail(f"the result must be a tuple (new state, bits), got {declared}")
    new_state, bits = declared.elements
    if new_state != state:
        q.fail(f"the result's new state {new_state} must have the operand's shape {state}")
    if not isinstance(bits, ArrayShape):
        q.fail(f"the generated bits must be an array, got {bits}")
    if bits.dtype.kind not in ("sint", "uint", "float") or bits.dtype.bits not in (8, 16, 32, 64):
        q.fail(
            f"the generated bits must be an 8/16/32/64-bit integer or float type, got {bits.dtype}"
        )
    return TupleShape((state, bits))
