"""Interpreter: rng-bit-generator, bit-exact with XLA's CPU/GPU expansion (see ``prng.py``).

DEFAULT is Philox, the algorithm XLA's CPU and GPU compilers pass to RngBitGeneratorExpander.
Bits are drawn as unsigned integers of the result's width and reinterpreted as its element type.
"""

from __future__ import annotations

from hlort.interpreter import prng
from hlort.interpreter.registry import evaluates
from hlort.ir.attributes import RngAlgorithm
from hlort.ir.opcodes import Opcode


@evaluates(Opcode.RNG_BIT_GENERATOR)
def _rng_bit_generator(ev, instr, state):
    algorithm = instr.attrs.get("algorithm", RngAlgorithm.DEFAULT)
    bits_shape = instr.shape.elements[1]
    width = bits_shape.dtype.bits
    generate = prng.three_fry if algorithm is RngAlgorithm.THREE_FRY else prng.philox
    new_state, bits = generate(state, bits_shape.dims, width)
    return new_state, bits.view(bits_shape.dtype.numpy)
