"""Serialized executables are untrusted input: damage is rejected, forgeries never run.

tpusim used to run the device program stored in a blob as is, so editing it and recomputing the
frame's plain SHA-256 was accepted (a tanh program labelled exponential, a loop count of 2^31
that runs for ever, an empty program escaping as AttributeError). Now the program is re-derived
from the HLO and a blob whose program differs is DATA_LOSS. Random byte flips and truncations of
every backend's blobs are all rejected with an HlortError.
"""

import hashlib
import json
import os
import re
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlort
from hlort.errors import ErrorCode, HlortError

PROGRAM = """HloModule ser
ENTRY main {
  a = f32[8,8] parameter(0)
  b = f32[8,8] parameter(1)
  d = f32[8,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[8,8] tanh(d)
}"""
EXAMPLES = int(os.environ.get("HLORT_FUZZ_EXAMPLES", "200"))
A = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)


def _split(blob: bytes):
    (length,) = struct.unpack_from(">I", blob, 8)
    return json.loads(blob[12 : 12 + length]), json.loads(blob[12 + length : -32])


def _reframe(head: dict, doc) -> bytes:
    """A frame around ``doc`` with a freshly computed checksum, as a forger would write it."""
    payload = json.dumps(doc).encode()
    header = json.dumps(
        dict(head, payload_size=len(payload)), sort_keys=True, separators=(",", ":")
    ).encode()
    body = b"HLORTEXE" + struct.pack(">I", len(header)) + header + payload
    return body + hashlib.sha256(body).digest()


@pytest.fixture(scope="module")
def tpusim_blob():
    return hlort.compile(PROGRAM, "tpusim").serialize()


def test_a_genuine_tpusim_blob_round_trips(tpusim_blob):
    again = hlort.backend("tpusim").deserialize(tpusim_blob)
    np.testing.assert_allclose(again(A, A), np.tanh(A @ A), atol=0.05)


def _forgeries(blob):
    head, doc = _split(blob)
    yield "hlo edited", dict(doc, hlo=doc["hlo"].replace("tanh(", "exponential("))
    yield "empty program", dict(doc, program=[])
    yield "program of another type", dict(doc, program={"kernels": 3})
    text = json.dumps(doc["program"])
    for m in re.finditer(r'"(count|offset|size|bytes)": (\d+)', text):
        forged = text[: m.start(2)] + str(2**31) + text[m.end(2) :]
        yield f"{m.group(1)} at {m.start()}", dict(doc, program=json.loads(forged))


def test_forged_tpusim_blobs_are_data_loss_and_never_run(tpusim_blob):
    head, _ = _split(tpusim_blob)
    seen = 0
    for what, doc in _forgeries(tpusim_blob):
        with pytest.raises(HlortError) as info:
            hlort.backend("tpusim").deserialize(_reframe(head, doc))
        assert info.value.code is ErrorCode.DATA_LOSS, what
        seen += 1
    assert seen >= 4


@pytest.fixture(scope="module")
def blobs():
    return {p: hlort.compile(PROGRAM, p).serialize() for p in ("cpu", "tpusim", "interpreter")}


@pytest.mark.parametrize("platform", ["cpu", "tpusim", "interpreter"])
def test_random_byte_flips_and_truncations_are_all_rejected(blobs, platform):
    blob = blobs[platform]
    backend = hlort.backend(platform)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(st.data())
    def check(data):
        damage = data.draw(st.sampled_from(["flip", "truncate"]))
        if damage == "flip":
            pos = data.draw(st.integers(0, len(blob) - 1))
            bit = data.draw(st.integers(0, 7))
            bad = bytearray(blob)
            bad[pos] ^= 1 << bit
        else:
            bad = blob[: data.draw(st.integers(0, len(blob) - 1))]
        with pytest.raises(HlortError) as info:
            backend.deserialize(bytes(bad))
        assert info.value.code in (ErrorCode.DATA_LOSS, ErrorCode.INVALID_ARGUMENT)

    check()
