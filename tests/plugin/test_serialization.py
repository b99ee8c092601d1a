"""Executable serialization: framing, checksums, clear errors; round trips keep the fingerprint."""

import json

import numpy as np
import pytest

from hlort import Builder, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Opcode
from hlort.plugin.api import CompileOptions
from hlort.plugin.base import MAGIC, FrameHeader, frame_executable, unframe_executable
from hlort.plugin.base.serialization import FORMAT_VERSION
from hlort.plugin.interpreter_backend import InterpreterPlugin
from hlort.plugin.versioning import API_VERSION


def header(**kw):
    base = dict(platform="interpreter", platform_version="1", fingerprint="f" * 64, name="m")
    return FrameHeader(**{**base, **kw})


def code_of(blob, platform=None):
    with pytest.raises(HlortError) as info:
        unframe_executable(blob, platform)
    return info.value.code, info.value.message


def test_round_trip_and_json_header():
    blob = frame_executable(header(metadata={"k": [1, 2]}), b"payload\x00bytes")
    assert blob.startswith(MAGIC)
    got, payload = unframe_executable(blob, "interpreter")
    assert payload == b"payload\x00bytes"
    assert got.name == "m" and got.metadata == {"k": [1, 2]} and got.api_version == API_VERSION
    assert got.format_version == FORMAT_VERSION
    head_len = int.from_bytes(blob[8:12], "big")
    assert json.loads(blob[12 : 12 + head_len])["platform"] == "interpreter"  # no pickle


def test_every_single_byte_corruption_is_detected():
    blob = frame_executable(header(), b"HloModule m")
    for i in range(len(MAGIC), len(blob)):
        damaged = bytearray(blob)
        damaged[i] ^= 0x40
        code, message = code_of(bytes(damaged))
        assert code is ErrorCode.DATA_LOSS, (i, message)


def test_truncated_blob_is_data_loss():
    blob = frame_executable(header(), b"x" * 100)
    for cut in (10, 20, len(blob) - 1):
        assert code_of(blob[:cut])[0] is ErrorCode.DATA_LOSS


@pytest.mark.parametrize("blob", [b"", b"\x80\x04\x95pickle", b"HloModule m\nENTRY ..."])
def test_foreign_blobs_are_invalid_argument(blob):
    code, message = code_of(blob)
    assert code is ErrorCode.INVALID_ARGUMENT and "HLORTEXE" in message


def test_wrong_platform_names_both():
    blob = frame_executable(header(platform="tpusim"), b"")
    code, message = code_of(blob, "interpreter")
    assert code is ErrorCode.INVALID_ARGUMENT
    assert "'tpusim'" in message and "'interpreter'" in message


def test_newer_format_and_other_api_major_are_rejected():
    code, message = code_of(frame_executable(header(format_version=FORMAT_VERSION + 1), b""))
    assert code is ErrorCode.INVALID_ARGUMENT and "upgrade hlort" in message
    code, message = code_of(frame_executable(header(api_version=(2, 0)), b""))
    assert code is ErrorCode.INVALID_ARGUMENT and "2.0" in message


def module():
    b = Builder("mul")
    x = b.parameter(shape.array("f32", [4]))
    return b.build(b.op(Opcode.MULTIPLY, (x, x)))


def test_executable_round_trip_keeps_fingerprint_options_and_behaviour():
    client = InterpreterPlugin(device_count=2).create_client()
    exe = client.compile(
        module(), CompileOptions(donated_arguments=(0,), target_options={"opt_level": 2})
    )
    blob = exe.serialize()
    again = client.deserialize_executable(blob)
    assert again.fingerprint() == exe.fingerprint()
    assert again.options.donated_arguments == (0,)
    assert again.options.target_options == {"opt_level": 2}
    x = client.buffer_from_host(np.arange(4, dtype=np.float32), client.devices()[0])
    out = again.execute([[x]])[0][0].to_host().result(10)
    np.testing.assert_array_equal(out, np.arange(4) ** 2)
    damaged = bytearray(blob)
    damaged[len(blob) // 2] ^= 1
    with pytest.raises(HlortError) as info:
        client.deserialize_executable(bytes(damaged))
    assert info.value.code is ErrorCode.DATA_LOSS
    client.close()


def test_fingerprint_is_stable_and_distinguishes_programs():
    client = InterpreterPlugin().create_client()
    a = client.compile(module(), CompileOptions()).fingerprint()
    assert a == client.compile(module(), CompileOptions()).fingerprint()
    b = Builder("add")
    x = b.parameter(shape.array("f32", [4]))
    other = client.compile(b.build(b.op(Opcode.ADD, (x, x))), CompileOptions()).fingerprint()
    assert a != other and len(a) == 64
    client.close()
