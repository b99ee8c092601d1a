"""What a missing ROCm runtime or missing bindings is called, and how to fix it.

One place for the words, shared by the probe (which counts devices through the driver) and the
HIP driver (which raises them when a call fails), so neither imports the other for them.
"""

HIP_LIBRARY = "libamdhip64.so"
NO_RUNTIME = f"no ROCm runtime ({HIP_LIBRARY}) found"
RUNTIME_FIX = (
    "install ROCm's HIP runtime (AMD's rocm-hip-runtime package, ROCm >= 6.0) or put "
    "its lib directory (e.g. /opt/rocm/lib) on LD_LIBRARY_PATH; compiling for AMD "
    "GPUs needs no runtime: hlort compile --platform rocm --target gfx942"
)
NO_BINDINGS = "hip-python is not installed"
BINDINGS_FIX = "pip install 'hlort-rocm[hip]' (or pip install hip-python matching your ROCm)"
