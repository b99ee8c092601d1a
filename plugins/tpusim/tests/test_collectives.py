"""Collectives on the 4 tpusim chips: results against the interpreter on 4 devices (every
collective, the group modes, several element types, reducers other than sum, a loop), the
profile's modelled link time against the ring formulas, waiting for a late chip, the timeout."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.plugin.interpreter_backend import InterpreterPlugin
from hlort.runtime.compile import compile_on
from hlort.runtime.selection import backend_for_client
from hlort.testing.collective_programs import (
    large_all_reduce_programs,
    loop_program,
    mlp_inputs,
    mlp_step_program,
    programs,
    run_program,
)
from hlort_tpusim.machine_config import MachineConfig
from hlort_tpusim.plugin import TpuSimPlugin

DTYPES = ["f32", "s32", "bf16", "pred"]
CFG = MachineConfig()
BW, LAT = CFG.ici_bandwidth, CFG.ici_latency_s
ONE_CYCLE = 1.0 / CFG.clock_hz  # profile cycles are rounded to 0.1 cycle


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("HLORT_FALLBACK", "error")


@pytest.fixture(scope="module")
def backends():
    sim = TpuSimPlugin().create_client()
    ref = InterpreterPlugin(device_count=4).create_client()
    yield backend_for_client(sim), backend_for_client(ref)
    sim.close()
    ref.close()


def _same(got, want):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        for j, (a, b) in enumerate(zip(g, w, strict=True)):
            assert a.dtype == b.dtype and a.shape == b.shape, (k, j)
            assert a.tobytes() == b.tobytes(), f"chip {k} output {j} differs"


CASES = [p for t in DTYPES for p in programs(4, t)] + [p for p in programs(2, "f32")]
CASES += large_all_reduce_programs(4, "f32") + large_all_reduce_programs(4, "bf16")


@pytest.mark.parametrize("program", CASES, ids=[p.name for p in CASES])
def test_matches_the_interpreter_bit_for_bit(backends, program):
    sim, ref = backends
    _same(run_program(sim, program), run_program(ref, program))


def test_a_collective_in_a_loop(backends):
    sim, ref = backends
    program = loop_program(4)
    _same(run_program(sim, program), run_program(ref, program))


def _profiles(backend, text, inputs):
    exe = compile_on(backend, text, options={"num_replicas": len(inputs)})
    for outs in exe.execute_sharded(inputs):  # every chip finished: its profile is this run's
        outs[0].numpy()
    return exe, [d.raw.last_profile for d in exe.devices]


def _one(kind_text: str, out: str, n_elems: int = 1 << 16) -> str:
    return f"""HloModule one, replica_count=4

sum {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}

ENTRY main {{
  x = f32[{n_elems}] parameter(0)
  ROOT y = {out} {kind_text}
}}
"""


N, ELEMS = 4, 1 << 16
B = ELEMS * 4  # operand bytes
FORMULAS = {  # the textbook ring costs on 4 neighbouring chips
    "all-reduce": (
        _one("all-reduce(x), replica_groups={}, to_apply=sum", f"f32[{ELEMS}]"),
        2 * (N - 1) / N * B / BW + 2 * (N - 1) * LAT,
    ),
    "all-gather": (
        _one("all-gather(x), replica_groups={}, dimensions={0}", f"f32[{ELEMS * N}]"),
        (N - 1) / N * (B * N) / BW + (N - 1) * LAT,
    ),
    "reduce-scatter": (
        _one(
            "reduce-scatter(x), replica_groups={}, dimensions={0}, to_apply=sum",
            f"f32[{ELEMS // N}]",
        ),
        (N - 1) / N * B / BW + (N - 1) * LAT,
    ),
    "collective-permute": (
        _one(
            "collective-permute(x), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}", f"f32[{ELEMS}]"
        ),
        B / BW + LAT,
    ),
}


@pytest.mark.parametrize("kind", sorted(FORMULAS))
def test_profile_shows_the_ring_time(backends, kind):
    sim, _ = backends
    text, seconds = FORMULAS[kind]
    _, profiles = _profiles(sim, text, [[np.ones(ELEMS, np.float32)] for _ in range(N)])
    for p in profiles:
        (c,) = p.collectives
        assert c["kind"] == kind and c["group_size"] == N
        assert c["link_seconds"] == pytest.approx(seconds, rel=1e-12)
        assert c["cycles"] * ONE_CYCLE == pytest.approx(seconds, abs=ONE_CYCLE)
        assert p.by_class["ICI"]["count"] == 1
        assert p.seconds >= seconds - ONE_CYCLE
        assert kind in p.summary() and "us on the links" in p.summary()


LATE = """HloModule late, replica_count=4

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

slow {
  v = f32[256,256] parameter(0)
  ROOT e = f32[256,256] exponential(v)
}

fast {
  ROOT v = f32[256,256] parameter(0)
}

ENTRY main {
  x = f32[256,256] parameter(0)
  id = u32[] replica-id()
  zero = u32[] constant(0)
  first = pred[] compare(id, zero), direction=EQ
  w = f32[256,256] conditional(first, x, x), true_computation=slow, false_computation=fast
  ROOT y = f32[256,256] all-reduce(w), replica_groups={}, to_apply=sum
}
"""


def test_chips_wait_for_the_last_of_their_group(backends):
    """Chip 0 computes before the all-reduce, the others do not: they wait for it, and every
    chip's all-reduce ends at the same simulated cycle."""
    sim, _ = backends
    xs = [[np.full((256, 256), 0.5, np.float32)] for _ in range(4)]
    _, profiles = _profiles(sim, LATE, xs)
    waits = [p.collectives[0]["wait_seconds"] for p in profiles]
    assert waits[0] == 0.0 and all(w > 0 for w in waits[1:]), waits
    ends = {round(p.cycles) for p in profiles}
    assert len(ends) == 1, ends


SKIPS = LATE.replace(
    "ROOT y = f32[256,256] all-reduce(w), replica_groups={}, to_apply=sum",
    "ROOT y = f32[256,256] add(w, w)",
).replace(
    "ROOT e = f32[256,256] exponential(v)",
    "ROOT e = f32[256,256] all-reduce(v), replica_groups={}, to_apply=sum",
)


def test_a_chip_that_never_arrives_is_a_deadline(backends, monkeypatch):
    monkeypatch.setenv("HLORT_COLLECTIVE_TIMEOUT", "0.5")
    sim, _ = backends
    exe = compile_on(sim, SKIPS, options={"num_replicas": 4})
    outs = exe.execute_sharded([[np.ones((256, 256), np.float32)] for _ in range(4)])
    with pytest.raises(HlortError) as info:
        outs[0][0].numpy()
    assert info.value.code is ErrorCode.DEADLINE_EXCEEDED
    assert "[1, 2, 3]" in info.value.message
    np.testing.assert_array_equal(outs[3][0].numpy(), np.full((256, 256), 2, np.float32))


def test_execution_profile_has_every_chip(backends):
    sim, _ = backends
    text, seconds = FORMULAS["all-reduce"]
    exe, _ = _profiles(sim, text, [[np.ones(ELEMS, np.float32)] for _ in range(N)])
    report = exe.raw.execution_profile()
    assert sorted(report["per_chip"]) == [0, 1, 2, 3]
    for chip in report["per_chip"].values():
        (c,) = chip["collectives"]
        assert c["kind"] == "all-reduce"
        assert c["link_seconds"] == pytest.approx(seconds, rel=1e-12)


# -- must-show: a data-parallel MLP training step --------------------------------------------
MLP_RTOL, MLP_ATOL = 1e-5, 1e-6  # f32: the gradients' sums over the batch are regrouped by device


def _mlp_step(backend, replicas: int, x, y, params):
    text = mlp_step_program(x.shape[0] // replicas, replicas)
    exe = compile_on(backend, text, options={"num_replicas": replicas})
    rows = x.shape[0] // replicas
    args = [
        [x[k * rows : (k + 1) * rows], y[k * rows : (k + 1) * rows], *params]
        for k in range(replicas)
    ]
    return exe, [[b.numpy() for b in outs] for outs in exe.execute_sharded(args)]


def test_data_parallel_mlp_step_on_four_chips_matches_one_device(backends):
    sim, ref = backends
    x, y, params = mlp_inputs(32)
    _, (single,) = _mlp_step(ref, 1, x, y, params)
    exe, per_chip = _mlp_step(sim, 4, x, y, params)
    for outs in per_chip:
        for got, want in zip(outs, single, strict=True):
            np.testing.assert_allclose(got, want, rtol=MLP_RTOL, atol=MLP_ATOL)
    profile = exe.devices[0].raw.last_profile
    reduces = [c for c in profile.collectives if c["kind"] == "all-reduce"]
    assert len(reduces) == 7  # the loss and six gradients
    w1 = next(c for c in reduces if c["bytes"] == 8 * 16 * 4)
    assert w1["link_seconds"] == pytest.approx(
        2 * 3 / 4 * w1["bytes"] / BW + 2 * 3 * LAT, rel=1e-12
    )
    assert "all-reduce" in profile.summary()
