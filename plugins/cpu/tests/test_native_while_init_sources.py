"""Where a native loop's taken initial leaf (native_while._owned_init_leaves) comes from.

The initial stack is a kernel computed from a parameter (reshape, copy, transpose, slice,
bitcast-convert: ops that could have been views of the caller's buffer), a kernel inside a
conditional branch, or a kernel in the body of an outer (Python-path) loop. The loop takes
that kernel's result as its state and writes it in place; the caller's arrays and the results
of an earlier call stay as they were. Tolerance: bit for bit against the interpreter (adds and
dynamic-update-slices), NaN, +-inf and -0.0 included.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
import hlort_cpu.native_while as native_while  # noqa: E402
from hlort.text.parser import parse_module  # noqa: E402

STATE = "(s32[], s32[], f32[1,4], f32[6,4])"
LOOP = f"""
cond {{
  p = {STATE} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  p = {STATE} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  x = f32[1,4] get-tuple-element(p), index=2
  s = f32[6,4] get-tuple-element(p), index=3
  one = f32[] constant(1)
  ones = f32[1,4] broadcast(one), dimensions={{}}
  x2 = f32[1,4] add(x, ones)
  z = s32[] constant(0)
  s2 = f32[6,4] dynamic-update-slice(s, x2, i, z)
  c1 = s32[] constant(1)
  i2 = s32[] add(i, c1)
  ROOT t = {STATE} tuple(i2, n, x2, s2)
}}
"""
ROW = np.array([[np.nan, -0.0, np.inf, -np.inf]], np.float32)


def scan(n: str, stack: str) -> str:
    """The loop ``w`` on a trip count ``n`` and initial stack ``stack``, row ``x``."""
    return (
        f"  z = s32[] constant(0)\n  t = {STATE} tuple(z, {n}, x, {stack})\n"
        f"  w = {STATE} while(t), condition=cond, body=body\n"
    )


VIEWS = {
    "reshape": ("f32[24]", "f32[6,4] reshape(q)"),
    "copy": ("f32[6,4]", "f32[6,4] copy(q)"),
    "transpose": ("f32[4,6]", "f32[6,4] transpose(q), dimensions={1,0}"),
    "slice": ("f32[7,4]", "f32[6,4] slice(q), slice={[1:7], [0:4]}"),
    "bitcast": ("s32[6,4]", "f32[6,4] bitcast-convert(q)"),
}

NESTED = f"""HloModule nested
{LOOP}
ocond {{
  p = (s32[], f32[1,4], f32[6,4]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  c3 = s32[] constant(3)
  ROOT lt = pred[] compare(j, c3), direction=LT
}}
obody {{
  p = (s32[], f32[1,4], f32[6,4]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  x = f32[1,4] get-tuple-element(p), index=1
  s = f32[6,4] get-tuple-element(p), index=2
  two = f32[] constant(2)
  twos = f32[6,4] broadcast(two), dimensions={{}}
  fill = f32[6,4] multiply(s, twos)
  n = s32[] constant(6)
{scan("n", "fill")}  s2 = f32[6,4] get-tuple-element(w), index=3
  x2 = f32[1,4] get-tuple-element(w), index=2
  c1 = s32[] constant(1)
  j2 = s32[] add(j, c1)
  ROOT r = (s32[], f32[1,4], f32[6,4]) tuple(j2, x2, s2)
}}
ENTRY main {{
  x = f32[1,4] parameter(0)
  s = f32[6,4] parameter(1)
  z = s32[] constant(0)
  t = (s32[], f32[1,4], f32[6,4]) tuple(z, x, s)
  o = (s32[], f32[1,4], f32[6,4]) while(t), condition=ocond, body=obody
  ROOT r = f32[6,4] get-tuple-element(o), index=2
}}
"""

BRANCH = f"""HloModule branch
{LOOP}
br0 {{
  p = (s32[], f32[1,4]) parameter(0)
  n = s32[] get-tuple-element(p), index=0
  x = f32[1,4] get-tuple-element(p), index=1
  seven = f32[] constant(7)
  fill = f32[6,4] broadcast(seven), dimensions={{}}
{scan("n", "fill")}  ROOT r = f32[6,4] get-tuple-element(w), index=3
}}
br1 {{
  p = (s32[], f32[1,4]) parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[6,4] broadcast(zero), dimensions={{}}
}}
ENTRY main {{
  b = pred[] parameter(0)
  n = s32[] parameter(1)
  x = f32[1,4] parameter(2)
  t = (s32[], f32[1,4]) tuple(n, x)
  ROOT r = f32[6,4] conditional(b, t, t), true_computation=br0, false_computation=br1
}}
"""


def taken(monkeypatch) -> list:
    """The leaves each planned loop takes, by the name of its computation."""
    found = []
    plan = native_while._owned_init_leaves

    def spy(loop, comp, readers, kernel_of):
        owned = plan(loop, comp, readers, kernel_of)
        found.append((comp.name, sorted(owned)))
        return owned

    monkeypatch.setattr(native_while, "_owned_init_leaves", spy)
    return found


def check(module, args, runs=2) -> None:
    """Every run gives the interpreter's bits; no run writes the arguments or earlier results."""
    kept = [np.array(a, copy=True) for a in args]
    want = np.asarray(hlort.evaluate(module, args))
    exe = hlort.compile(module, "cpu")
    assert exe.raw.stats()["fallback_count"] == 0
    results = []
    for _ in range(runs):
        results.append((got := np.asarray(exe(*args)), got.copy()))
        assert got.tobytes() == want.tobytes()
    for got, snapshot in results:
        assert got.tobytes() == snapshot.tobytes()
    for a, k in zip(args, kept, strict=True):
        assert np.asarray(a).tobytes() == k.tobytes()


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_a_kernel_on_a_parameter_is_taken_and_the_parameter_is_never_written(view, monkeypatch):
    found = taken(monkeypatch)
    param, expr = VIEWS[view]
    module = parse_module(
        f"HloModule v\n{LOOP}\nENTRY main {{\n  n = s32[] parameter(0)\n"
        f"  x = f32[1,4] parameter(1)\n  q = {param} parameter(2)\n  v = {expr}\n"
        f"{scan('n', 'v')}  ROOT r = f32[6,4] get-tuple-element(w), index=3\n}}\n"
    )
    dims = tuple(int(d) for d in param[4:-1].split(","))
    q = (np.arange(np.prod(dims)).reshape(dims) - 3.5).astype(np.float32)
    if param.startswith("s32"):  # the bit patterns of those floats (and of -0.0)
        q = q.view(np.int32)
        q[0, 0] = np.float32(-0.0).view(np.int32)
    check(module, [np.int32(4), ROW, q])
    assert found == [("main", [3])]


def test_a_scan_in_an_outer_loops_body_takes_a_fresh_stack_per_outer_trip(monkeypatch):
    found = taken(monkeypatch)
    check(parse_module(NESTED), [ROW, np.full((6, 4), -0.25, np.float32)])
    assert ("obody", [3]) in found


@pytest.mark.parametrize("branch", [True, False])
def test_a_scan_in_a_conditional_branch_takes_its_fill(branch, monkeypatch):
    found = taken(monkeypatch)
    check(parse_module(BRANCH), [np.bool_(branch), np.int32(6), ROW])
    assert found == [("br0", [3])]
