"""Collectives on 2 and 4 devices of the platform against the interpreter on as many (skipped
when the platform has fewer devices: e.g. ``HLORT_CPU_DEVICES=4 hlort conformance --platform
cpu``). Every collective, the group modes, async pairs and a loop (programs of
:mod:`hlort.testing.collective_programs`), in f32 and s32: the results must be bit-identical,
since the collectives' semantics fix the combining order. A device that skips a collective its
peers wait in must make them fail with DEADLINE_EXCEEDED, not hang."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.testing.collective_programs import loop_program, programs, run_program

COUNTS = (2, 4)
_REFERENCE: dict[int, object] = {}


def _reference(n: int):
    from hlort.plugin.interpreter_backend import InterpreterPlugin
    from hlort.runtime.selection import backend_for_client

    if n not in _REFERENCE:
        _REFERENCE[n] = backend_for_client(InterpreterPlugin(device_count=n).create_client())
    return _REFERENCE[n]


def _needs(session, n: int) -> None:
    have = len(session.devices())
    if have < n:
        pytest.skip(f"{session.platform} has {have} addressable device(s); this needs {n}")
    for op in ("all-reduce", "all-gather", "collective-permute"):
        reason = session.profile.unsupported_reason(f"op:{op}")
        if reason:
            pytest.skip(reason)


def _cases():
    out = []
    for n in COUNTS:
        for t in ("f32", "s32"):
            out += [pytest.param(n, p, id=p.name) for p in programs(n, t)]
        out.append(pytest.param(n, loop_program(n), id=f"loop/f32/{n}"))
    return out


@pytest.mark.parametrize("n,program", _cases())
def test_collective_matches_the_interpreter(hlort_session, n, program):
    _needs(hlort_session, n)
    if hlort_session.profile.unsupported_reason(f"dtype:{program.dtype}"):
        pytest.skip(f"dtype {program.dtype} is declared unsupported")
    got = run_program(hlort_session.backend, program)
    want = run_program(_reference(n), program)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert len(g) == len(w), f"device {k}: {len(g)} outputs, expected {len(w)}"
        for j, (a, b) in enumerate(zip(g, w, strict=True)):
            assert a.shape == b.shape and a.dtype == b.dtype, (k, j, a.shape, b.shape)
            assert a.tobytes() == b.tobytes(), f"device {k} output {j} differs from the interpreter"


SKIPS_THE_COLLECTIVE = """HloModule skip, replica_count=2

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

reduce_it {
  v = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(v), replica_groups={}, to_apply=sum
}

keep_it {
  ROOT v = f32[4] parameter(0)
}

ENTRY main {
  x = f32[4] parameter(0)
  id = u32[] replica-id()
  zero = u32[] constant(0)
  first = pred[] compare(id, zero), direction=EQ
  ROOT y = f32[4] conditional(first, x, x), true_computation=reduce_it, false_computation=keep_it
}
"""


def test_a_device_that_never_arrives_is_a_deadline(hlort_session, monkeypatch):
    _needs(hlort_session, 2)
    if hlort_session.profile.unsupported_reason("op:conditional"):
        pytest.skip("conditional is declared unsupported")
    from hlort.runtime.compile import compile_on

    monkeypatch.setenv("HLORT_COLLECTIVE_TIMEOUT", "0.5")
    exe = compile_on(hlort_session.backend, SKIPS_THE_COLLECTIVE)
    outs = exe.execute_sharded([[np.ones(4, np.float32)], [np.ones(4, np.float32)]])
    np.testing.assert_array_equal(outs[1][0].numpy(), np.ones(4, np.float32))
    with pytest.raises(HlortError) as info:
        outs[0][0].numpy()
    assert info.value.code is ErrorCode.DEADLINE_EXCEEDED, info.value.code.name
    assert "[1]" in info.value.message, info.value.message
