"""The framing of serialized executables: self-describing, checksummed, never pickled.

Layout (all integers big-endian)::

    b"HLORTEXE"  8 bytes magic
    u32          length of the header
    header       UTF-8 JSON: format_version, platform, platform_version, api_version,
                 fingerprint, name, payload_size, metadata
    payload      the plugin's bytes (the interpreter stores HLO text)
    sha256       32 bytes over everything before it

Errors: not a frame at all (bad magic, a foreign blob) -> INVALID_ARGUMENT; damaged (checksum,
truncation, bad header) -> DATA_LOSS; a frame for another platform, a newer format or another API
major -> INVALID_ARGUMENT naming both sides.
"""

from __future__ import annotations

import struct
from dataclasses import field
from typing import Any

from hlort.errors import DataLoss, InvalidArgument
from hlort.lazy_dataclass import dataclass
from hlort.plugin.versioning import API_VERSION, format_version
from hlort.sha256 import sha256

MAGIC = b"HLORTEXE"
FORMAT_VERSION = 1
_DIGEST = 32
_LEN = struct.Struct(">I")


@dataclass(frozen=True)
class FrameHeader:
    platform: str
    platform_version: str
    fingerprint: str
    name: str
    api_version: tuple[int, int] = API_VERSION
    format_version: int = FORMAT_VERSION
    metadata: dict[str, Any] = field(default_factory=dict)


def frame_executable(header: FrameHeader, payload: bytes) -> bytes:
    """Wrap ``payload`` with ``header`` and a checksum."""
    if not isinstance(payload, (bytes, bytearray)):
        raise InvalidArgument(f"payload must be bytes, got {type(payload).__name__}")
    doc = {
        "format_version": header.format_version,
        "platform": header.platform,
        "platform_version": header.platform_version,
        "api_version": list(header.api_version),
        "fingerprint": header.fingerprint,
        "name": header.name,
        "payload_size": len(payload),
        "metadata": header.metadata,
    }
    import json  # imported while a first compile's LLVM runs (hlort_cpu.codegen.jit)

    head = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    body = MAGIC + _LEN.pack(len(head)) + head + bytes(payload)
    return body + sha256(body).digest()


def unframe_executable(blob: bytes, platform: str | None = None) -> tuple[FrameHeader, bytes]:
    """Check and split a frame; ``platform`` (when given) must match the one it was made for."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise InvalidArgument(f"a serialized executable is bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    if not blob.startswith(MAGIC):
        raise InvalidArgument(
            "not a serialized hlort executable (it does not start with b'HLORTEXE'); pass the "
            "bytes Executable.serialize() returned"
        )
    if len(blob) < len(MAGIC) + _LEN.size + _DIGEST:
        raise DataLoss(f"serialized executable is truncated ({len(blob)} bytes)")
    body, digest = blob[:-_DIGEST], blob[-_DIGEST:]
    if sha256(body).digest() != digest:
        raise DataLoss("serialized executable is corrupted (checksum mismatch); serialize it again")
    (head_len,) = _LEN.unpack_from(body, len(MAGIC))
    start = len(MAGIC) + _LEN.size
    try:
        import json

        doc = json.loads(body[start : start + head_len].decode())
        payload = body[start + head_len :]
        header = FrameHeader(
            platform=str(doc["platform"]),
            platform_version=str(doc["platform_version"]),
            fingerprint=str(doc["fingerprint"]),
            name=str(doc["name"]),
            api_version=(int(doc["api_version"][0]), int(doc["api_version"][1])),
            format_version=int(doc["format_version"]),
            metadata=dict(doc.get("metadata") or {}),
        )
        size = int(doc["payload_size"])
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as exc:
        raise DataLoss(f"serialized executable has a malformed header: {exc}") from None
    if header.format_version > FORMAT_VERSION:
        raise InvalidArgument(
            f"serialized executable uses format version {header.format_version}; this hlort "
            f"reads up to version {FORMAT_VERSION}; upgrade hlort"
        )
    if size != len(payload):
        raise DataLoss(f"serialized executable payload is {len(payload)} bytes, header says {size}")
    if header.api_version[0] != API_VERSION[0]:
        raise InvalidArgument(
            f"serialized executable was made with plugin API {format_version(header.api_version)}"
            f"; this hlort implements {format_version(API_VERSION)}; compile the module again"
        )
    if platform is not None and header.platform != platform:
        raise InvalidArgument(
            f"serialized executable {header.name!r} was compiled for platform "
            f"{header.platform!r} and cannot be loaded on {platform!r}; deserialize it with "
            f"hlort.backend({header.platform!r}) or compile the module for {platform!r}"
        )
    return header, payload
