"""Finding LLVM's command-line tools (ld.lld, llvm-readelf, llvm-objdump) of a recent enough
release: distributions install them as ``TOOL-N`` on PATH and under ``/usr/lib/llvm-N/bin``,
ROCm under ``$ROCM_PATH/llvm/bin``. The order: the environment variable naming the tool,
``TOOL-N`` on PATH (newest first), ``/usr/lib/llvm-N/bin/TOOL``, ROCm's, plain ``TOOL``; the
first whose ``--version`` is at least the release asked for is used.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache

from hlort.errors import Unavailable

NEWEST_MAJOR, OLDEST_MAJOR = 24, 14
DISTRIBUTION_PREFIX = "/usr/lib"  # where Debian and Ubuntu put llvm-N/bin
_VERSION = re.compile(r"(?:LLD|LLVM version) (\d+)\.")


@dataclass(frozen=True)
class LlvmTool:
    path: str
    major: int


@cache
def tool_major(path: str) -> int | None:
    """The LLVM release of the tool at ``path`` (None when it does not run)."""
    try:
        run = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _VERSION.search(run.stdout)
    return int(match.group(1)) if run.returncode == 0 and match else None


def _candidates(tool: str) -> list[str]:
    found: list[str] = []
    for major in range(NEWEST_MAJOR, OLDEST_MAJOR - 1, -1):
        found += [
            shutil.which(f"{tool}-{major}") or "",
            f"{DISTRIBUTION_PREFIX}/llvm-{major}/bin/{tool}",
        ]
    rocm = os.environ.get("ROCM_PATH", "/opt/rocm")
    found += [f"{rocm}/llvm/bin/{tool}", shutil.which(tool) or ""]
    by_target: dict[str, str] = {}  # one path per binary; kept as named (lld reads argv[0])
    for path in found:
        if path and os.access(path, os.X_OK):
            by_target.setdefault(os.path.realpath(path), path)
    return list(by_target.values())


def find_tool(tool: str, *, min_major: int, env: str, package: str, purpose: str) -> LlvmTool:
    """The first ``tool`` of LLVM ``min_major`` or newer; UNAVAILABLE naming ``package`` and
    ``env`` when there is none (``purpose`` says what it is needed for)."""
    fix = f"install it (Debian/Ubuntu: apt-get install {package}) or set {env} to its path"
    explicit = os.environ.get(env)
    if explicit:
        major = tool_major(explicit)
        if major is None or major < min_major:
            what = "does not run" if major is None else f"is release {major}"
            raise Unavailable(
                f"{env}={explicit} {what}; {purpose} needs {tool} of LLVM >= {min_major}; {fix}"
            )
        return LlvmTool(explicit, major)
    seen = []
    for path in _candidates(tool):
        major = tool_major(path)
        if major is not None and major >= min_major:
            return LlvmTool(path, major)
        seen.append(f"{path} (release {major if major is not None else '?'})")
    found = f"found only {', '.join(seen)}" if seen else f"no {tool} found"
    raise Unavailable(f"{purpose} needs {tool} of LLVM >= {min_major}: {found}; {fix}")
