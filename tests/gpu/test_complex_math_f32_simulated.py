"""complex64 math as the GPU targets compile it (in f32: complex_math_f32.py, since their
MathPolicy.f32_via_f64 is False), run on the host simulator: every op gives, bit for bit, what
the same f32 forms give on the CPU JIT, where plugins/cpu/tests/test_complex_math_f32.py
measures them against the interpreter over 60,000 values per op; and the GPU program's IR
has no f64 operation. Inputs: every pair of special parts and random parts of moderate, wide
and full f32 range."""

from dataclasses import replace

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort import Builder, shape
from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort_cpu.codegen.compiled import compile_kernel_module
from hlort_cpu.codegen.cpu_target import CPU_TARGET
from hlort_cpu.codegen.kernel_builder import KernelModule

F32_ONLY = replace(CPU_TARGET, math=replace(CPU_TARGET.math, f32_via_f64=False))
UNARY = ["exponential", "log", "sqrt", "sine", "cosine", "tan", "tanh", "abs", "sign"]
UNARY += ["expm1", "log1p", "rsqrt", "logistic", "cbrt"]
BINARY = ["divide", "power", "atan2"]
_PARTS = np.array(
    [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1.1754944e-38, -1e-45, 3.4028235e38]
    + [-1.1342745e38, 2.5, -0.375],
    dtype=np.float32,
)


def _complex(re, im) -> np.ndarray:
    out = np.empty(np.shape(re), np.complex64)
    out.real, out.imag = re, im
    return out


def _random(rng, n: int) -> np.ndarray:
    decades = np.repeat([1.3, 13.0, 37.0], n // 3 + 1)[:n]
    mag = 10.0 ** (rng.uniform(-1, 1, (2, n)) * decades) * rng.uniform(1, 2, (2, n))
    parts = (rng.choice([-1.0, 1.0], (2, n)) * mag).astype(np.float32)
    return _complex(parts[0], parts[1])


def _inputs(op: str):
    rng = np.random.default_rng(40 + (UNARY + BINARY).index(op))
    re, im = np.meshgrid(_PARTS, _PARTS, indexing="ij")
    special = _complex(re.ravel(), im.ravel())
    if op in UNARY:
        return [np.concatenate([special, _random(rng, 1500)])]
    a = np.concatenate([np.repeat(special, 9), _random(rng, 1500)])
    b = np.concatenate([np.tile(special[::19], special.size), _random(rng, 1500)])
    return [a, b]


def _module(op: str, n: int):
    b = Builder(op)
    params = [b.parameter(shape.array("c64", (n,))) for _ in range(2 if op in BINARY else 1)]
    return b.build(getattr(b, op)(*params))


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    g, w = got.view(np.uint32), want.view(np.uint32)
    both_nan = np.isnan(got) & np.isnan(want)  # NaN payloads aside
    return (g == w) | both_nan


@pytest.mark.parametrize("op", UNARY + BINARY)
def test_gpu_c64_math_is_the_f32_forms(op):
    args = _inputs(op)
    module = _module(op, args[0].size)
    km = KernelModule(target=F32_ONLY)
    km.add("k", module.entry)
    _, compiled = compile_kernel_module(km)
    want = np.asarray(compiled["k"](*args)[0])
    gpu_module = module.clone()
    run_default_pipeline(gpu_module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(gpu_module, HostSimTarget(32))
    assert program.kernels and not program.fallbacks
    text = program.binary.decode()
    assert " double" not in text and "fpext" not in text
    got = HostSimRunner(program).run(args)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    parts = [(got, want)] if got.dtype == np.float32 else [(got.real, want.real)]
    if got.dtype != np.float32:
        parts.append((got.imag, want.imag))
    for g, w in parts:
        same = _same(np.ascontiguousarray(g), np.ascontiguousarray(w))
        bad = np.nonzero(~same)[0]
        assert bad.size == 0, [(*(a[i] for a in args), g[i], w[i]) for i in bad[:3]]
