"""hlort.sha256 gives hashlib's SHA-256 digests, small inputs without OpenSSL (no hashlib
import: a fresh process's first compile paid ~11M instructions for it), large ones with it."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from hlort import sha256 as module
from hlort.sha256 import LARGE, sha256


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 1000, LARGE - 1, LARGE, LARGE + 7])
def test_digests_equal_hashlib(size):
    data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    h = sha256(expect=size)
    for k in range(0, size, 4099):
        h.update(data[k : k + 4099])
    assert h.digest() == hashlib.sha256(data).digest()
    assert sha256(data).copy().hexdigest() == hashlib.sha256(data).hexdigest()


def test_large_inputs_use_openssl_small_ones_do_not():
    assert module._builtin_sha256 is not None  # CPython: the built-in module exists
    assert type(sha256(b"key")) is type(module._builtin_sha256())
    assert type(sha256(b"x" * LARGE)) is type(hashlib.sha256())
    assert type(sha256(expect=LARGE)) is type(hashlib.sha256())


def test_small_digests_leave_hashlib_unimported():
    code = (
        "import sys\nfrom hlort.sha256 import sha256\n"
        "assert sha256(b'abc').hexdigest().startswith('ba7816bf')\n"
        "print('hashlib' in sys.modules, '_hashlib' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
