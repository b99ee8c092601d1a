"""CUDA driver errors (CUresult codes) as HlortErrors with PJRT codes, the driver's name and a fix.

Shared by both driver bindings (cuda-bindings and pycuda report the same CUresult numbers).
"""

from __future__ import annotations

from hlort.errors import HlortError, Internal, InvalidArgument, NotFound, Unavailable
from hlort.plugin.base.gpu_driver import GpuOutOfMemory

_OUT_OF_MEMORY = {2}
_UNAVAILABLE = {3, 4, 34, 46, 100, 101, 803, 804}  # not initialized, deinitialized, stub
# library, device unavailable, no device, invalid device, driver mismatch, compat not supported
_BAD_IMAGE = {200, 209, 218, 221, 222, 224}  # invalid image, no binary for GPU, invalid PTX,
# JIT compiler not found, unsupported PTX version, unsupported exec affinity
_NOT_FOUND = {500}
_KERNEL_FAULT = {700, 701, 702, 714, 715, 716, 717, 718, 719, 720}  # illegal address, launch
# out of resources / timeout, hardware stack error, illegal instruction, misaligned address,
# invalid address space, invalid pc, launch failed, cooperative launch too large

_FIXES = {
    "out_of_memory": "delete buffers you no longer need, or use smaller shapes",
    "unavailable": "check `nvidia-smi`, CUDA_VISIBLE_DEVICES and that the driver matches the "
    "kernel module (a reboot after a driver update)",
    "bad_image": "update the NVIDIA driver (its PTX JIT must know the PTX ISA version the "
    "compiler wrote) or compile for an older target (--target / the client option "
    "`target`)",
    "kernel_fault": "the CUDA context is now unusable: restart the process; report the module "
    "to hlort with HLORT_FALLBACK=allow output and the dump (--dump-dir)",
}


def cuda_error(call: str, code: int, name: str) -> HlortError:
    """The HlortError for CUresult ``code`` (named ``name``) returned by ``call``."""
    what = f"{call} failed: {name} ({code})"
    if code in _OUT_OF_MEMORY:
        return GpuOutOfMemory(f"{what}; fix: {_FIXES['out_of_memory']}")
    if code in _UNAVAILABLE:
        return Unavailable(f"{what}; fix: {_FIXES['unavailable']}")
    if code in _BAD_IMAGE:
        return InvalidArgument(f"{what}; fix: {_FIXES['bad_image']}")
    if code in _NOT_FOUND:
        return NotFound(f"{what}: the loaded module has no such kernel; recompile it")
    if code in _KERNEL_FAULT:
        return Internal(f"{what}; fix: {_FIXES['kernel_fault']}")
    return Internal(f"{what}")
