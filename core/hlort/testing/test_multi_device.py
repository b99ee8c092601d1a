"""Copies between devices and execution on a device other than the first (skipped with one
device)."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import dtypes
from hlort.errors import ErrorCode, HlortError
from hlort.plugin.options import CompileOptions
from hlort.testing.programs import axpy, axpy_reference
from hlort.testing.session import TIMEOUT_S
from hlort.testing.values import mixed, rng_for


@pytest.mark.parametrize(
    "dt", [dtypes.F32, dtypes.S64, dtypes.BF16, dtypes.PRED, dtypes.C64], ids=lambda d: d.name
)
def test_copy_between_devices(hlort_session, hlort_second_device, hlort_require, dt) -> None:
    hlort_require("copy_to_device")
    if hlort_session.profile.unsupported_reason(f"dtype:{dt.name}"):
        pytest.skip(f"dtype {dt.name} is declared unsupported")
    data = mixed(dt, (3, 7), rng_for(f"copy-{dt.name}"))
    (src,) = hlort_session.put([data])
    dst = src.copy_to_device(hlort_second_device)
    assert dst.device is hlort_second_device
    assert dst.shape == src.shape
    back = dst.to_host().result(TIMEOUT_S)
    assert back.tobytes() == data.tobytes(), "the copy must be bit-identical"
    src.delete()  # the copy must not depend on the source
    assert dst.to_host().result(TIMEOUT_S).tobytes() == data.tobytes()
    dst.delete()


def test_copy_to_the_same_device(hlort_session, hlort_require) -> None:
    hlort_require("copy_to_device")
    data = np.arange(10, dtype=np.int32)
    (src,) = hlort_session.put([data])
    try:
        dst = src.copy_to_device(hlort_session.device)
    except HlortError as err:
        assert err.code is ErrorCode.UNIMPLEMENTED
        pytest.skip("copy_to_device onto the same device is not implemented (optional)")
    assert dst.to_host().result(TIMEOUT_S).tobytes() == data.tobytes()
    for buf in (src, dst):
        buf.delete()


def test_execute_on_the_second_device(hlort_session, hlort_second_device, hlort_require) -> None:
    hlort_require("multi_device")
    options = CompileOptions(device_assignment=((hlort_second_device.id,),))
    exe = hlort_session.compile(axpy(), options=options)
    assert list(exe.addressable_devices()) == [hlort_second_device]
    inputs = [np.float32(2), np.arange(8, dtype=np.float32), np.ones(8, np.float32)]
    (got,) = hlort_session.run(exe, inputs, hlort_second_device)
    np.testing.assert_allclose(got, axpy_reference(*inputs), rtol=1e-6)
    args = hlort_session.put(inputs)  # on device 0: the wrong device
    with pytest.raises(HlortError) as info:
        exe.execute([args])
    assert info.value.code is ErrorCode.INVALID_ARGUMENT, f"got {info.value.code.name}"
    for buf in args:
        buf.delete()
