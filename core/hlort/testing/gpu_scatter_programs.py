"""Scatter programs for the GPU scatter kernels' checks (one per mode of
hlort.codegen.gpu.scatter_schedule), shared by the host-simulator tests (tests/gpu) and the
PTX / code-object checks of the cuda and rocm plugins, with inputs that hit duplicate targets
and out-of-bounds rows."""

from __future__ import annotations

import numpy as np

_COMBINERS = {
    "add": "ROOT r = {t}[] add(a, b)",
    "mul": "ROOT r = {t}[] multiply(a, b)",
    "max": "ROOT r = {t}[] maximum(a, b)",
    "min": "ROOT r = {t}[] minimum(b, a)",
    "or": "ROOT r = {t}[] or(a, b)",
    "set": "ROOT r = {t}[] parameter(1)",
    "sub": "ROOT r = {t}[] subtract(a, b)",
}

# (combiner, element type, unique_indices, the mode scatter_schedule.plan_scatter picks)
SCATTER_MODES = [
    ("add", "s32", False, "atomic"),
    ("add", "u64", False, "atomic"),
    ("max", "s64", False, "atomic"),
    ("min", "u32", False, "atomic"),
    ("or", "s32", False, "atomic"),
    ("mul", "s32", False, "atomic"),
    ("max", "f32", False, "atomic"),
    ("min", "f64", False, "atomic"),
    ("add", "f32", False, "atomic"),
    ("add", "f64", False, "atomic"),
    ("max", "s8", False, "atomic"),
    ("add", "u16", False, "atomic"),
    ("min", "bf16", False, "atomic"),
    ("max", "f16", False, "atomic"),
    ("set", "f32", False, "overwrite"),
    ("set", "s8", False, "overwrite"),
    ("sub", "f32", True, "parallel"),
    ("add", "f16", True, "parallel"),
    ("sub", "s32", False, "serial"),
    ("add", "f16", False, "serial"),
    ("mul", "bf16", False, "serial"),
]


def scatter_rows(unique: bool) -> int:
    return 30 if unique else 700


def scatter_program(comb: str, t: str, unique: bool) -> str:
    """``f32[40,3]``-shaped operand, rows of 3 updates at ``s32[rows,1]`` indices."""
    rows = scatter_rows(unique)
    body = _COMBINERS[comb].format(t=t)
    b = "" if comb == "set" else f"\n  b = {t}[] parameter(1)"
    uniq = ", unique_indices=true" if unique else ""
    return f"""HloModule s
comb {{
  a = {t}[] parameter(0){b}
  {body}
}}
ENTRY main {{
  x = {t}[40,3] parameter(0)
  i = s32[{rows},1] parameter(1)
  u = {t}[{rows},3] parameter(2)
  ROOT s = {t}[40,3] scatter(x, i, u), update_window_dims={{1}}, inserted_window_dims={{0}}, \
scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=comb{uniq}
}}
"""


def scatter_inputs(t: str, unique: bool, seed: int = 7) -> list[np.ndarray]:
    """Operand, indices (duplicates and skipped rows, or distinct ones), updates."""
    from hlort.dtypes import from_hlo_name

    rng = np.random.default_rng(seed)
    rows = scatter_rows(unique)
    dt = from_hlo_name(t).numpy
    if unique:
        idx = rng.permutation(44)[:rows].reshape(rows, 1)  # 40..43: skipped
    else:
        idx = rng.integers(-3, 44, (rows, 1))  # duplicates, and skipped rows both sides
    if np.dtype(dt).kind == "f":
        x, u = rng.normal(size=(40, 3)), rng.normal(size=(rows, 3))
        u = np.where(rng.random((rows, 3)) < 0.5, u, np.round(u * 4) / 4)  # ties for max/min
    else:
        x, u = rng.integers(-5, 6, (40, 3)), rng.integers(-5, 6, (rows, 3))
        if np.dtype(dt).kind == "u":
            x, u = np.abs(x), np.abs(u)
    return [x.astype(dt), idx.astype(np.int32), u.astype(dt)]


__all__ = ["SCATTER_MODES", "scatter_inputs", "scatter_program", "scatter_rows"]
