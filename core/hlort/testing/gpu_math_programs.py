"""An HLO program that chains every f32 function with an all-f32 form (float_math_f32.py,
float_log_f32.py) into one elementwise fusion: what the GPU plugins' tests lower to PTX and
AMDGPU code objects to check that f32 math carries no f64 instruction."""

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

__all__ = ["F32_MATH_CHAIN"]
