"""The probe without ROCm: unavailable, saying what is missing and how to fix it; nothing
raises and nothing crashes."""

import pytest

from hlort_rocm import RocmPlugin
from hlort_rocm.probe import hip_library_path
from hlort_rocm.runtime_messages import NO_RUNTIME


@pytest.mark.skipif(hip_library_path() is not None, reason="this machine has a HIP runtime")
def test_without_the_hip_runtime_the_probe_names_the_library_and_the_fix():
    result = RocmPlugin().probe()
    assert not result.available
    assert result.reason == NO_RUNTIME == "no ROCm runtime (libamdhip64.so) found"
    assert "LD_LIBRARY_PATH" in result.fix and "--target gfx942" in result.fix
