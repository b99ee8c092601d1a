"""AMDGPU object -> loadable code object (HSACO), with LLVM's linker.

llvmlite has no linker, and HIP loads only linked code objects (``hipModuleLoadData`` takes
an ELF shared object), so hlort runs ``ld.lld -shared``. Which ld.lld links which code object
version (measured on Debian 12): lld 14 links v4 only, lld 16 v4 and v5, lld 19 all three;
older ones stop with ``unknown abi version``. ``$HLORT_ROCM_LLD`` names one explicitly.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hlort.errors import Internal
from hlort_rocm.llvm_tools import LlvmTool, find_tool

LINKER_PACKAGE = "lld-19"
MIN_LLD_MAJOR = {4: 14, 5: 16, 6: 19}  # code object version -> oldest lld that links it
LINK_TIMEOUT_S = 120


def find_linker(code_object_version: int) -> LlvmTool:
    """The ld.lld that links this code object version; UNAVAILABLE naming lld-19 if none."""
    return find_tool(
        "ld.lld",
        min_major=MIN_LLD_MAJOR[code_object_version],
        env="HLORT_ROCM_LLD",
        package=LINKER_PACKAGE,
        purpose=f"linking an AMDGPU code object v{code_object_version}",
    )


def link_code_object(linker: LlvmTool, object_code: bytes, name: str = "kernels") -> bytes:
    """``ld.lld -shared`` of one AMDGPU object; INTERNAL with lld's message on failure."""
    with tempfile.TemporaryDirectory(prefix="hlort-rocm-") as tmp:
        obj, out = Path(tmp, "kernels.o"), Path(tmp, "kernels.hsaco")
        obj.write_bytes(object_code)
        try:
            command = [linker.path, "-shared", "-o", str(out), str(obj)]
            run = subprocess.run(command, capture_output=True, text=True, timeout=LINK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Internal(f"{linker.path} did not link {name} in {LINK_TIMEOUT_S} s") from None
        if run.returncode != 0 or not out.exists():
            raise Internal(
                f"{linker.path} -shared failed on {name} (exit {run.returncode}): "
                f"{run.stderr.strip()[:2000]}"
            )
        return out.read_bytes()
