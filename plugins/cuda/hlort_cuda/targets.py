"""CUDA targets by name: compute capability <-> ``sm_XY``, and the DRAM bandwidth a device reports.

The compiler's own parsing (``nvptx_target.parse_arch``) decides which names are valid; this
module names a device's architecture the same way, so a serialized blob's target and a device's
compare as strings.
"""

from __future__ import annotations


def arch_of_capability(major: int, minor: int) -> str:
    """(9, 0) -> ``"sm_90"``."""
    return f"sm_{major}{minor}"


def canonical_target(target: str) -> str:
    """``"sm_90"``, ``"90"`` or ``"9.0"`` -> ``"sm_90"``; INVALID_ARGUMENT for anything else."""
    from hlort_cuda.nvptx_target import parse_arch

    return f"sm_{parse_arch(target)}"


def peak_bandwidth(memory_clock_khz: int, bus_width_bits: int) -> float:
    """Theoretical DRAM bytes/s from the driver's attributes (double data rate); 0 if unknown."""
    if memory_clock_khz <= 0 or bus_width_bits <= 0:
        return 0.0
    return 2.0 * memory_clock_khz * 1e3 * bus_width_bits / 8
