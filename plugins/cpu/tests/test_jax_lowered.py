"""Programs as JAX lowers them (jax_programs/, written by its generate.py) compile natively on cpu:
no interpreter fallback, the kernel counts XLA gets (softmax-like rows in one fused pass,
layernorm in at most two kernels), and the interpreter's results.

Also with the core simplifier off, so the fusions hold JAX's raw ``broadcast -> reshape ->
broadcast`` row chains: the emitter takes whatever the fusion pass makes, and every fusion the
pass makes for cpu is one the emitter compiles (``FusionPolicy.can_emit``)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort.ir.opcodes import Opcode  # noqa: E402
from hlort.runtime import load_program  # noqa: E402
from hlort.testing.values import mixed  # noqa: E402
from hlort_cpu.client import emits_one_kernel  # noqa: E402

PROGRAMS = pathlib.Path(__file__).parent / "jax_programs"
FILES = sorted(p.name for p in PROGRAMS.glob("*.mlir"))
# most kernels (non-library steps) XLA:CPU needs for each
MAX_KERNELS = {"softmax": 1, "log_softmax": 1, "logsumexp": 1, "layernorm": 2, "attention": 1}
# |got - want| <= atol + rtol * |want|: f32 sums reassociate and exp/log differ by an ulp or two;
# bf16 results round to 8 bits, so one bf16 ulp of difference (2^-8 relative) is allowed
TOLERANCE = {"f32": (2e-5, 1e-6), "bf16": (2**-7, 2**-7)}
# Workloads with contractions (attention's two batched dots, the MLP's): an output element's
# rounding error is bounded by the sizes of the terms summed (K eps sum |a b|), not by the
# element, which can cancel to near zero; there rtol applies to the output's largest magnitude
# too (attention f32: one element in 901 differs by 5.5e-6 = 1.4e-6 x max|out|).
CONTRACTIONS = ("attention", "mlp")


def _inputs(module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [mixed(p.shape.dtype, p.shape.dims, rng) for p in module.entry.parameters]


def _check_close(got, want, dtype: str, workload: str = "") -> None:
    rtol, atol = TOLERANCE[dtype]
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if workload in CONTRACTIONS:
        atol = max(atol, rtol * float(np.max(np.abs(w[np.isfinite(w)]), initial=0.0)))
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    finite = np.isfinite(w)
    np.testing.assert_array_equal(g[~finite & ~np.isnan(w)], w[~finite & ~np.isnan(w)])
    np.testing.assert_allclose(g[finite], w[finite], rtol=rtol, atol=atol)


def _kernels(stats) -> int:
    return sum(n for label, n in stats["compiled"].items() if not label.startswith("dot"))


@pytest.mark.parametrize("name", FILES)
def test_compiles_natively_and_matches_the_interpreter(name):
    module, _ = load_program(PROGRAMS / name)
    exe = hlort.compile(module, "cpu:0")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    workload, dtype = name[: -len(".mlir")].rsplit("_", 1)
    if workload in MAX_KERNELS:
        assert _kernels(stats) <= MAX_KERNELS[workload], stats
    for seed in (0, 1):
        args = _inputs(module, seed)
        _check_close(exe(*args), hlort.evaluate(module, args), dtype, workload)


@pytest.mark.parametrize("name", [f for f in FILES if not f.startswith("mlp")])
def test_raw_jax_row_chains_compile_without_the_simplifier(name):
    module, _ = load_program(PROGRAMS / name)
    exe = hlort.compile(module, "cpu:0", options={"debug": {"disabled_passes": ["simplify"]}})
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    workload = name[: -len(".mlir")].rsplit("_", 1)[0]
    assert _kernels(stats) <= MAX_KERNELS[workload], stats
    fusions = [i for i in exe.raw.module.entry.instructions if i.opcode is Opcode.FUSION]
    assert fusions and all(emits_one_kernel(f.attrs["calls"]) for f in fusions)
    args = _inputs(module)
    _check_close(
        exe(*args), hlort.evaluate(module, args), name[: -len(".mlir")].rsplit("_")[-1], workload
    )


def test_the_log_softmax_reproducer_compiles():
    """jax.nn.log_softmax (../shared/real-repros/cpu_fused_loop_reduce, there f32[3,10]) stopped
    with "UNIMPLEMENTED: fused loop cannot generate reduce"; now it is one row kernel."""
    module, _ = load_program(PROGRAMS / "log_softmax_f32.mlir")
    exe = hlort.compile(module, "cpu:0")
    assert exe.raw.stats()["compiled"] == {"fusion(kInput)": 1}
