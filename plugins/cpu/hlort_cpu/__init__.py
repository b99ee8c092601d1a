"""hlort's CPU backend (platform ``cpu``): one LLVM kernel per fusion, BLAS for dots."""

from hlort_cpu.plugin import CpuPlugin  # noqa: F401

__version__ = "0.1.0"
