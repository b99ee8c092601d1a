"""Sort and top-k programs for the GPU sort kernels' checks (hlort.codegen.gpu.sort_schedule),
shared by the host-simulator tests (tests/gpu) and the PTX / code-object checks of the cuda and
rocm plugins: both strategies (radix keys, an inlined network comparator), payload operands,
descending, FLOAT compares with NaN and signed zeros, a sort along a leading dimension, rows
past shared memory, comparators with exp, log and sine (f32, bf16, f16), and top-k both ways.
Inputs have many ties, so stability shows."""

from __future__ import annotations

import numpy as np


def _sort(name, dims, dim, operands, comparator, stable=True) -> str:
    shape = ",".join(map(str, dims))
    params = "\n".join(f"  x{k} = {t}[{shape}] parameter({k})" for k, t in enumerate(operands))
    args = ", ".join(f"x{k}" for k in range(len(operands)))
    cparams = "\n".join(
        f"  {s}{k} = {t}[] parameter({2 * k + (s == 'b')})"
        for k, t in enumerate(operands)
        for s in "ab"
    )
    if len(operands) == 1:
        result = f"{operands[0]}[{shape}]"
    else:
        result = "(" + ", ".join(f"{t}[{shape}]" for t in operands) + ")"
    return f"""HloModule {name}
cmp {{
{cparams}
{comparator}
}}
ENTRY main {{
{params}
  ROOT s = {result} sort({args}), dimensions={{{dim}}}, is_stable={str(stable).lower()}, \
to_apply=cmp
}}
"""


def _topk(name, t, dims, k, largest) -> str:
    shape = ",".join(map(str, dims))
    out = ",".join(map(str, (*dims[:-1], k)))
    return f"""HloModule {name}
ENTRY main {{
  x0 = {t}[{shape}] parameter(0)
  ROOT t = ({t}[{out}], s32[{out}]) topk(x0), k={k}, largest={str(largest).lower()}
}}
"""


LT = "  ROOT r = pred[] compare(a0, b0), direction=LT"
# |a| < |b|, ties by the second operand descending: not lexicographic, so the network strategy
ABS_THEN_GT = """  aa = f32[] abs(a0)
  ab = f32[] abs(b0)
  lt = pred[] compare(aa, ab), direction=LT
  eq = pred[] compare(aa, ab), direction=EQ
  gt = pred[] compare(a1, b1), direction=GT
  tie = pred[] and(eq, gt)
  ROOT r = pred[] or(lt, tie)"""

# transcendental comparators (the GPU widens them: codegen/gpu/wide_comparator.py)
EXP_LT = """  ea = f32[] exponential(a0)
  eb = f32[] exponential(b0)
  ROOT r = pred[] compare(ea, eb), direction=LT"""
LOG_ABS_THEN_GT = """  aa = bf16[] abs(a0)
  ab = bf16[] abs(b0)
  la = bf16[] log(aa)
  lb = bf16[] log(ab)
  lt = pred[] compare(la, lb), direction=LT
  eq = pred[] compare(la, lb), direction=EQ
  gt = pred[] compare(a1, b1), direction=GT
  tie = pred[] and(eq, gt)
  ROOT r = pred[] or(lt, tie)"""
SIN_GT = """  sa = f16[] sine(a0)
  sb = f16[] sine(b0)
  ROOT r = pred[] compare(sa, sb), direction=GT"""

# name -> (HLO text, GPU schedule, strategy)
SORT_PROGRAMS = {
    "f32-float-lt": (_sort("a", (5, 77), 1, ["f32"], LT + ", type=FLOAT"), "sort_shared", "radix"),
    "s32-gt-payload": (
        _sort("b", (4, 300), 1, ["s32", "f32"], LT.replace("LT", "GT")),
        "sort_shared",
        "radix",
    ),
    "f16-totalorder": (
        _sort("c", (3, 64), 1, ["f16"], LT + ", type=TOTALORDER"),
        "sort_shared",
        "radix",
    ),
    "u8-leading-dim": (_sort("d", (33, 3, 2), 0, ["u8"], LT), "sort_shared", "radix"),
    "network-abs-payload": (
        _sort("e", (3, 129), 1, ["f32", "s32"], ABS_THEN_GT, stable=False),
        "sort_shared",
        "network",
    ),
    "f32-long-rows": (_sort("f", (2, 5000), 1, ["f32"], LT), "sort_global", "radix"),
    "f32-exp-network": (_sort("i", (3, 100), 1, ["f32"], EXP_LT), "sort_shared", "network"),
    "bf16-log-payload": (
        _sort("j", (2, 70), 1, ["bf16", "s32"], LOG_ABS_THEN_GT),
        "sort_shared",
        "network",
    ),
    "f16-sine-gt": (_sort("k", (2, 33), 1, ["f16"], SIN_GT), "sort_shared", "network"),
    "topk-largest": (_topk("g", "f32", (4, 200), 7, True), "topk_shared", "radix"),
    "topk-smallest-s32": (_topk("h", "s32", (3, 40), 40, False), "topk_shared", "radix"),
}


def sort_inputs(name: str, shapes, seed: int = 11) -> list[np.ndarray]:
    """Inputs with many ties, NaNs of both signs and both zeros for the float ones."""
    from hlort.dtypes import from_hlo_name

    rng = np.random.default_rng(seed)
    out = []
    for dtype, dims in shapes:
        dt = from_hlo_name(dtype).numpy
        if np.dtype(dt).kind == "f":
            x = rng.integers(-4, 5, dims).astype(np.float64) / 2
            special = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf])
            x = np.where(rng.random(dims) < 0.15, rng.choice(special, dims), x)
            out.append(x.astype(dt))
        else:
            lo = 0 if np.dtype(dt).kind in "ub" else -5
            out.append(rng.integers(lo, 6, dims).astype(dt))
    return out


__all__ = ["SORT_PROGRAMS", "sort_inputs"]
