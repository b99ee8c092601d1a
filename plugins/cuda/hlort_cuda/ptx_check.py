"""Checking PTX offline with NVIDIA's ``ptxas``: does the assembler accept it, does it spill?

No GPU and no driver are needed: ``ptxas`` assembles PTX for a named architecture and, with
``-v``, reports per kernel the registers, the stack frame and the spill stores and loads. It is
found at ``HLORT_PTXAS`` (a path), on ``PATH``, in ``/usr/local/cuda/bin``, or in NVIDIA's
``nvidia-cuda-nvcc`` wheel (``nvidia/cu13/bin`` for CUDA 13, ``nvidia/cuda_nvcc/bin`` for CUDA
12), which the plugin's ``ptxas`` test extra installs: ``pip install "hlort-cuda[ptxas]"``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ENV_VAR = "HLORT_PTXAS"
_INSTALL_HINT = (
    "install NVIDIA's assembler with `pip install nvidia-cuda-nvcc` (the "
    "hlort-cuda[ptxas] extra), or set HLORT_PTXAS to a ptxas binary"
)


def find_ptxas() -> str | None:
    """The ptxas to use, or None when there is none (see the module docstring for the order)."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        return explicit if Path(explicit).is_file() else None
    found = shutil.which("ptxas")
    if found:
        return found
    candidates = [Path("/usr/local/cuda/bin/ptxas")]
    try:
        import nvidia  # the namespace package NVIDIA's wheels install into

        for root in getattr(nvidia, "__path__", []):
            candidates += [
                Path(root) / "cu13" / "bin" / "ptxas",
                Path(root) / "cuda_nvcc" / "bin" / "ptxas",
            ]
    except ImportError:
        pass
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


def missing_ptxas_reason() -> str:
    return f"no ptxas found: {_INSTALL_HINT}"


@dataclass(frozen=True)
class KernelUsage:
    name: str
    registers: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    shared_bytes: int = 0

    @property
    def spills(self) -> bool:
        return bool(self.spill_stores or self.spill_loads)


@dataclass
class PtxasResult:
    arch: str
    accepted: bool
    log: str
    kernels: dict[str, KernelUsage] = field(default_factory=dict)

    def spilling(self) -> list[str]:
        return [k for k, u in self.kernels.items() if u.spills]


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_verbose_list(log: str) -> list[KernelUsage]:
    """Per-kernel usage from ``ptxas -v`` output, in the order ptxas compiled the kernels."""
    usage: list[dict] = []
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            usage.append({"name": m.group(1)})
            continue
        if not usage:
            continue
        m = _FRAME.search(line)
        if m:
            usage[-1].update(
                stack_bytes=int(m.group(1)),
                spill_stores=int(m.group(2)),
                spill_loads=int(m.group(3)),
            )
        m = _USED.search(line)
        if m:
            usage[-1]["registers"] = int(m.group(1))
            if m.group(2):
                usage[-1]["shared_bytes"] = int(m.group(2))
    return [KernelUsage(**u) for u in usage]


def parse_verbose(log: str) -> dict[str, KernelUsage]:
    """Per-kernel usage from ``ptxas -v`` output of one PTX file."""
    return {u.name: u for u in parse_verbose_list(log)}


_ENTRY_DECL = re.compile(rb"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s", re.MULTILINE)


def run_ptxas_many(
    ptx_by_label: dict[str, bytes], arch: str, ptxas: str | None = None, chunk: int = 48
) -> dict[str, PtxasResult]:
    """``run_ptxas`` for many PTX files, ``chunk`` per ptxas process (one process per file costs
    more than assembling it); a chunk that fails is assembled file by file to say which."""
    exe = ptxas or find_ptxas()
    if exe is None:
        raise FileNotFoundError(missing_ptxas_reason())
    labels = list(ptx_by_label)
    results: dict[str, PtxasResult] = {}
    for start in range(0, len(labels), chunk):
        group = labels[start : start + chunk]
        with tempfile.TemporaryDirectory(prefix="hlort-ptxas-") as tmp:
            files = []
            for k, label in enumerate(group):
                path = Path(tmp) / f"m{k}.ptx"
                path.write_bytes(ptx_by_label[label])
                files.append(str(path))
            proc = subprocess.run(
                [exe, f"-arch={arch}", "-v", *files, "-o", str(Path(tmp) / "all.o")],
                capture_output=True,
                text=True,
                timeout=600,
            )
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            for label in group:
                results[label] = run_ptxas(ptx_by_label[label], arch, exe)
            continue
        usage = iter(parse_verbose_list(log))
        for label in group:
            count = len(_ENTRY_DECL.findall(ptx_by_label[label]))
            kernels = [next(usage) for _ in range(count)]
            results[label] = PtxasResult(arch, True, "", {u.name: u for u in kernels})
    return results


def run_ptxas(
    ptx: bytes | str, arch: str, ptxas: str | None = None, timeout: float = 300.0
) -> PtxasResult:
    """Assemble ``ptx`` for ``arch`` (``sm_90``) with ``-v``; never raises for a rejection."""
    exe = ptxas or find_ptxas()
    if exe is None:
        raise FileNotFoundError(missing_ptxas_reason())
    data = ptx.encode() if isinstance(ptx, str) else ptx
    with tempfile.TemporaryDirectory(prefix="hlort-ptxas-") as tmp:
        src = Path(tmp) / "kernels.ptx"
        src.write_bytes(data)
        proc = subprocess.run(
            [exe, f"-arch={arch}", "-v", str(src), "-o", str(Path(tmp) / "k.o")],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    log = proc.stdout + proc.stderr
    return PtxasResult(arch, proc.returncode == 0, log, parse_verbose(log))


__all__ = [
    "KernelUsage",
    "PtxasResult",
    "find_ptxas",
    "missing_ptxas_reason",
    "parse_verbose",
    "run_ptxas",
    "run_ptxas_many",
]
