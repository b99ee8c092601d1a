"""Sorts whose comparator has a transcendental, on the GPU (wide_comparator.py): the widened
comparator means the same to the interpreter, every inexact op on narrow operands runs in f64
(c128), and the kernel's permutation is the interpreter's on random rows (no designed ties:
there both sides order by the functions' values, which then agree) with NaN, infinities and
signed zeros mixed in, for f32, f16, bf16 and c64 operands, and on rows of neighbouring
floats where the last bit of each value decides; 32- and 64-wide warps. One on f64 values
stays on the host, with its reason."""

import ml_dtypes
import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget, simulated_program

from hlort.codegen.gpu.compiler import wrap_instruction
from hlort.codegen.gpu.sort_schedule import plan_gpu_sort, sorted_instruction
from hlort.codegen.gpu.wide_comparator import compilable_comparator, widened_comparator
from hlort.interpreter.evaluator import evaluate
from hlort.ir.opcodes import Opcode
from hlort.plugin.base.value_flattening import flatten_value
from hlort.text.parser import parse_module

COMPARATORS = {
    "exp": ("f32", "  fa = f32[] exponential(a0)\n  fb = f32[] exponential(b0)"),
    "tanh-f16": ("f16", "  fa = f16[] tanh(a0)\n  fb = f16[] tanh(b0)"),
    "logistic-bf16": ("bf16", "  fa = bf16[] logistic(a0)\n  fb = bf16[] logistic(b0)"),
    "pow-f32": (
        "f32",
        "  two = f32[] constant(1.5)\n  fa = f32[] power(a0, two)\n  fb = f32[] power(b0, two)",
    ),
    "atan2-f32": ("f32", "  fa = f32[] atan2(a0, a1)\n  fb = f32[] atan2(b0, b1)"),
    "abs-c64": ("c64", "  fa = f32[] abs(a0)\n  fb = f32[] abs(b0)"),
}
F64_COMPARATOR = ("f64", "  fa = f64[] log-plus-one(a0)\n  fb = f64[] log-plus-one(b0)")


def _module(name: str) -> str:
    dt, body = COMPARATORS.get(name, F64_COMPARATOR)
    two = name.startswith("atan2")
    ops = [dt, dt] if two else [dt, "s32"]
    shape = "4,150"
    params = "\n".join(
        f"  a{k} = {t}[] parameter({2 * k})\n  b{k} = {t}[] parameter({2 * k + 1})"
        for k, t in enumerate(ops)
    )
    result = ", ".join(f"{t}[{shape}]" for t in ops)
    return f"""HloModule t
cmp {{
{params}
{body}
  ROOT r = pred[] compare(fa, fb), direction=LT
}}
ENTRY main {{
  x0 = {ops[0]}[{shape}] parameter(0)
  x1 = {ops[1]}[{shape}] parameter(1)
  ROOT s = ({result}) sort(x0, x1), dimensions={{1}}, is_stable=true, to_apply=cmp
}}
"""


def _inputs(name: str, rng) -> list[np.ndarray]:
    dt, _ = COMPARATORS[name]
    dims = (4, 150)
    x = rng.normal(0, 3, dims)
    special = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf])
    x = np.where(rng.random(dims) < 0.1, rng.choice(special, dims), x)
    if dt == "c64":
        y = rng.normal(0, 3, dims)
        first = (x + 1j * y).astype(np.complex64)
    else:
        numpy = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}
        first = x.astype(numpy.get(dt, np.float64))
    if name.startswith("atan2"):
        second = np.where(rng.random(dims) < 0.1, -0.0, rng.normal(0, 3, dims)).astype(np.float32)
    else:
        second = np.arange(600, dtype=np.int32).reshape(dims)
    return [first, second]


@pytest.mark.parametrize("warp", [32, 64])
@pytest.mark.parametrize("name", sorted(COMPARATORS))
def test_transcendental_comparator_sorts_as_the_interpreter(name, warp):
    rng = np.random.default_rng(5)
    module = parse_module(_module(name))
    args = _inputs(name, rng)
    expected = [np.asarray(v) for v in flatten_value(evaluate(module, args))]
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    assert [k.schedule for k in program.kernels] == ["sort_shared"]
    got = HostSimRunner(program).run(args)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.tobytes() == e.tobytes(), (g, e)


@pytest.mark.parametrize("name", sorted(COMPARATORS))
def test_the_widened_comparator_means_the_same_and_computes_in_f64(name):
    rng = np.random.default_rng(6)
    module = parse_module(_module(name))
    root = module.entry.root
    comp = root.attrs["to_apply"]
    assert compilable_comparator(comp)
    wide = widened_comparator(comp)
    inexact = [i for i in wide.instructions if i.opcode not in (Opcode.CONVERT, Opcode.COMPARE)]
    inexact = [i for i in inexact if i.opcode not in (Opcode.PARAMETER, Opcode.CONSTANT)]
    assert inexact and all(i.operands[0].shape.dtype.bits in (64, 128) for i in inexact)
    plan, why = plan_gpu_sort(HostSimTarget(32), sorted_instruction(wrap_instruction(root)))
    assert plan is not None and plan.sort.strategy == "network", why
    args = _inputs(name, rng)
    before = flatten_value(evaluate(module, args))
    root.attrs["to_apply"] = wide
    module.computations.insert(0, wide)
    after = flatten_value(evaluate(module, args))
    for a, b in zip(after, before, strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


@pytest.mark.parametrize("name", ["exp", "tanh-f16", "pow-f32"])
def test_neighbouring_floats_tie_and_order_as_in_the_interpreter(name):
    """Rows of consecutive floats, shuffled: many compared values round to the same result or
    to neighbours, so ties and orders depend on the last bit of each function value (an
    all-f32 exp within 2 ulp orders some of these rows differently; the widened one does not)."""
    rng = np.random.default_rng(8)
    module = parse_module(_module(name))
    first, second = _inputs(name, rng)
    start = {"exp": 0.75, "tanh-f16": 0.3, "pow-f32": 3.0}[name]
    width = np.dtype(first.dtype).itemsize * 8
    bits = np.array(start, first.dtype).view(f"u{width // 8}")
    steps = np.arange(first.size, dtype=bits.dtype).reshape(first.shape)
    near = (bits + steps).view(first.dtype)
    args = [np.take_along_axis(near, rng.permuted(np.indices(near.shape)[1], axis=1), 1), second]
    expected = [np.asarray(v) for v in flatten_value(evaluate(module, args))]
    got = HostSimRunner(simulated_program(module)).run(args)
    for g, e in zip(got, expected, strict=True):
        assert g.tobytes() == e.tobytes()


def test_a_transcendental_on_f64_values_stays_on_the_host_with_its_reason():
    program = simulated_program(parse_module(_module("log1p-f64")))
    (fallback,) = program.fallbacks
    assert fallback.opcode == "sort" and "f64 or c128" in fallback.reason


SIGN_SEEING = {
    # the comparator sees a NaN's sign bit: NumPy's log(-1) and sin(inf) are -NaN (x86), the
    # kernel's functions give +NaN (a GPU's canonical NaN), so such rows would order differently
    "log-totalorder": "  fa = f32[] log(a0)\n  fb = f32[] log(b0)\n"
    "  ROOT r = pred[] compare(fa, fb), direction=LT, type=TOTALORDER",
    "sine-negated-totalorder": "  sa = f32[] sine(a0)\n  sb = f32[] sine(b0)\n"
    "  fa = f32[] negate(sa)\n  fb = f32[] negate(sb)\n"
    "  ROOT r = pred[] compare(fa, fb), direction=LT, type=TOTALORDER",
    "tanh-bitcast": "  ta = f16[] convert(a0)\n  tb = f16[] convert(b0)\n"
    "  ea = f16[] tanh(ta)\n  eb = f16[] tanh(tb)\n"
    "  fa = s16[] bitcast-convert(ea)\n  fb = s16[] bitcast-convert(eb)\n"
    "  ROOT r = pred[] compare(fa, fb), direction=LT",
}


@pytest.mark.parametrize("name", sorted(SIGN_SEEING))
def test_a_comparator_that_sees_a_transcendental_nans_sign_stays_on_the_host(name):
    """TOTALORDER compares and bitcast-converts see the sign bit of a NaN, which the
    interpreter's NumPy functions and the kernel's set differently: such a sort stays on the
    host (counted, with its reason) and sorts as the interpreter does."""
    module = parse_module(f"""HloModule t
cmp {{
  a0 = f32[] parameter(0)
  b0 = f32[] parameter(1)
  a1 = s32[] parameter(2)
  b1 = s32[] parameter(3)
{SIGN_SEEING[name]}
}}
ENTRY main {{
  x0 = f32[2,64] parameter(0)
  x1 = s32[2,64] parameter(1)
  ROOT s = (f32[2,64], s32[2,64]) sort(x0, x1), dimensions={{1}}, is_stable=true, to_apply=cmp
}}
""")
    assert not compilable_comparator(module.entry.root.attrs["to_apply"])
    program = simulated_program(module)
    (fallback,) = program.fallbacks
    assert fallback.opcode == "sort" and "sign of a NaN" in fallback.reason
    rng = np.random.default_rng(9)
    special = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, -1.0, -2.5])
    x = rng.normal(0, 3, (2, 64))
    x = np.where(rng.random((2, 64)) < 0.5, rng.choice(special, (2, 64)), x).astype(np.float32)
    args = [x, np.arange(128, dtype=np.int32).reshape(2, 64)]
    expected = [np.asarray(v) for v in flatten_value(evaluate(module, args))]
    got = HostSimRunner(program).run(args)
    for g, e in zip(got, expected, strict=True):
        assert g.tobytes() == e.tobytes()


def test_a_totalorder_compare_of_plain_operands_beside_a_transcendental_still_compiles():
    """Only a compare (or bitcast) of a value computed from a transcendental sees its NaN: a
    TOTALORDER tie-break on the raw operands keeps the sort a kernel."""
    module = parse_module("""HloModule t
cmp {
  a0 = f32[] parameter(0)
  b0 = f32[] parameter(1)
  ea = f32[] exponential(a0)
  eb = f32[] exponential(b0)
  lt = pred[] compare(ea, eb), direction=LT
  eq = pred[] compare(ea, eb), direction=EQ
  raw = pred[] compare(a0, b0), direction=LT, type=TOTALORDER
  tie = pred[] and(eq, raw)
  ROOT r = pred[] or(lt, tie)
}
ENTRY main {
  x0 = f32[2,64] parameter(0)
  ROOT s = f32[2,64] sort(x0), dimensions={1}, to_apply=cmp
}
""")
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    rng = np.random.default_rng(10)
    special = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 100.0, 200.0])
    x = rng.normal(0, 3, (2, 64))
    args = [np.where(rng.random((2, 64)) < 0.5, rng.choice(special, (2, 64)), x).astype("f4")]
    expected = np.asarray(flatten_value(evaluate(module, args))[0])
    (got,) = HostSimRunner(program).run(args)
    assert got.tobytes() == expected.tobytes()
