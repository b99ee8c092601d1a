"""rng-bit-generator as one GPU kernel (rng_schedule.py: the core's Threefry / Philox blocks,
one small block of counters per thread iteration), bit for bit with the interpreter on the host
simulator: every conformance case (each algorithm, every output width), shapes that split into
halves oddly, several blocks per thread, Philox's 128-bit counter carrying into its high word,
a scalar output and an empty one."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, simulated_program

from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CASES = [c for c in all_cases() if c.op == "rng-bit-generator"]


def _check(module, args):
    expected = flatten_value(evaluate(module, args))
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    assert {k.schedule for k in program.kernels} == {"rng"}
    got = HostSimRunner(program).run(args)
    for g, e in zip(got, expected, strict=True):
        assert g.tobytes() == np.asarray(e).astype(g.dtype).tobytes()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_case(case):
    shapes = [p.shape for p in case.module.entry.parameters]
    _check(case.module, unflatten(shapes, case.inputs()))


def _rng_text(algorithm, state, bits):
    return f"""HloModule r
ENTRY main {{
  s = u64[{state}] parameter(0)
  ROOT r = (u64[{state}], {bits}) rng-bit-generator(s), algorithm={algorithm}
}}
"""


@pytest.mark.parametrize("algorithm", ["rng_three_fry", "rng_philox"])
@pytest.mark.parametrize("bits", ["u32[7,5]", "u32[3,9,4]", "u8[999]", "u64[5,3]", "u32[]"])
def test_shapes_and_widths(algorithm, bits):
    state = 2 if algorithm == "rng_three_fry" else 3
    seed = np.array([0x0123456789ABCDEF, 41, 7][:state], np.uint64)
    _check(parse_module(_rng_text(algorithm, state, bits)), [seed])


def test_philox_counter_carries_into_its_high_word():
    seed = np.array([5, 2**64 - 3, 9], np.uint64)  # the low counter word overflows
    _check(parse_module(_rng_text("rng_philox", 3, "u32[4096]")), [seed])


def test_an_empty_output_still_advances_nothing_and_keeps_the_key():
    seed = np.array([11, 12], np.uint64)
    _check(parse_module(_rng_text("rng_three_fry", 2, "u32[0,4]")), [seed])
