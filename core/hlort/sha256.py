"""SHA-256 for cache keys, fingerprints and checksums, without OpenSSL's start-up cost.

``import hashlib`` loads OpenSSL's libcrypto and lists every digest it provides (~11M
instructions, callgrind): a fresh process's first compile paid that to hash a few kilobytes of
keys. CPython's own SHA-256 (``_sha256``; ``_sha2`` from 3.12) gives the same digests with no
start-up, but ~4x slower per byte (166 vs 659 MB/s measured on an AVX-512 Xeon), so an input of
:data:`LARGE` bytes or more (big constants, serialized executables), or a hash object that is
told it will get that much (``expect``), is OpenSSL's through :mod:`hashlib`.
"""

from __future__ import annotations

import sys

LARGE = 1 << 20

try:  # CPython's built-in module (no OpenSSL); a failed import searches every path entry
    if sys.version_info >= (3, 12):
        from _sha2 import sha256 as _builtin_sha256
    else:
        from _sha256 import sha256 as _builtin_sha256
except ImportError:  # another interpreter: hashlib's is the only one
    _builtin_sha256 = None


def sha256(data: bytes = b"", *, expect: int = 0):
    """A SHA-256 hash object (``hashlib``'s interface) started with ``data``; ``expect`` is how
    many bytes will be hashed in all, when more are to come through ``update``."""
    if _builtin_sha256 is None or max(len(data), expect) >= LARGE:
        import hashlib

        return hashlib.sha256(data)
    return _builtin_sha256(data)
