"""tpusim behind the plugin API: memory, transfers, links, serialization, coverage."""

from __future__ import annotations

import os

import numpy as np
import pytest

import hlort
from hlort import shape
from hlort.builder import Builder
from hlort.errors import ErrorCode, HlortError
from hlort.ir import ConvDimensionNumbers, DotDimensionNumbers
from hlort.ir.attributes import window_from_sizes
from hlort.plugin.options import CompileOptions
from hlort.testing.programs import side_effect_in_unused_loop
from hlort_tpusim.client import without_descriptions


def test_devices_hbm_and_options(make_client):
    client = make_client(num_chips=2, hbm_bytes=1 << 20)
    assert [d.id for d in client.devices()] == [0, 1]
    stats = client.devices()[1].memory_stats()
    assert stats.bytes_limit == 1 << 20 and stats.bytes_in_use == 0
    assert hlort.backend("tpusim").platform == "tpusim"


def test_out_of_memory_is_resource_exhausted_and_leaves_other_buffers_intact(make_client):
    client = make_client(hbm_bytes=64 * 1024)
    dev = client.devices()[0]
    keep = np.arange(4096, dtype=np.float32)  # 16 KiB
    kept = client.buffer_from_host(keep, dev)
    kept.ready_event().wait()
    with pytest.raises(HlortError) as info:
        client.buffer_from_host(np.zeros(16384, np.float32), dev)  # 64 KiB: does not fit
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED
    assert "65536 bytes" in info.value.message and "free" in info.value.message
    np.testing.assert_array_equal(kept.to_host().result(), keep)
    # an execution whose temporaries do not fit fails through its outputs' events
    b = Builder("big")
    x = b.parameter(shape.array("f32", [4096]))
    module = b.build(b.broadcast(x, [4, 4096], [1]))
    exe = client.compile(module, CompileOptions())
    (out,) = exe.execute([[kept]])[0]
    with pytest.raises(HlortError) as info:
        out.to_host().result()
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED
    np.testing.assert_array_equal(kept.to_host().result(), keep)
    assert dev.memory_stats().bytes_in_use == 16384


def test_transfers_and_chip_to_chip_copies_are_modelled(make_client):
    client = make_client()
    d0, d2 = client.devices()[0], client.devices()[2]
    data = np.arange(1000, dtype=np.float32)
    buf = client.buffer_from_host(data, d0)
    moved = buf.copy_to_device(d2)
    np.testing.assert_array_equal(moved.to_host().result(), data)
    assert moved.device is d2
    assert d2.stats["ici_bytes_in"] == data.nbytes and d2.stats["ici_seconds_in"] > 0
    assert d0.stats["host_to_device_bytes"] == data.nbytes
    # two hops on a ring of four chips cost twice one hop
    assert d2.ici_seconds(4096, 0) == pytest.approx(2 * d2.ici_seconds(4096, 1))


def test_serialized_executable_runs_the_same_program(run, make_client, rng):
    client = make_client()
    b = Builder("ser")
    x = b.parameter(shape.array("f32", [8, 16]))
    w = b.parameter(shape.array("f32", [16, 4]))
    module = b.build(b.exp(b.dot_general(x, w, DotDimensionNumbers((1,), (0,)))))
    exe = client.compile(module, CompileOptions())
    again = client.deserialize_executable(exe.serialize())
    # re-derived from the HLO: the same program (its notes may spell the default layouts)
    assert without_descriptions(again.program.to_json()) == without_descriptions(
        exe.program.to_json()
    )
    xs, ws = rng.random((8, 16), dtype=np.float32), rng.random((16, 4), dtype=np.float32)
    (a,), _ = run(client, module, xs, ws)
    dev = client.devices()[0]
    (out,) = again.execute([[client.buffer_from_host(xs, dev), client.buffer_from_host(ws, dev)]])[
        0
    ]
    np.testing.assert_array_equal(out.to_host().result(), a)
    assert "mxu.matmul" in exe.artifacts()["program.txt"]


def _ref(module, *args):
    return hlort.evaluate(module, list(args))


def _check(run, client, module, *args, rtol=1e-6, atol=1e-6):
    outs, exe = run(client, module, *args)
    ref = _ref(module, *args)
    refs = list(ref) if isinstance(ref, tuple) else [ref]
    for o, r in zip(outs, refs, strict=True):
        np.testing.assert_allclose(o, r, rtol=rtol, atol=atol)
    return exe


def test_reduce_transpose_and_broadcast_run_on_the_vector_unit(run, make_client, rng):
    client = make_client()
    b = Builder("vec")
    x = b.parameter(shape.array("f32", [33, 70, 5]))
    add = b.scalar_computation("add", "f32")
    t = b.transpose(x, [2, 0, 1])
    zero = b.constant(np.float32(0))
    s = b.reduce(t, zero, add, [1])
    module = b.build(b.tuple([s, b.add(t, b.broadcast(s, [5, 33, 70], [0, 2]))]))
    exe = _check(run, client, module, rng.random((33, 70, 5), dtype=np.float32), rtol=1e-5)
    classes = exe.last_profile.by_class
    assert "VPU" in classes and "HOSTOP" not in classes


def test_control_flow_runs_as_scalar_loops_and_branches(run, make_client):
    client = make_client()
    b = Builder("loop")
    init = b.parameter(shape.array("f32", [4]))
    cond = b.sub("cond")
    s = cond.parameter(shape.array("f32", [4]))
    red = cond.reduce(s, cond.constant(np.float32(0)), b.scalar_computation("add", "f32"), [0])
    cond_c = cond.finish(cond.compare(red, cond.constant(np.float32(100)), "LT"))
    body = b.sub("body")
    s2 = body.parameter(shape.array("f32", [4]))
    body_c = body.finish(body.multiply(s2, body.broadcast(body.constant(np.float32(2)), [4], [])))
    module = b.build(b.while_loop(cond_c, body_c, init))
    exe = _check(run, client, module, np.ones(4, np.float32))
    assert "while {" in exe.program.to_text()
    assert "HOSTOP" not in exe.last_profile.by_class


def test_ops_without_a_unit_take_the_named_host_assisted_path(run, make_client, rng):
    client = make_client()
    b = Builder("sort")
    x = b.parameter(shape.array("f32", [64]))
    module = b.build(b.sort(x, b.comparator(["f32"], "LT")))
    exe = _check(run, client, module, rng.random(64, dtype=np.float32))
    assert exe.last_profile.by_class["HOSTOP"]["count"] == 1
    assert "hostop sort" in exe.program.to_text()


def test_convolution_runs_on_the_matrix_unit(run, make_client, rng):
    client = make_client()
    nhwc = ConvDimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
    b = Builder("conv")
    x = b.parameter(shape.array("bf16", [2, 9, 8, 3]))
    k = b.parameter(shape.array("bf16", [3, 2, 3, 5]))
    window = window_from_sizes([3, 2], [2, 1], [(1, 1), (0, 1)], window_dilation=[1, 2])
    module = b.build(b.convolution(x, k, window, nhwc, preferred="f32"))
    import ml_dtypes

    xs = rng.uniform(-1, 1, (2, 9, 8, 3)).astype(ml_dtypes.bfloat16)
    ks = rng.uniform(-1, 1, (3, 2, 3, 5)).astype(ml_dtypes.bfloat16)
    exe = _check(run, client, module, xs, ks, rtol=1e-5, atol=1e-5)
    assert exe.last_profile.mxu_macs > 0
    assert "dma.im2col" in exe.program.to_text()


def test_lapack_custom_calls_are_counted_host_ops(run, make_client, rng):
    """JAX's CPU cholesky and TPU eigh custom calls run host-assisted, one HOSTOP each."""
    from hlort.shape import TupleShape

    client = make_client()
    b = Builder("linalg")
    x = b.parameter(shape.array("f32", [4, 4]))
    factor = b.custom_call(
        "lapack_spotrf_ffi",
        [x],
        TupleShape((shape.array("f32", [4, 4]), shape.array("s32", []))),
        backend_config="{uplo = 76 : ui8}",
    )
    eigh = b.custom_call(
        "Eigh",
        [x],
        TupleShape((shape.array("f32", [4, 4]), shape.array("f32", [4]))),
        backend_config="1,1,100,1e-6",
    )
    module = b.build(b.tuple([b.get_tuple_element(factor, 0), b.get_tuple_element(eigh, 1)]))
    g = rng.random((4, 4), dtype=np.float32)
    exe = _check(run, client, module, (g @ g.T + 4 * np.eye(4)).astype(np.float32), rtol=1e-5)
    assert exe.last_profile.by_class["HOSTOP"]["count"] == 2
    assert "hostop custom-call" in exe.program.to_text()


def _nan_and_negative_zero_module():
    b = Builder("nanconst")
    p = b.parameter(shape.array("f32", [4]))
    nan = b.broadcast(b.constant(np.float32(np.nan)), [4], [])
    neg = b.broadcast(b.constant(np.float32(-0.0)), [4], [])
    return b.build(b.add(b.maximum(p, nan), neg))


def test_a_program_holding_nan_and_negative_zero_round_trips(make_client, monkeypatch, tmp_path):
    client = make_client()
    module = _nan_and_negative_zero_module()
    exe = client.compile(module, CompileOptions())
    again = client.deserialize_executable(exe.serialize())  # was DATA_LOSS: NaN != NaN
    dev = client.devices()[0]
    x = np.array([1, -1, 0, 2], np.float32)
    (out,) = again.execute([[client.buffer_from_host(x, dev)]])[0]
    assert np.isnan(out.to_host().result()).all()

    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    hlort.compile(module, "tpusim")
    entries = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs]
    # the same files (inode and bytes; a hit refreshes the mtime, the cache's LRU order)
    stamps = {p: (os.stat(p).st_ino, open(p, "rb").read()) for p in entries}
    second = hlort.compile(module, "tpusim")
    assert "cache_load" in second.timings  # a hit, not a delete and rewrite
    assert {p: (os.stat(p).st_ino, open(p, "rb").read()) for p in entries} == stamps


def test_a_stored_program_that_differs_only_in_zero_sign_is_refused():
    from hlort_tpusim.client import same_program

    assert same_program({"v": float("nan")}, {"v": float("nan")})
    assert not same_program({"v": -0.0}, {"v": 0.0})
    assert same_program({"v": 1, "hlo": "a"}, {"v": 1, "hlo": "b"})


def test_an_unused_loop_whose_body_has_a_side_effect_still_runs():
    """DCE keeps the loop (its body's check is a side effect); the tpusim program runs it."""
    exe = hlort.compile(side_effect_in_unused_loop(), "tpusim")
    np.testing.assert_array_equal(exe(np.float32([1, 2, 3])), [2, 4, 6])
    with pytest.raises(HlortError, match="check.expect_eq"):
        exe(np.float32([0, 0, 0]))
