"""Which program a workload's hlort side compiles: JAX's own lowering of the workload's JAX
function when jax is importable (so hlort and ``jax.jit`` run the same program), else the
builder-made module; a workload with neither is skipped and says why."""

from __future__ import annotations

from dataclasses import dataclass

from workloads import Workload, jax

JAX = "jax"  # StableHLO text from jax.jit(f).lower(...).as_text()
BUILDER = "builder"  # hlort's builder module (jax absent)
SKIPPED = "skipped"


@dataclass
class Source:
    label: str
    program: object = None  # StableHLO text or an hlort Module; None when skipped
    why: str = ""


def jitted(w: Workload):
    """The ``jax.jit`` of the workload: the same object is lowered and timed, and unused
    inputs are kept so the lowering's parameters are exactly ``w.args``."""
    return jax.jit(w.jax_fn, keep_unused=True)


def lower(w: Workload) -> str:
    """JAX's lowering from the inputs' shapes alone (no data is allocated)."""
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in w.args]
    return jitted(w).lower(*specs).as_text()


def source_of(w: Workload, use_jax: bool | None = None) -> Source:
    if use_jax is None:
        use_jax = jax is not None
    if use_jax:
        return Source(JAX, lower(w))
    if w.builder is not None:
        return Source(BUILDER, w.builder())
    return Source(SKIPPED, why="needs jax (no builder module)")
