"""Can a ROCm client start here? Cheap checks, in the order a user fixes them.

1. the HIP runtime library (``libamdhip64.so``, from ROCm) loads;
2. hip-python (the bindings hlort calls it through) is installed; it imports without ROCm,
   and its calls raise ``RuntimeError: failed to dlopen libamdhip64.so`` there, which is why
   the library is checked first, by itself;
3. the runtime sees at least one AMD GPU.

Compiling needs none of this (``hlort compile --platform rocm --target gfx942``).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os

from hlort.lazy_dataclass import dataclass
from hlort_rocm.runtime_messages import (
    BINDINGS_FIX,
    HIP_LIBRARY,
    NO_BINDINGS,
    NO_RUNTIME,
    RUNTIME_FIX,
)


@dataclass(frozen=True)
class RuntimeProbe:
    ok: bool
    reason: str = ""
    fix: str = ""
    device_count: int = 0
    library: str = ""


def hip_library_path() -> str | None:
    """The HIP runtime library that loads here (by soname, then under $ROCM_PATH), or None."""
    rocm = os.environ.get("ROCM_PATH", "/opt/rocm")
    for name in (HIP_LIBRARY, f"{rocm}/lib/{HIP_LIBRARY}"):
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return name
    return None


def probe_runtime() -> RuntimeProbe:
    library = hip_library_path()
    if library is None:
        return RuntimeProbe(False, NO_RUNTIME, RUNTIME_FIX)
    if importlib.util.find_spec("hip") is None:
        return RuntimeProbe(False, NO_BINDINGS, BINDINGS_FIX, library=library)
    from hlort_rocm.hip_driver import HipDriver  # imports hip-python

    try:
        count = HipDriver().device_count()
    except Exception as err:  # noqa: BLE001 - a driver that does not start is "unavailable"
        return RuntimeProbe(
            False,
            f"the HIP runtime did not start: {err}",
            "check the ROCm installation with rocminfo",
            library=library,
        )
    if count == 0:
        return RuntimeProbe(
            False,
            "the HIP runtime sees no AMD GPU",
            "check rocminfo and HIP_VISIBLE_DEVICES",
            library=library,
        )
    return RuntimeProbe(True, device_count=count, library=library)
