"""CpuExecutable.execute_host: every output is the caller's own array, even where the program
returns an input (or a view of it), a constant, or one value twice."""

import numpy as np
import pytest

import hlort
from hlort import Builder, shape


def _sharing_module():
    """x: f32[2,3] -> (reshape(x), constant, x + x, x + x, x)."""
    b = Builder("sharing")
    x = b.parameter(shape.array("f32", [2, 3]))
    doubled = b.add(x, x)
    constant = b.constant(np.array([1, 2, 3], np.float32))
    return b.build(b.tuple([b.reshape(x, [6]), constant, doubled, doubled, x]))


@pytest.fixture(scope="module")
def sharing():
    return hlort.compile(_sharing_module(), "cpu")


def _check_own(outputs, x):
    x0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(outputs[0], x0.reshape(6))
    np.testing.assert_array_equal(outputs[1], [1, 2, 3])
    np.testing.assert_array_equal(outputs[2], x0 + x0)
    np.testing.assert_array_equal(outputs[3], x0 + x0)
    np.testing.assert_array_equal(outputs[4], x0)
    for i, out in enumerate(outputs):
        assert not np.may_share_memory(out, x), f"output {i} shares the argument's memory"
        for j in range(i):
            assert not np.may_share_memory(out, outputs[j]), f"outputs {j} and {i} share memory"


def test_execute_host_outputs_share_nothing(sharing):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    outputs = sharing.raw.execute_host([x])
    _check_own(outputs, x)
    for out in outputs:
        out[...] = -1  # must change neither the argument nor the program's constant
    np.testing.assert_array_equal(x, np.arange(6).reshape(2, 3))
    _check_own(sharing.raw.execute_host([x]), x)


def test_calling_with_arrays_and_with_buffers_gives_own_outputs(sharing):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _check_own(sharing(x), x)
    buf = hlort.device_put(x, sharing.device)
    outs = [np.asarray(o) for o in sharing(buf)]
    _check_own(outs, x)
    storages = [o.raw.storage_now() for o in sharing(buf)]
    for i, s in enumerate(storages):
        assert not np.may_share_memory(s, buf.raw.storage_now())
        assert not any(np.may_share_memory(s, t) for t in storages[:i])
