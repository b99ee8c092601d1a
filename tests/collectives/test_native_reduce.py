"""The gate of the fast all-reduce paths (hlort.plugin.base.native_reduce) and the rendezvous'
cross-process all-reduce, on a transport that stands in for MPI (no processes needed)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.interpreter.evaluator import Evaluator
from hlort.plugin.base.collectives import reduce_values
from hlort.plugin.base.launch_context import Rendezvous
from hlort.plugin.base.native_reduce import BY_NAME, mpi_reducer, native_reducer
from hlort.text import parse_module


def _all_reduce(t: str, op: str, operands: int = 1, reducer: str | None = None):
    body = reducer or f" ROOT c = {t}[] {op}(a, b)"
    xs = "\n".join(f" x{k} = {t}[6] parameter({k})" for k in range(operands))
    shape = f"{t}[6]" if operands == 1 else "(" + ", ".join([f"{t}[6]"] * operands) + ")"
    args = ", ".join(f"x{k}" for k in range(operands))
    text = (
        f"HloModule m, replica_count=2\nr {{ a = {t}[] parameter(0)\n b = {t}[] parameter(1)\n"
        f"{body} }}\nENTRY main {{\n{xs}\n ROOT y = {shape} all-reduce({args}), "
        "replica_groups={}, to_apply=r }\n"
    )
    return parse_module(text).entry.root


@pytest.mark.parametrize(
    "t,op,native,mpi",
    [
        ("f32", "add", "sum", "sum"),
        ("f64", "multiply", "prod", "prod"),
        ("s32", "maximum", "max", "max"),
        ("s64", "minimum", "min", "min"),
        ("u32", "add", "sum", "sum"),
        ("u64", "maximum", "max", None),  # MPI's unsigned MIN/MAX: not trusted
        ("s8", "add", "sum", None),  # Open MPI's AVX kernels saturate 8/16-bit sums
        ("u16", "multiply", "prod", None),
        ("f32", "maximum", None, None),  # NaN wins and -0 < +0: neither np.maximum nor MPI_MAX
        ("bf16", "add", None, None),  # narrow floats round through f32 in the interpreter
        ("f16", "add", None, None),
        ("c64", "multiply", None, None),  # complex products are spelled out by the interpreter
        ("pred", "add", None, None),
        ("f32", "subtract", None, None),  # not a reducer NumPy/MPI have
    ],
)
def test_which_reducers_are_native(t, op, native, mpi):
    instr = _all_reduce(t, op)
    got = native_reducer(instr)
    assert (got.name if got else None) == native
    got = mpi_reducer(instr)
    assert (got.name if got else None) == mpi


def test_a_reducer_computation_of_several_ops_is_not_native():
    instr = _all_reduce("f32", "", reducer=" m = f32[] multiply(b, b)\n ROOT c = f32[] add(a, m)")
    assert native_reducer(instr) is None and mpi_reducer(instr) is None


@pytest.mark.parametrize(
    "t,op",
    [
        ("f32", "add"),
        ("f64", "multiply"),
        ("s8", "add"),
        ("u16", "multiply"),
        ("s32", "maximum"),
        ("u64", "minimum"),
    ],
)
def test_fold_into_is_the_reducer_computation_bit_for_bit(t, op):
    instr = _all_reduce(t, op)
    reducer = native_reducer(instr)
    dtype = np.dtype(instr.shape.dtype.numpy)
    rng = np.random.default_rng(3)
    if dtype.kind == "f":
        big = dtype.type(np.finfo(dtype).max ** 0.6)  # products of four overflow to inf
        values = [rng.standard_normal(6).astype(dtype) * big for _ in range(4)]
        values[1][0], values[2][1] = np.nan, np.inf
    else:
        info = np.iinfo(dtype)
        values = [rng.integers(info.min, info.max, 6, dtype, endpoint=True) for _ in range(4)]
    want = reduce_values(Evaluator(), instr, values)
    got = reducer.fold_into(values, np.empty(6, dtype))
    assert got.tobytes() == want.tobytes()


class FakeMpi:
    """Two processes: this one owns devices 0 and 1, the other 2 and 3, whose values are
    ``other``. ``all_reduce`` reduces with MPI's (here: a fixed pairwise) order."""

    process_index = 0

    def __init__(self, other: np.ndarray, fail: HlortError | None = None):
        self.other, self.fail, self.calls = other, fail, []

    def process_of(self, device_id: int) -> int:
        return device_id // 2

    def exchange(self, key, local, group, *, timeout_s=None):
        raise AssertionError("a native all-reduce must not take the keyed exchange")

    def all_reduce(self, key, array, op, group, *, timeout_s=None, send=None):
        self.calls.append((key, op, tuple(group), None if send is None else send.copy()))
        if self.fail is not None:
            raise self.fail
        mine = array if send is None else send
        np.copyto(array, BY_NAME[op].ufunc(mine, self.other))
        return array


def _meet(rendezvous, devices, values, reducer):
    out, errors = {}, {}

    def run(d):
        try:
            out[d] = rendezvous.all_reduce(("ar", 0), d, (values[d],), [0, 1, 2, 3], reducer)
        except HlortError as err:
            errors[d] = err

    threads = [threading.Thread(target=run, args=(d,)) for d in devices]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out, errors


def test_local_members_fold_in_group_order_then_one_transport_call():
    values = {d: np.arange(4, dtype=np.float32) + 10 * d for d in (0, 1)}
    other = np.full(4, 100, np.float32)
    fake = FakeMpi(other)
    r = Rendezvous([[0], [1], [2], [3]], transport=fake, timeout_s=5, key=("exe", 0))
    out, errors = _meet(r, [0, 1], values, BY_NAME["sum"])
    assert not errors
    (call,) = fake.calls  # one process-level call, by the last local member to arrive
    assert call[0] == ("exe", 0, "ar", 0, 0) and call[1] == "sum" and call[3] is None
    want = values[0] + values[1] + other
    assert out[0][0].tobytes() == out[1][0].tobytes() == want.tobytes()
    assert not np.shares_memory(out[0][0], out[1][0])  # each member its own result


def test_one_local_member_lets_mpi_read_its_operand():
    fake = FakeMpi(np.ones(4, np.float32))
    r = Rendezvous([[0], [2]], transport=fake, timeout_s=5)
    x = np.arange(4, dtype=np.float32)
    (got,) = r.all_reduce(("ar", 0), 0, (x,), [0, 2], BY_NAME["sum"])
    (call,) = fake.calls
    assert call[3].tobytes() == x.tobytes()  # send=: no copy into the result first
    assert got.tobytes() == (x + 1).tobytes() and not np.shares_memory(got, x)


def test_a_transport_deadline_reaches_every_local_member():
    fail = HlortError("collective timed out", ErrorCode.DEADLINE_EXCEEDED)
    r = Rendezvous([[0], [1], [2], [3]], transport=FakeMpi(np.ones(4), fail), timeout_s=5)
    values = {d: np.ones(4, np.float32) for d in (0, 1)}
    out, errors = _meet(r, [0, 1], values, BY_NAME["sum"])
    assert not out and sorted(errors) == [0, 1]
    assert all(e.code is ErrorCode.DEADLINE_EXCEEDED for e in errors.values())


def test_an_aborted_execution_never_reaches_the_transport():
    fake = FakeMpi(np.ones(4, np.float32))
    r = Rendezvous([[0], [2]], transport=fake, timeout_s=5)
    r.abort(2, HlortError("device 2 failed", ErrorCode.INTERNAL))
    with pytest.raises(HlortError) as info:
        r.all_reduce(("ar", 0), 0, (np.ones(4, np.float32),), [0, 2], BY_NAME["sum"])
    assert info.value.code is ErrorCode.ABORTED and not fake.calls
