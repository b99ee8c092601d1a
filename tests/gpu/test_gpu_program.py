"""The GPU program plan round-trips through its pickle-free form and rejects bad blobs, and
blobs of another format version with that reason."""

import dataclasses
import struct

import pytest

from hlort.codegen.gpu.program import (
    _CLASSES,
    FORMAT_VERSION,
    PROGRAM_MAGIC,
    BufferSlot,
    Copy,
    GemmSpec,
    GpuProgram,
    HostFallback,
    KernelInfo,
    KernelLaunch,
    LibraryCall,
    _bytes_to_array,
    _with_bytes_as,
)
from hlort.errors import HlortError
from hlort.ir.module_codec import encode_value


def _program() -> GpuProgram:
    slots = [
        BufferSlot(0, "parameter", 64, 256, "f32", (4, 4), parameter_number=0, label="p0"),
        BufferSlot(1, "constant", 4, 256, "f32", (), constant=b"\x00\x00\x80?", label="c"),
        BufferSlot(2, "temp", 64, 256, "f32", (4, 4), offset=0, label="t"),
        BufferSlot(3, "output", 64, 256, "f32", (4, 4), offset=256, label="out"),
    ]
    steps = [
        LibraryCall("gemm", (0, 0, 2), GemmSpec(4, 4, 4, 1, "f32", "f32", "f32"), "dot"),
        KernelLaunch("k0", (1, 1, 1), (128, 1, 1), 512, (2, 1, 3), "fusion"),
        HostFallback("sort.1", "sort", "no GPU sort yet", b"HLORTVAL1\x00", (3,), (2,)),
        Copy(2, 3, 64, label="copy"),
    ]
    return GpuProgram(
        "m",
        "sm_90",
        "nvptx64-nvidia-cuda",
        "ptx",
        "; ir",
        b".version 8.0\x00",
        [KernelInfo("k0", "elementwise", 3)],
        slots,
        steps,
        [0],
        [3],
        False,
        512,
        donation={0: 0},
    )


def test_round_trip_keeps_every_field():
    program = _program()
    back = GpuProgram.from_bytes(program.to_bytes())
    assert back == program
    assert isinstance(back.binary, bytes) and back.slots[1].constant == b"\x00\x00\x80?"
    assert back.stats() == {
        "kernels": 1,
        "launches": 1,
        "library_calls": 1,
        "host_fallbacks": 1,
        "copies": 1,
    }
    assert [f.instruction for f in back.fallbacks] == ["sort.1"]


def test_damaged_blob_is_rejected():
    data = _program().to_bytes()
    with pytest.raises(HlortError, match="recompile"):
        GpuProgram.from_bytes(data[:20])


def test_step_naming_a_missing_slot_is_rejected():
    program = _program()
    program.steps.append(Copy(2, 9, 4))
    with pytest.raises(HlortError, match="outside"):
        GpuProgram.from_bytes(program.to_bytes())


def test_blob_starts_with_the_magic_and_the_format_version():
    data = _program().to_bytes()
    head = len(PROGRAM_MAGIC)
    assert data.startswith(PROGRAM_MAGIC) and FORMAT_VERSION == 3
    assert struct.unpack_from("<I", data, head) == (FORMAT_VERSION,)


def test_a_newer_format_is_refused_as_such_before_its_body_is_read():
    """A newer hlort's blob may hold steps this one has no class for: the header's version is
    the error, not a decoding failure."""
    data = _program().to_bytes()
    head = len(PROGRAM_MAGIC)
    newer = data[:head] + struct.pack("<I", FORMAT_VERSION + 1) + b"steps of the future"
    with pytest.raises(HlortError, match=f"format {FORMAT_VERSION + 1}, this hlort reads") as err:
        GpuProgram.from_bytes(newer)
    assert err.value.code.name == "INVALID_ARGUMENT" and "recompile" in str(err.value)


def test_a_format_1_blob_without_header_is_refused_with_its_version():
    """Format 1 (before HostBranch steps and complex gemms) had no header: its version is read
    from the decoded body and refused, with the fix."""
    old = dataclasses.replace(_program(), version=1)
    legacy = encode_value(_with_bytes_as(old, _bytes_to_array), _CLASSES)
    with pytest.raises(HlortError, match="format 1, this hlort reads format 3 only; recompile"):
        GpuProgram.from_bytes(legacy)


def test_a_body_disagreeing_with_its_header_is_damage():
    old = dataclasses.replace(_program(), version=1)
    body = old.to_bytes()[len(PROGRAM_MAGIC) + 4 :]
    forged = PROGRAM_MAGIC + struct.pack("<I", FORMAT_VERSION) + body
    with pytest.raises(HlortError, match="damaged"):
        GpuProgram.from_bytes(forged)


def test_a_format_2_blob_is_refused_with_its_version():
    """Format 2 had no LaunchId steps (replica-id and partition-id were host fallbacks)."""
    data = dataclasses.replace(_program(), version=2).to_bytes()
    with pytest.raises(HlortError, match="format 2, this hlort reads format 3 only; recompile"):
        GpuProgram.from_bytes(data)
