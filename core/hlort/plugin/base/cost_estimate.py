"""``Executable.cost_analysis`` from the core's cost analysis, for backends without their own."""

from __future__ import annotations

from hlort.passes.cost_analysis import cost_analysis


def estimate_cost(module) -> dict[str, float]:
    """PJRT-style cost keys from the core's cost analysis (fusions count external bytes only)."""
    cost = cost_analysis(module)
    return {
        "flops": float(cost.flops),
        "transcendentals": float(cost.transcendentals),
        "bytes accessed": float(cost.bytes_accessed),
    }
