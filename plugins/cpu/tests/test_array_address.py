"""array_address.address gives the data pointer NumPy gives (``a.ctypes.data``) for every kind
of array a kernel's pointer table takes: writable, read-only, views with offsets, transposed,
empty, 0-d, a subclass (the buffer-protocol path); and tuple-output kernels called through the
one-chunk fast path (thunks.KernelThunk.simple) compute what the interpreter computes."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import hlort
from hlort.interpreter.evaluator import evaluate
from hlort.text.parser import parse_module
from hlort_cpu import array_address
from hlort_cpu.array_address import address


class _Tagged(np.ndarray):
    pass


def _arrays():
    base = np.arange(96, dtype=np.float32)
    readonly = np.frombuffer(bytes(64), np.float64)
    yield from [base, base[5:], base[::3], base.reshape(8, 12).T, np.empty(0, np.int8)]
    yield from [np.array(2.5), readonly, readonly[2:], np.zeros((3, 0, 2), np.complex64)]
    yield base.view(_Tagged)[7:]


@pytest.mark.parametrize("a", list(_arrays()), ids=lambda a: f"{type(a).__name__}{a.shape}")
def test_address_is_numpys_data_pointer(a):
    assert address(a) == a.ctypes.data


@pytest.mark.skipif(
    not getattr(sys, "_is_gil_enabled", lambda: True)(), reason="free-threaded header"
)
def test_the_data_field_is_read_directly_on_cpython():
    assert array_address._OFFSET == 16
    assert address is array_address._by_field


TUPLE_FUSION = """HloModule update
fused {
  p = f32[37] parameter(0)
  g = f32[37] parameter(1)
  m = f32[37] parameter(2)
  c = f32[] constant(0.9)
  cb = f32[37] broadcast(c), dimensions={}
  m1 = f32[37] multiply(m, cb)
  m2 = f32[37] add(m1, g)
  p1 = f32[37] subtract(p, m2)
  ROOT t = (f32[37], f32[37]) tuple(p1, m2)
}
ENTRY e {
  p = f32[37] parameter(0)
  g = f32[37] parameter(1)
  m = f32[37] parameter(2)
  ROOT f = (f32[37], f32[37]) fusion(p, g, m), kind=kLoop, calls=fused
}
"""


def test_a_tuple_kernel_takes_the_fast_path_and_matches_the_interpreter():
    exe = hlort.compile(TUPLE_FUSION, "cpu")
    (kernel,) = [s for s, _ in exe.raw.program.schedule if type(s).__name__ == "KernelThunk"]
    assert kernel.is_tuple and kernel.simple
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(37).astype(np.float32) for _ in range(3)]
    args[1][:4] = [np.nan, np.inf, -np.inf, -0.0]
    readonly = np.frombuffer(args[2].tobytes(), np.float32)  # a read-only input too
    reversed_view = args[2][::-1]  # not contiguous: the general path
    for inputs in (args, [args[0], args[1], readonly], [args[0], args[1], reversed_view]):
        got = exe.raw.program.run(list(inputs))
        want = evaluate(parse_module(TUPLE_FUSION), list(inputs))
        for out, ref in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))
    first = exe.raw.program.run(list(args))
    second = exe.raw.program.run(list(args))
    assert all(a is not b for a, b in zip(first, second, strict=True))  # fresh outputs
