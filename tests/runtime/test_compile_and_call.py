"""hlort.compile and executables: NumPy in/out, buffers in/out, errors, no per-call recompile."""

import threading

import ml_dtypes
import numpy as np
import pytest

import hlort
from hlort import Builder, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Opcode
from hlort.runtime import Buffer, Executable
from hlort.text.printer import print_module

SUM_AND_PRODUCT = """HloModule sum_prod

ENTRY main {
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  s = f32[3] add(x, y)
  p = f32[3] multiply(x, y)
  ROOT t = (f32[3], f32[3]) tuple(s, p)
}
"""


def scale_module():
    b = Builder("scale")
    x = b.parameter(shape.array("f32", [2, 2]))
    two = b.op(Opcode.BROADCAST, (b.constant(2.0),), shape.array("f32", [2, 2]), dimensions=())
    return b.build(b.op(Opcode.MULTIPLY, (x, two)))


def test_numpy_in_numpy_out_and_tuple_results():
    exe = hlort.compile(SUM_AND_PRODUCT)
    assert isinstance(exe, Executable)
    s, p = exe(np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32))
    assert isinstance(s, np.ndarray) and s.dtype == np.float32
    np.testing.assert_array_equal(s, [5, 7, 9])
    np.testing.assert_array_equal(p, [4, 10, 18])
    single = hlort.compile(scale_module())(np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(single, np.full((2, 2), 2.0))


def test_python_values_are_converted_to_the_parameter_dtype():
    out = hlort.compile(scale_module())([[1, 2], [3, 4]])
    np.testing.assert_array_equal(out, [[2, 4], [6, 8]])


def test_buffers_in_buffers_out_stay_on_the_device():
    exe = hlort.compile(SUM_AND_PRODUCT, device="interpreter:0")
    x = hlort.device_put(np.array([1, 2, 3], np.float32), "interpreter:0")
    y = hlort.device_put(np.array([1, 1, 1], np.float32))
    s, p = exe(x, y)
    assert isinstance(s, Buffer) and str(s.device) == "interpreter:0"
    assert s.shape == (3,) and s.dtype == np.float32
    s2, _ = exe(s, p)  # chain without a host round trip
    np.testing.assert_array_equal(np.asarray(s2), [3, 5, 7])
    assert s2.block_until_ready() is s2 and s2.is_ready()


def test_wrong_argument_count_shape_and_dtype_are_invalid_arguments():
    exe = hlort.compile(SUM_AND_PRODUCT)
    ok = np.zeros(3, np.float32)
    cases = [
        ((ok,), "takes 2 argument"),
        ((ok, np.zeros(4, np.float32)), r"argument 1 of sum_prod must be f32\[3\]"),
        ((ok, np.zeros(3, np.float64)), "got float64"),
        ((ok, [1.0, "x", 3.0]), "cannot be converted"),
    ]
    for args, match in cases:
        with pytest.raises(HlortError, match=match) as info:
            exe(*args)
        assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_compile_verifies_once_and_calls_never_recompile(monkeypatch):
    import hlort.runtime.compile as compile_module

    monkeypatch.setenv("HLORT_CACHE", "0")  # a persistent-cache hit would skip verification

    counts = {"verify": 0, "compile": 0}
    real_verify = compile_module.verify_module

    def counting_verify(module):
        counts["verify"] += 1
        real_verify(module)

    monkeypatch.setattr(compile_module, "verify_module", counting_verify)
    backend = hlort.default_backend()
    real_compile = backend.client.compile

    def counting_compile(module, options):
        counts["compile"] += 1
        return real_compile(module, options)

    monkeypatch.setattr(backend.client, "compile", counting_compile)
    exe = hlort.compile(scale_module())
    for i in range(5):
        exe(np.full((2, 2), i, np.float32))
    assert counts == {"verify": 1, "compile": 1}


def test_the_callers_module_is_not_modified():
    module = scale_module()
    before = print_module(module)
    hlort.compile(module)(np.ones((2, 2), np.float32))
    assert print_module(module) == before


def test_invalid_module_is_rejected_at_compile():
    b = Builder("bad")
    x = b.parameter(shape.array("f32", [2]))
    module = b.build(b.op(Opcode.NEGATE, (x,)))
    module.entry.root.shape = shape.array("f32", [3])  # break it
    with pytest.raises(HlortError) as info:
        hlort.compile(module)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_options_as_mapping_and_dump_dir(tmp_path):
    exe = hlort.compile(scale_module(), options={"debug": {"dump_dir": str(tmp_path)}})
    names = {p.name for p in tmp_path.iterdir()}
    assert "scale.optimized.hlo" in names
    assert "scale.interpreter.interpreted.hlo" in names
    assert "HloModule scale" in exe.as_text()


def test_bf16_round_trip_through_the_interpreter():
    b = Builder("bf")
    x = b.parameter(shape.array("bf16", [4]))
    exe = hlort.compile(b.build(b.op(Opcode.ADD, (x, x))))
    data = np.array([1, 2.5, -3, 0.125], ml_dtypes.bfloat16)
    out = exe(data)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out.astype(np.float32), data.astype(np.float32) * 2)


def test_serialize_and_deserialize_through_the_backend():
    exe = hlort.compile(scale_module())
    again = hlort.default_backend().deserialize(exe.serialize())
    assert again.fingerprint() == exe.fingerprint()
    np.testing.assert_array_equal(again(np.ones((2, 2), np.float32)), np.full((2, 2), 2.0))


def test_optional_features_of_the_interpreter():
    exe = hlort.compile(scale_module())
    assert exe.cost_analysis()["flops"] >= 4
    stats = exe.compiled_memory_stats()
    assert stats.argument_size_in_bytes == 16 and stats.output_size_in_bytes == 16


def test_eight_threads_calling_one_executable():
    exe = hlort.compile(SUM_AND_PRODUCT)
    failures = []
    barrier = threading.Barrier(8)

    def worker(t):
        try:
            barrier.wait(10)
            for i in range(30):
                x = np.full(3, t, np.float32)
                y = np.full(3, i, np.float32)
                s, p = exe(x, y)
                if not (np.array_equal(s, x + y) and np.array_equal(p, x * y)):
                    failures.append((t, i))
        except Exception as err:  # noqa: BLE001
            failures.append(err)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert failures == []


def test_multi_device_executables_use_execute_sharded():
    from hlort.plugin.interpreter_backend import InterpreterPlugin
    from hlort.plugin.registry import default_registry

    class TwoDevices(InterpreterPlugin):
        name = "interp2"

    default_registry().register(TwoDevices(device_count=2))
    backend = hlort.backend("interp2")
    b = Builder("rid")
    exe = backend.compile(b.build(b.op(Opcode.REPLICA_ID, ())), options={"num_replicas": 2})
    with pytest.raises(HlortError, match="execute_sharded"):
        exe()
    outs = exe.execute_sharded([[], []])
    assert [int(np.asarray(o[0])) for o in outs] == [0, 1]
    assert [str(o[0].device) for o in outs] == ["interp2:0", "interp2:1"]


@pytest.mark.parametrize(
    "options, match",
    [
        ({"donated_argumets": (0,)}, r"unknown compile option\(s\) \['donated_argumets'\]"),
        ({"debug": {"dump_dri": "/tmp"}}, r"unknown debug option\(s\) \['dump_dri'\]"),
        ({"donated_arguments": "x"}, "bad compile options"),
        (7, "must be a CompileOptions or a dict"),
    ],
)
def test_bad_options_are_invalid_arguments_not_type_errors(options, match):
    with pytest.raises(HlortError, match=match) as info:
        hlort.compile(scale_module(), options=options)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_options_mapping_accepts_lists_as_json_gives_them():
    exe = hlort.compile(SUM_AND_PRODUCT, options={"donated_arguments": [0]})
    assert exe.raw.donated_argument_indices() == (0,)


@pytest.mark.parametrize("how", ["delete", "donate"])
def test_waiting_for_a_dead_buffer_is_failed_precondition(how):
    buf = hlort.device_put(np.ones(3, np.float32))
    if how == "delete":
        buf.delete()
    else:
        exe = hlort.compile(SUM_AND_PRODUCT, options={"donated_arguments": [0]})
        exe(buf, hlort.device_put(np.ones(3, np.float32)))
    assert buf.is_deleted()
    for use in (buf.block_until_ready, buf.on_device_size_in_bytes, buf.numpy):
        with pytest.raises(HlortError) as info:
            use()
        assert info.value.code is ErrorCode.FAILED_PRECONDITION
        assert buf.raw.name in info.value.message


def test_a_plugin_compile_bug_becomes_internal(monkeypatch):
    backend = hlort.backend("interpreter")

    def broken(module, options):
        raise KeyError("slot 7")

    monkeypatch.setattr(backend.client, "compile", broken)
    with pytest.raises(HlortError) as info:
        backend.compile(scale_module())
    assert info.value.code is ErrorCode.INTERNAL
    assert "interpreter plugin's compile raised KeyError" in info.value.message
    assert isinstance(info.value.__cause__, KeyError)
