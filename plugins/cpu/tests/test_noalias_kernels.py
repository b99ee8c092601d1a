"""Kernels of many buffers get ``noalias`` pointers (fusion_kernel.open_fusion_kernel), only
where their caller keeps every output apart from the other buffers (the entry's kernel
thunks), never in a native while's body (its driver updates the loop state in place). Results
are bit for bit those without noalias, and the interpreter's values (adds and multiplies
only)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
import hlort_cpu.codegen.kernel_builder as kernel_builder  # noqa: E402
import hlort_cpu.compiler as compiler  # noqa: E402
from hlort.text.parser import parse_module  # noqa: E402
from hlort_cpu.thread_pool import PARALLEL_MIN_ELEMENTS  # noqa: E402

RNG = np.random.default_rng(43)
N = kernel_builder.NOALIAS_MIN_BUFFERS - 1  # inputs: with the output, just enough buffers


def _chain(names: list[str], t: str) -> str:
    """HLO lines folding ``names`` with add and multiply in turn; the last value is ``y``."""
    lines, acc = [], names[0]
    for k, name in enumerate(names[1:]):
        op = "add" if k % 2 == 0 else "multiply"
        out = "y" if k == len(names) - 2 else f"t{k}"
        lines.append(f"  {out} = {t} {op}({acc}, {name})")
        acc = out
    return "\n".join(lines)


def _entry_module(size: int) -> str:
    t = f"f32[{size}]"
    params = "\n".join(f"  p{k} = {t} parameter({k})" for k in range(N))
    return (
        f"HloModule entry\nENTRY main {{\n{params}\n{_chain([f'p{k}' for k in range(N)], t)}\n"
        f"  ROOT r = {t} negate(y)\n}}\n"
    )


def _same_values(got, want) -> None:
    """Equal values, signed zeros included; NaN where the interpreter has NaN (its sign and
    payload after arithmetic are not specified)."""
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_array_equal(got, want)
    number = ~np.isnan(want)
    assert (np.signbit(got) == np.signbit(want))[number].all()


def _run(text: str, args, monkeypatch, least: int):
    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setattr(kernel_builder, "NOALIAS_MIN_BUFFERS", least)
    monkeypatch.setattr(compiler, "_loaded", {})
    exe = hlort.compile(parse_module(text), "cpu")
    assert exe.raw.stats()["fallback_count"] == 0
    return exe, exe(*args)


@pytest.mark.parametrize("size", [1, 100, 4 * PARALLEL_MIN_ELEMENTS + 3])
def test_an_entry_kernel_of_many_buffers_is_noalias(size, monkeypatch):
    """One kernel of N inputs and an output (split across threads at the largest size):
    noalias, the same bits as without, and the interpreter's."""
    text = _entry_module(size)
    args = [RNG.standard_normal(size).astype(np.float32) for _ in range(N)]
    args[0][0], args[1][-1] = np.nan, -0.0
    if size > 2:
        args[2][1] = np.inf
    want = hlort.evaluate(parse_module(text), args)
    exe, got = _run(text, args, monkeypatch, N + 1)
    assert " noalias" in exe.raw.program.ir_text
    plain, again = _run(text, args, monkeypatch, 10**9)
    assert " noalias" not in plain.raw.program.ir_text
    assert np.asarray(got).tobytes() == np.asarray(again).tobytes()
    _same_values(got, want)
    _, fewer = _run(text, args, monkeypatch, N + 2)  # one buffer short of the threshold
    assert np.asarray(fewer).tobytes() == np.asarray(got).tobytes()


def test_a_loop_bodys_kernel_is_never_noalias(monkeypatch):
    """The same N-input kernel in a native while's body keeps plain pointers."""
    t = "f32[16]"
    state = "(s32[], " + ", ".join([t] * N) + ")"
    leaves = "\n".join(f"  v{k} = {t} get-tuple-element(p), index={k + 1}" for k in range(N))
    rest = ", ".join(f"v{k}" for k in range(1, N))
    text = f"""HloModule loop
cond {{
  p = {state} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  p = {state} parameter(0)
  i = s32[] get-tuple-element(p), index=0
{leaves}
{_chain([f"v{k}" for k in range(N)], t)}
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ROOT out = {state} tuple(i2, y, {rest})
}}
ENTRY main {{
{chr(10).join(f"  a{k} = {t} parameter({k})" for k in range(N))}
  z = s32[] constant(0)
  init = {state} tuple(z, {", ".join(f"a{k}" for k in range(N))})
  w = {state} while(init), condition=cond, body=body
  ROOT r = {t} get-tuple-element(w), index=1
}}
"""
    args = [RNG.standard_normal(16).astype(np.float32) for _ in range(N)]
    exe, got = _run(text, args, monkeypatch, N + 1)
    assert "while (native)" in exe.raw.stats()["compiled"]
    assert " noalias" not in exe.raw.program.ir_text
    _same_values(got, hlort.evaluate(parse_module(text), args))
