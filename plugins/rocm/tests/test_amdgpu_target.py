"""The AMDGPU target table and its checks of user input."""

import pytest

from hlort.errors import ErrorCode, HlortError
from hlort_rocm.amdgpu_target import code_object_version, gfx_target


def test_targets_by_name_and_by_hip_arch_name():
    assert gfx_target("gfx942").wavefront_size == 64
    assert gfx_target("gfx90a:sramecc+:xnack-").name == "gfx90a"  # hipDeviceProp_t.gcnArchName
    assert gfx_target("GFX942").isa_name == "amdgcn-amd-amdhsa--gfx942"


@pytest.mark.parametrize("bad", ["gfx1100", "sm_90", "", "gfx"])
def test_unknown_target_is_invalid_argument_listing_the_known_ones(bad):
    with pytest.raises(HlortError) as info:
        gfx_target(bad)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "gfx90a" in info.value.message and "gfx942" in info.value.message


@pytest.mark.parametrize("bad", [3, 7, "five", None])
def test_code_object_version_is_4_5_or_6(bad):
    assert [code_object_version(v) for v in (4, "5", 6)] == [4, 5, 6]
    with pytest.raises(HlortError) as info:
        code_object_version(bad)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
