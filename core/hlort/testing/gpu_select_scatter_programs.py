"""Select-and-scatter programs for the GPU kernel's checks
(hlort.codegen.gpu.select_scatter_schedule), shared by the host-simulator tests (tests/gpu)
and the PTX / code-object checks of the cuda and rocm plugins: overlapping windows with
padding (max-pool gradients, GE keeps the first maximum of ties), window dilation, a min
select, a non-commutative scatter (whose order is what the result depends on), and base
dilation with padding, negative padding (crops) and window dilation."""

from __future__ import annotations

import numpy as np

_TEMPLATE = """HloModule sas
sel {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  ROOT c = pred[] compare(a, b), direction={direction}
}}
sc {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  ROOT c = {t}[] {combine}(a, b)
}}
ENTRY main {{
  x = {t}[{dims}] parameter(0)
  s = {t}[{src}] parameter(1)
  z = {t}[] constant(0)
  ROOT r = {t}[{dims}] select-and-scatter(x, s, z), window={{{window}}}, select=sel, scatter=sc
}}
"""

# name -> (dtype, operand dims, source dims, window text, select direction, scatter op)
SELECT_SCATTER_PROGRAMS = {
    "maxpool-overlap-padded": (
        "f32",
        "2,9,8,3",
        "2,5,8,3",
        "size=1x3x3x1 stride=1x2x1x1 pad=0_0x1_1x1_1x0_0",
        "GE",
        "add",
    ),
    "dilated-min": (
        "s32",
        "11,10",
        "4,7",
        "size=3x2 stride=2x1 pad=0_0x0_0 rhs_dilate=2x3",
        "LE",
        "add",
    ),
    "subtract-order": ("f64", "7,7", "5,5", "size=3x3 stride=1x1", "GT", "subtract"),
    "base-dilated-padded": (
        "f32",
        "5,4",
        "5,10",
        "size=3x2 stride=2x1 pad=1_2x0_1 lhs_dilate=2x3",
        "GE",
        "add",
    ),
    "negative-pad-both-dilations": (
        "s32",
        "12,9",
        "7,3",
        "size=2x3 stride=3x2 pad=-1_1x2_-2 lhs_dilate=2x1 rhs_dilate=2x2",
        "GT",
        "subtract",
    ),
    "cropped-and-base-dilated": (
        "f16",
        "6,6",
        "2,9",
        "size=3x2 stride=1x2 pad=-1_-1x0_3 lhs_dilate=1x3",
        "LT",
        "maximum",
    ),
}


def select_scatter_text(name: str) -> str:
    t, dims, src, window, direction, combine = SELECT_SCATTER_PROGRAMS[name]
    return _TEMPLATE.format(
        t=t, dims=dims, src=src, window=window, direction=direction, combine=combine
    )


def select_scatter_inputs(name: str, seed: int = 3) -> list[np.ndarray]:
    """Operand with many ties (small integers; NaN, infinities and -0.0 among float ones),
    source values."""
    from hlort.dtypes import from_hlo_name

    t, dims, src, *_ = SELECT_SCATTER_PROGRAMS[name]
    rng = np.random.default_rng(seed)
    dt = from_hlo_name(t).numpy
    shape = lambda text: tuple(int(d) for d in text.split(","))  # noqa: E731
    x = rng.integers(-3, 4, shape(dims)).astype(dt)
    if np.dtype(dt).kind == "f":  # selection sees NaN, infinities and both zeros
        special = np.array([np.nan, np.inf, -np.inf, -0.0], dt)
        x = np.where(rng.random(x.shape) < 0.1, rng.choice(special, x.shape), x)
    s = (rng.integers(-50, 50, shape(src)) / (1 if t.startswith("s") else 8)).astype(dt)
    return [x, s]


__all__ = ["SELECT_SCATTER_PROGRAMS", "select_scatter_inputs", "select_scatter_text"]
