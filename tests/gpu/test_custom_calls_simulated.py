"""Custom calls on the GPU (custom_call_steps.py), on the host simulator against the interpreter:
the placement and sharding annotations are device copies (every conformance case, tuples
too), XLA:CPU's ``TopK`` is the top-k kernel (NaN of both signs, infinities, -0.0 and ties, rank
1 and 2, k = 0 and k = n; every element type the conformance cases use), and the rest stay
counted host fallbacks naming their target (LAPACK's getrf, a tuple AllocateBuffer);
AllocateBuffer of an array is a zero-fill kernel (the interpreter's zeros), of every element
type. JAX's threefry and LAPACK potrf / trsm calls: test_threefry_call_simulated.py and
test_lapack_calls_simulated.py."""

import ml_dtypes
import numpy as np
import pytest
from host_simulator import HostSimRunner, check_case_without_fallback, simulated_program

from hlort.codegen.gpu.program import Copy
from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.value_flattening import flatten_value
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CASES = [c for c in all_cases() if c.op == "custom-call"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_case_runs_without_fallback(case):
    program = check_case_without_fallback(case, "bits")
    assert not program.kernels and all(isinstance(s, Copy) for s in program.steps)


ANNOTATIONS = """HloModule a
ENTRY main {
  x = f32[3] parameter(0)
  y = s8[2,2] parameter(1)
  t = (f32[3], s8[2,2]) tuple(x, y)
  h = (f32[3], s8[2,2]) custom-call(t), custom_call_target="MoveToHost"
  hx = f32[3] get-tuple-element(h), index=0
  e = f32[3] exponential(hx)
  d = f32[3] custom-call(e), custom_call_target="annotate_device_placement"
  s = f32[3] custom-call(d), custom_call_target="SPMDFullToShardShape"
  f = f32[3] custom-call(s), custom_call_target="SPMDShardToFullShape"
  hy = s8[2,2] get-tuple-element(h), index=1
  ROOT r = (f32[3], s8[2,2]) tuple(f, hy)
}
"""


def test_annotations_are_device_copies_between_kernels():
    module = parse_module(ANNOTATIONS)
    args = [np.array([0.5, -np.inf, np.nan], np.float32), np.array([[1, -2], [127, -128]], np.int8)]
    expected = flatten_value(evaluate(module, args))
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    got = HostSimRunner(program).run(args)
    for g, e in zip(got, expected, strict=True):
        assert g.tobytes() == np.asarray(e).tobytes()


def _topk(t: str, dims: tuple[int, ...], k: int) -> str:
    shape = ",".join(map(str, dims))
    out = ",".join(map(str, (*dims[:-1], k)))
    return f"""HloModule k
ENTRY main {{
  x = {t}[{shape}] parameter(0)
  ROOT r = ({t}[{out}], s32[{out}]) custom-call(x), custom_call_target="TopK"
}}
"""


TOPKS = [
    ("f32", (3, 70), 5),
    ("f32", (40,), 40),
    ("bf16", (2, 33), 7),
    ("f16", (4, 9), 0),
    ("f64", (1, 300), 17),
    ("s32", (3, 50), 6),
    ("u8", (2, 64), 64),
]


@pytest.mark.parametrize("t,dims,k", TOPKS)
def test_topk_custom_call_is_the_topk_kernel(t, dims, k):
    module = parse_module(_topk(t, dims, k))
    rng = np.random.default_rng(k)
    numpy = {"bf16": ml_dtypes.bfloat16}.get(t) or np.dtype(
        {"f32": "f4", "f16": "f2", "f64": "f8", "s32": "i4", "u8": "u1"}[t]
    )
    if t in ("s32", "u8"):
        x = rng.integers(0, 9, dims).astype(numpy)  # ties: index order decides
    else:
        x = (rng.integers(-4, 5, dims) / 2).astype(np.float64)
        special = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf])
        x = np.where(rng.random(dims) < 0.2, rng.choice(special, dims), x).astype(numpy)
    expected = flatten_value(evaluate(module, [x]))
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    assert [k.schedule for k in program.kernels] == ["topk_shared"]
    got = HostSimRunner(program).run([x])
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.asarray(e).dtype and g.tobytes() == np.asarray(e).tobytes()


@pytest.mark.parametrize("shape", ["f32[4]", "pred[3,2]", "c64[5]", "s4[7]", "bf16[]", "u8[0]"])
def test_allocate_buffer_is_a_zero_fill_kernel(shape):
    module = parse_module(
        f"HloModule z\nENTRY main {{\n  x = {shape} parameter(0)\n"
        f'  a = {shape} custom-call(), custom_call_target="AllocateBuffer"\n'
        f"  ROOT r = ({shape}, {shape}) tuple(a, x)\n}}\n"
    )
    param = module.entry.parameters[0].shape
    x = np.ones(param.dims, param.dtype.numpy)
    expected = flatten_value(evaluate(module, [x]))
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    got = HostSimRunner(program).run([x])
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.asarray(e).dtype and g.tobytes() == np.asarray(e).tobytes()


STAYS = {
    "AllocateBuffer of a tuple": """HloModule s
ENTRY main {
  ROOT r = (f32[4], s32[]) custom-call(), custom_call_target="AllocateBuffer"
}
""",
    "lapack_sgetrf_ffi": """HloModule s
ENTRY main {
  a = f32[3,3] parameter(0)
  ROOT r = (f32[3,3], s32[3], s32[]) custom-call(a), custom_call_target="lapack_sgetrf_ffi", \
api_version=API_VERSION_TYPED_FFI
}
""",
}


@pytest.mark.parametrize("name", sorted(STAYS))
def test_other_shipped_targets_stay_counted_host_fallbacks(name):
    program = simulated_program(parse_module(STAYS[name]))
    (fallback,) = program.fallbacks
    assert fallback.opcode == "custom-call"
    assert fallback.reason.startswith(("lapack_sgetrf_ffi: LAPACK getrf", "custom call target"))
