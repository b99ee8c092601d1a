"""The in-process all-reduce on shared memory (hlort_cpu.collective_thunks): native reducers
fold with NumPy ufuncs into ``out=`` slices, member p folds slice p and copies it into every
other member's result. Checked bit for bit against the interpreter (the oracle) where the
split is awkward: odd device counts, sizes that do not divide, many chunks, wrapping
integers, NaN and overflow, subgroups; and that every device gets memory of its own."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("hlort_cpu")

from hlort.plugin.interpreter_backend import InterpreterPlugin  # noqa: E402
from hlort.runtime.compile import compile_on  # noqa: E402
from hlort.runtime.selection import backend_for_client  # noqa: E402
from hlort_cpu import collective_thunks  # noqa: E402
from hlort_cpu.collective_thunks import CollectiveThunk  # noqa: E402
from hlort_cpu.plugin import CpuPlugin  # noqa: E402

NP = {
    "f32": np.float32,
    "f64": np.float64,
    "s8": np.int8,
    "u16": np.uint16,
    "s32": np.int32,
    "u64": np.uint64,
}


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("HLORT_FALLBACK", "error")


@pytest.fixture(scope="module")
def backends():
    made = {}
    for n in (2, 3, 4):
        cpu = CpuPlugin().create_client({"device_count": n})
        ref = InterpreterPlugin(device_count=n).create_client()
        made[n] = (backend_for_client(cpu), backend_for_client(ref))
    yield made
    for cpu, ref in made.values():
        cpu.client.close()
        ref.client.close()


def _program(n: int, t: str, op: str, elements: int, groups: str = "{}") -> str:
    return (
        f"HloModule shared_{op}_{t}_{n}, replica_count={n}\n"
        f"r {{ a = {t}[] parameter(0)\n b = {t}[] parameter(1)\n ROOT c = {t}[] {op}(a, b) }}\n"
        f"ENTRY main {{ x = {t}[{elements}] parameter(0)\n"
        f" ROOT y = {t}[{elements}] all-reduce(x), replica_groups={groups}, to_apply=r }}\n"
    )


def _inputs(n: int, t: str, elements: int, special: bool) -> list[np.ndarray]:
    dtype = np.dtype(NP[t])
    out = []
    for k in range(n):
        rng = np.random.default_rng(100 + k)
        if dtype.kind == "f":
            x = (rng.standard_normal(elements) * 1e3).astype(dtype)
            if special:  # NaN (one member), the largest finite (sums overflow), -0
                if k == 1:
                    x[::97] = np.nan
                x[1::89] = np.finfo(dtype).max
                x[2::83] = -0.0
        else:
            info = np.iinfo(dtype)
            x = rng.integers(info.min, info.max, elements, dtype, endpoint=True)
        out.append(x)
    return out


def _both(backends, n, text, inputs):
    cpu, ref = backends[n]
    got = compile_on(cpu, text).execute_sharded([[x] for x in inputs])
    want = compile_on(ref, text).execute_sharded([[x] for x in inputs])
    return [o.numpy() for (o,) in got], [o.numpy() for (o,) in want]


CASES = [
    (n, t, op, elements)
    for n in (2, 3, 4)
    for t, op in (
        ("f32", "add"),
        ("f64", "multiply"),
        ("s8", "add"),
        ("u16", "multiply"),
        ("s32", "maximum"),
        ("u64", "minimum"),
    )
    for elements in (5, 20_011)  # a whole fold per member; split in slices that do not divide
]


@pytest.mark.parametrize("n,t,op,elements", CASES)
def test_native_all_reduce_is_the_interpreters_bit_for_bit(backends, n, t, op, elements):
    inputs = _inputs(n, t, elements, special=True)
    kept = [x.copy() for x in inputs]
    got, want = _both(backends, n, _program(n, t, op, elements), inputs)
    for k in range(n):
        assert got[k].dtype == want[k].dtype and got[k].tobytes() == want[k].tobytes(), k
    assert all(a.tobytes() == b.tobytes() for a, b in zip(inputs, kept, strict=True))


def test_many_chunks_and_a_remainder(backends, monkeypatch):
    monkeypatch.setattr(collective_thunks, "CHUNK_BYTES", 4096 + 12)  # chunks cut mid-slice
    for n in (3, 4):
        inputs = _inputs(n, "f32", 50_003, special=False)
        got, want = _both(backends, n, _program(n, "f32", "add", 50_003), inputs)
        assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want, strict=True))


def test_subgroups_fold_their_own_members(backends):
    inputs = _inputs(4, "f32", 30_000, special=False)
    text = _program(4, "f32", "add", 30_000, "{{0,2},{3,1}}")
    got, want = _both(backends, 4, text, inputs)
    assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want, strict=True))
    assert got[1].tobytes() == (inputs[3] + inputs[1]).tobytes()  # group order: 3 then 1


def test_every_device_gets_its_own_memory(backends):
    cpu, _ = backends[4]
    exe = compile_on(cpu, _program(4, "f32", "add", 40_000))
    (step,) = [s for s in exe.raw.program.steps if isinstance(s, CollectiveThunk)]
    assert step.sliced and step.native is not None and step.native.name == "sum"
    outs = [
        o.numpy() for (o,) in exe.execute_sharded([[x] for x in _inputs(4, "f32", 40_000, False)])
    ]
    for i in range(4):
        for j in range(i + 1, 4):
            assert not np.shares_memory(outs[i], outs[j]), (i, j)
    assert all(o.tobytes() == outs[0].tobytes() for o in outs)


def test_reducers_numpy_cannot_fold_exactly_keep_the_reducer_computation(backends):
    cpu, _ = backends[2]
    for t, op in (("f32", "maximum"), ("bf16", "add"), ("f16", "add")):
        exe = compile_on(cpu, _program(2, t, op, 20_000))
        (step,) = [s for s in exe.raw.program.steps if isinstance(s, CollectiveThunk)]
        assert step.native is None, (t, op)
