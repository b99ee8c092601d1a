"""HLO programs that chain every f32 function with an all-f32 form (float_math_f32.py,
float_log_f32.py), or every complex64 op of the elemental emitter (complex_math_f32.py), into
one elementwise fusion, and the GPU compile of one for a target: what the GPU plugins' tests
lower to PTX and AMDGPU code objects to check that the math carries no f64 instruction."""

_N = 100000
_OPS = [
    ("s", "sine(x)"),
    ("c", "cosine(s)"),
    ("t", "tan(c)"),
    ("e", "erf(t)"),
    ("p", "power(e, y)"),
    ("a", "atan2(p, x)"),
    ("m", "exponential-minus-one(a)"),
    ("l", "log-plus-one(m)"),
    ("r", "rsqrt(l)"),
]
F32_MATH_CHAIN = "\n".join(
    [
        "HloModule f32_math_chain",
        "ENTRY main {",
        f"  x = f32[{_N}] parameter(0)",
        f"  y = f32[{_N}] parameter(1)",
        *(f"  {name} = f32[{_N}] {op}" for name, op in _OPS),
        f"  ROOT b = f32[{_N}] cbrt(r)",
        "}",
        "",
    ]
)

_C64_N = 1024
_C64_UNARY = ["exponential", "log", "sqrt", "sine", "cosine", "tan", "tanh", "sign"]
_C64_UNARY += ["exponential-minus-one", "log-plus-one", "rsqrt", "logistic", "cbrt"]


def _c64_math_chain() -> str:
    c = f"c64[{_C64_N}]"
    lines = ["HloModule c64_math_chain", "ENTRY main {"]
    lines += [f"  x = {c} parameter(0)", f"  y = {c} parameter(1)"]
    lines += [f"  q = {c} divide(x, y)", f"  p = {c} power(q, y)", f"  t = {c} atan2(p, x)"]
    prev = "t"
    for i, op in enumerate(_C64_UNARY):
        lines.append(f"  u{i} = {c} {op}({prev})")
        prev = f"u{i}"
    lines += [f"  m = f32[{_C64_N}] abs({prev})", f"  mz = {c} convert(m)"]
    lines += [f"  ROOT r = {c} multiply(mz, {prev})", "}", ""]
    return "\n".join(lines)


C64_MATH_CHAIN = _c64_math_chain()  # divide, power, atan2, the transcendentals, abs


def gpu_math_program(text: str, target):
    """``text`` through the core pipeline with the GPU fusion policy, compiled for ``target``
    (an NVPTX or AMDGPU kernel target); it must compile with no fallback."""
    from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
    from hlort.passes.default_pipeline import run_default_pipeline
    from hlort.text.parser import parse_module

    module = parse_module(text)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, target)
    assert program.kernels and not program.fallbacks, program.fallbacks
    return program


__all__ = ["F32_MATH_CHAIN", "C64_MATH_CHAIN", "gpu_math_program"]
