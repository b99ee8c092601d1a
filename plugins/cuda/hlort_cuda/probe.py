"""The cuda plugin's probe: is there a driver and a device, asked cheaply and truthfully.

It loads ``libcuda.so.1`` with ctypes (the driver library NVIDIA's kernel driver installs; no
CUDA toolkit and no Python binding is needed to ask) and calls ``cuInit`` and
``cuDeviceGetCount``. It also checks that the Python driver binding the client would use is
installed, without importing it. Every "no" comes with the reason and the fix.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys

from hlort.plugin.capabilities import ProbeResult

DRIVER_ENV = "HLORT_CUDA_DRIVER"
DRIVERS = ("cuda-bindings", "pycuda")
_MODULES = {"cuda-bindings": "cuda.bindings", "pycuda": "pycuda"}
_INSTALL = {
    "cuda-bindings": "pip install hlort-cuda (it depends on cuda-bindings)",
    "pycuda": "pip install 'hlort-cuda[pycuda]' (pycuda builds against libcuda)",
}
LIBCUDA = "libcuda.so.1" if sys.platform != "win32" else "nvcuda.dll"
CUDA_ERROR_NO_DEVICE = 100
NO_DRIVER_FIX = (
    "install the NVIDIA driver (it provides libcuda.so.1) on a machine with an "
    "NVIDIA GPU, or use another backend (HLORT_PLATFORMS=cpu); compiling with "
    "`hlort compile --platform cuda --target sm_90` works without one"
)


def chosen_driver() -> str:
    """The driver binding ``HLORT_CUDA_DRIVER`` names (default cuda-bindings)."""
    name = os.environ.get(DRIVER_ENV, "").strip().lower() or "cuda-bindings"
    return name


def binding_installed(name: str) -> bool:
    module = _MODULES.get(name)
    if module is None:
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing
        return False


def load_libcuda():
    """The driver library, or an OSError saying why it is not there."""
    return ctypes.CDLL(LIBCUDA)


def probe_cuda() -> ProbeResult:
    name = chosen_driver()
    if name not in DRIVERS:
        return ProbeResult.unavailable(
            f"{DRIVER_ENV}={name!r} is not a CUDA driver binding",
            f"use one of {', '.join(DRIVERS)}",
        )
    if not binding_installed(name):
        return ProbeResult.unavailable(
            f"the {name} Python package is not installed", _INSTALL[name]
        )
    try:
        lib = load_libcuda()
    except OSError as err:
        return ProbeResult.unavailable(
            f"no NVIDIA driver: cannot load {LIBCUDA} ({err})", NO_DRIVER_FIX
        )
    status = lib.cuInit(0)
    if status == CUDA_ERROR_NO_DEVICE:
        return ProbeResult.unavailable(
            "the NVIDIA driver sees no GPU (CUDA_ERROR_NO_DEVICE)",
            "check `nvidia-smi` and CUDA_VISIBLE_DEVICES",
        )
    if status != 0:
        return ProbeResult.unavailable(
            f"cuInit failed with CUDA error {status}",
            "check `nvidia-smi`; the driver may need a reboot or a newer version",
        )
    count = ctypes.c_int(0)
    status = lib.cuDeviceGetCount(ctypes.byref(count))
    if status != 0 or count.value < 1:
        return ProbeResult.unavailable(
            "the NVIDIA driver sees no GPU", "check `nvidia-smi` and CUDA_VISIBLE_DEVICES"
        )
    return ProbeResult.ok()
