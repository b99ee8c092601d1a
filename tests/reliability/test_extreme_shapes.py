"""Outputs that cannot fit are RESOURCE_EXHAUSTED naming the bytes; zero-element arrays run.

An output of terabytes (or past 2^63 bytes) used to escape as NumPy's raw MemoryError/ValueError
on cpu and as INTERNAL on the interpreter. Zero-element shapes with huge other dimensions are
valid programs and must run on every backend, or, when NumPy cannot represent them at all, be
refused at compile time by name.
"""

import re

import numpy as np
import pytest

import hlort
from hlort.errors import ErrorCode, HlortError
from hlort.plugin.base import simple_executable

PLATFORMS = ["cpu", "interpreter", "tpusim"]


def _broadcast(dims: str, dtype: str = "f32") -> str:
    return (
        f"HloModule big\nENTRY e {{\n  p = {dtype}[] parameter(0)\n"
        f"  ROOT b = {dtype}[{dims}] broadcast(p), dimensions={{}}\n}}"
    )


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("count", [2**40, 2**63 - 1])
def test_an_output_larger_than_memory_is_resource_exhausted(platform, count):
    exe = hlort.compile(_broadcast(str(count)), platform)
    with pytest.raises(HlortError) as info:
        exe(np.float32(1))
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED
    assert re.search(r"\d[\d,]{12,} bytes", str(info.value)), info.value  # names the bytes


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_same_holds_through_buffers(platform):
    exe = hlort.compile(_broadcast(str(2**40)), platform)
    arg = hlort.backend(platform).device_put(np.float32(1))
    with pytest.raises(HlortError) as info:
        exe(arg).numpy()
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED


@pytest.mark.parametrize("platform", ["cpu", "interpreter"])  # host-memory devices
def test_the_memory_check_asks_the_os_nothing_per_execute(platform, monkeypatch):
    """The check is on every execute (incl. the cpu NumPy fast path), so the host's memory is
    asked once per process, not per call (and the output bytes summed once, at compile)."""
    exe = hlort.compile(_broadcast("3"), platform)
    exe(np.float32(1))
    calls = []
    monkeypatch.setattr(simple_executable.os, "sysconf", lambda name: calls.append(name) or 1)
    for _ in range(3):
        np.testing.assert_array_equal(exe(np.float32(2)), np.full(3, 2, np.float32))
        exe(hlort.backend(platform).device_put(np.float32(2))).numpy()
    assert calls == []


def test_an_intermediate_the_interpreter_cannot_allocate_is_resource_exhausted():
    text = """HloModule big
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[] parameter(0)
  b = f32[1099511627776] broadcast(p), dimensions={}
  z = f32[] constant(0)
  ROOT r = f32[] reduce(b, z), dimensions={0}, to_apply=add
}"""
    exe = hlort.compile(text, "interpreter")
    with pytest.raises(HlortError) as info:
        exe(np.float32(1))
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED and "TiB" in str(info.value)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype,big", [("s8", 2**61), ("f32", 2**40), ("c128", 2**50)])
def test_zero_element_arrays_of_huge_declared_dims_run(platform, dtype, big):
    text = (
        f"HloModule z\nENTRY e {{\n  p = {dtype}[0,{big}] parameter(0)\n"
        f"  n = {dtype}[0,{big}] negate(p)\n  t = {dtype}[{big},0] transpose(n), "
        f"dimensions={{1,0}}\n  q = {dtype}[] parameter(1)\n"
        f"  b = {dtype}[3,0,{big}] broadcast(q), dimensions={{}}\n"
        f"  ROOT r = ({dtype}[{big},0], {dtype}[3,0,{big}]) tuple(t, b)\n}}"
    )
    exe = hlort.compile(text, platform)
    np_type = exe.input_shapes[0].dtype.numpy
    transposed, broadcast = exe(np.zeros((0, big), np_type), np_type.type(2))
    assert transposed.shape == (big, 0) and transposed.dtype == np_type
    assert broadcast.shape == (3, 0, big)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_zero_element_shape_numpy_cannot_hold_is_refused_by_name(platform):
    text = _broadcast(f"{2**63 - 1},0")
    with pytest.raises(HlortError) as info:
        hlort.compile(text, platform)
    assert info.value.code is ErrorCode.UNIMPLEMENTED
    assert "f32[9223372036854775807,0]" in str(info.value) and "NumPy" in str(info.value)


def test_a_zero_element_stablehlo_program_runs():
    big, empty = "tensor<4611686018427387904xi8>", "tensor<0x4611686018427387904xi8>"
    text = f"""func.func @main(%arg0: {empty}) -> {big} {{
  %0 = stablehlo.constant dense<0> : tensor<i8>
  %1 = stablehlo.reduce(%arg0 init: %0) applies stablehlo.add across dimensions = [0]
      : ({empty}, tensor<i8>) -> {big}
  return %1 : {big}
}}"""
    exe = hlort.compile(text, "interpreter")
    with pytest.raises(HlortError) as info:  # the reduced output really is 4 EiB
        exe(np.zeros((0, 2**62), np.int8))
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED
