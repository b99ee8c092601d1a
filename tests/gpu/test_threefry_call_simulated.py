"""JAX's threefry custom call (``cu_threefry2x32``, ``hip_threefry2x32`` and their ``_ffi``
spellings) as one elementwise GPU kernel (rng_schedule.py: the core's ``rng_bits`` rounds), on
the host simulator: bit for bit with the interpreter (``hlort.interpreter.prng``) on random
words, the all-zero and all-ones words, a scalar, an empty shape, more elements than threads;
Random123's known-answer vectors for Threefry-2x32-20 (the ones JAX's own tests use) as an
independent check; the call between other kernels of a program (its operands broadcast as
JAX's lowering does); a re-registered (user's) target stays a counted host fallback."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, simulated_program

from hlort.interpreter.evaluator import evaluate
from hlort.ir.custom_calls import register_custom_call
from hlort.plugin.base.value_flattening import flatten_value
from hlort.text.parser import parse_module

TARGETS = ["cu_threefry2x32", "cu_threefry2x32_ffi", "hip_threefry2x32", "hip_threefry2x32_ffi"]


def _call_text(target: str, dims: str) -> str:
    shape = f"u32[{dims}]"
    return f"""HloModule t
ENTRY main {{
  k0 = {shape} parameter(0)
  k1 = {shape} parameter(1)
  c0 = {shape} parameter(2)
  c1 = {shape} parameter(3)
  ROOT r = ({shape}, {shape}) custom-call(k0, k1, c0, c1), custom_call_target="{target}"
}}
"""


def _run(text: str, args: list[np.ndarray], schedules=("threefry",)) -> list[np.ndarray]:
    module = parse_module(text)
    expected = flatten_value(evaluate(module, args))
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    assert "threefry" in {k.schedule for k in program.kernels} <= {"threefry", *schedules}
    got = HostSimRunner(program).run(args)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.uint32 and g.tobytes() == np.asarray(e).tobytes()
    return got


def _words(rng, dims) -> list[np.ndarray]:
    return [rng.integers(0, 2**32, dims, dtype=np.uint64).astype(np.uint32) for _ in range(4)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dims", [(7, 5), (3, 9, 4), (), (0, 3), (1500,)])
def test_every_spelling_and_shape_is_bit_exact(target, dims):
    rng = np.random.default_rng(len(dims))
    args = _words(rng, dims)
    if args[0].size:  # the extremes of every word
        for a in args:
            a.reshape(-1)[0], a.reshape(-1)[-1] = 0, 0xFFFFFFFF
    _run(_call_text(target, ",".join(map(str, dims))), args)


# Random123's kat_vectors for threefry2x32_20: (key0, key1, ctr0, ctr1) -> (out0, out1).
KNOWN = [
    ((0, 0, 0, 0), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


def test_random123_known_answers():
    args = [np.array([k[0][i] for k in KNOWN], np.uint32) for i in range(4)]
    got = _run(_call_text("cu_threefry2x32_ffi", str(len(KNOWN))), args)
    want = np.array([k[1] for k in KNOWN], np.uint32)
    np.testing.assert_array_equal(np.stack(got, axis=1), want)


PROGRAM = """HloModule p
ENTRY main {
  key = u32[2] parameter(0)
  k0 = u32[1] slice(key), slice={[0:1]}
  k1 = u32[1] slice(key), slice={[1:2]}
  r0 = u32[] reshape(k0)
  r1 = u32[] reshape(k1)
  b0 = u32[4,33] broadcast(r0), dimensions={}
  b1 = u32[4,33] broadcast(r1), dimensions={}
  i = u32[4,33] iota(), iota_dimension=1
  z = u32[4,33] iota(), iota_dimension=0
  r = (u32[4,33], u32[4,33]) custom-call(b0, b1, z, i), custom_call_target="cu_threefry2x32_ffi"
  x = u32[4,33] get-tuple-element(r), index=0
  y = u32[4,33] get-tuple-element(r), index=1
  ROOT s = u32[4,33] xor(x, y)
}
"""


def test_the_call_between_kernels_with_broadcast_operands():
    key = np.array([0x0123ABCD, 42], np.uint32)
    _run(PROGRAM, [key], schedules=("loop", "threefry"))


def test_a_user_target_of_the_same_name_stays_a_host_fallback():
    from hlort.interpreter import custom_call_targets as shipped

    def mine(ev, instr, *operands):
        return operands[0], operands[1]

    register_custom_call("cu_threefry2x32", shipped._threefry_shape, mine, replace=True)
    try:
        program = simulated_program(parse_module(_call_text("cu_threefry2x32", "3")))
    finally:
        register_custom_call(
            "cu_threefry2x32",
            shipped._threefry_shape,
            shipped._threefry,
            description="JAX's GPU Threefry-2x32 kernel",
            replace=True,
        )
    (fallback,) = program.fallbacks
    assert fallback.opcode == "custom-call" and "cu_threefry2x32" in fallback.reason
