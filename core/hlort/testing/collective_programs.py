"""Many-device collective programs for differential tests of a backend against the interpreter.

Each :class:`CollectiveProgram` is XLA HLO text for ``num_replicas x num_partitions`` copies, with
per-copy inputs, covering every collective (all-reduce with sum, max and a reducer computation
that is neither, all-gather, reduce-scatter, all-to-all in array and tuple form,
collective-permute, collective-broadcast, the async start/done pairs), the group modes
(cross-replica, cross-partition, cross-replica-and-partition, flattened ids, iota groups) and a
collective inside a loop. Compiled kernels surround the collectives (an elementwise op before,
replica-id after), so a backend's data path and its collective steps are both exercised.

:func:`run_program` runs one on a runtime backend with enough devices and returns every
device's outputs; two backends agree when those are bit-identical (the collectives' semantics
are exact: fixed combining order). Used by plugins/cpu and plugins/tpusim tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hlort.dtypes import from_hlo_name
from hlort.runtime.compile import compile_on
from hlort.testing.values import mixed, rng_for


@dataclass(frozen=True)
class CollectiveProgram:
    name: str
    text: str
    num_replicas: int
    num_partitions: int
    operand_dims: tuple[tuple[int, ...], ...]
    dtype: str

    @property
    def copies(self) -> int:
        return self.num_replicas * self.num_partitions

    def inputs(self, copy: int) -> list[np.ndarray]:
        """The arguments of copy ``copy`` (replica * num_partitions + partition)."""
        dt = from_hlo_name(self.dtype)
        rng = rng_for(f"{self.name}/{copy}")
        return [mixed(dt, dims, rng) for dims in self.operand_dims]


def _reducers(t: str) -> str:
    one = "true" if t == "pred" else "1"
    return f"""
sum {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  ROOT c = {t}[] {"or" if t == "pred" else "add"}(a, b)
}}

biggest {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  ROOT c = {t}[] maximum(a, b)
}}

twice_plus {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  k = {t}[] constant({one})
  ak = {t}[] {"and" if t == "pred" else "add"}(a, k)
  ROOT c = {t}[] {"xor" if t == "pred" else "add"}(ak, b)
}}
"""


def _module(name: str, t: str, header: str, params: str, body: str) -> str:
    return f"HloModule {name}{header}\n{_reducers(t)}\nENTRY main {{\n{params}\n{body}\n}}\n"


def _x(t: str, dims: str, name: str = "x", index: int = 0) -> str:
    """Parameter ``index`` and, for numbers, a compiled elementwise step on it."""
    if t == "pred":
        return f"  {name} = {t}[{dims}] parameter({index})"
    return f"  {name}0 = {t}[{dims}] parameter({index})\n  {name} = {t}[{dims}] negate({name}0)"


def programs(devices: int, t: str = "f32") -> list[CollectiveProgram]:
    """The programs for ``devices`` (2 or 4) copies with element type ``t``."""
    n = devices
    every = "{" + ",".join(map(str, range(n))) + "}"
    pairs_up = "{" + ",".join(f"{{{i},{(i + 1) % n}}}" for i in range(n)) + "}"
    halves = "{{0,1}}" if n == 2 else "{{0,1},{2,3}}"
    rows, cols = 4 * n, 6
    d = f"{rows},{cols}"
    out: list[CollectiveProgram] = []

    def add(name: str, body: str, dims=((rows, cols),), r=n, p=1, extra_params: str = "") -> None:
        header = f", replica_count={r}, num_partitions={p}"
        params = _x(t, ",".join(map(str, dims[0]))) + extra_params
        text = _module(f"{name}_{t}_{n}", t, header, params, body)
        out.append(CollectiveProgram(f"{name}/{t}/{n}", text, r, p, tuple(dims), t))

    add("all_reduce_sum", f"  ROOT y = {t}[{d}] all-reduce(x), replica_groups={{}}, to_apply=sum")
    if t != "pred":
        add(
            "all_reduce_max_halves",
            f"  ROOT y = {t}[{d}] all-reduce(x), replica_groups={halves}, to_apply=biggest",
        )
    add(
        "all_reduce_reducer",
        f"  ROOT y = {t}[{d}] all-reduce(x), replica_groups={{{every}}}, to_apply=twice_plus",
    )
    add(
        "all_gather_0",
        f"  ROOT y = {t}[{rows * n},{cols}] all-gather(x), replica_groups={{}}, dimensions={{0}}",
    )
    add(
        "all_gather_1_halves",
        f"  ROOT y = {t}[{rows},{cols * 2}] all-gather(x), replica_groups={halves}, "
        f"dimensions={{1}}",
    )
    add(
        "reduce_scatter",
        f"  ROOT y = {t}[{rows // n},{cols}] reduce-scatter(x), replica_groups={{}}, "
        f"dimensions={{0}}, to_apply=sum",
    )
    add("all_to_all", f"  ROOT y = {t}[{d}] all-to-all(x), replica_groups={{}}, dimensions={{0}}")
    tuple_params = "".join(f"\n  x{k}t = {t}[{d}] parameter({k + 1})" for k in range(n - 1))
    names = ", ".join(["x", *[f"x{k}t" for k in range(n - 1)]])
    add(
        "all_to_all_tuple",
        f"  ROOT y = ({', '.join([f'{t}[{d}]'] * n)}) all-to-all({names}), replica_groups={{}}",
        dims=((rows, cols),) * n,
        extra_params=tuple_params,
    )
    add(
        "permute_ring",
        f"  ROOT y = {t}[{d}] collective-permute(x), source_target_pairs={pairs_up}",
    )
    add(
        "permute_partial",
        f"  ROOT y = {t}[{d}] collective-permute(x), source_target_pairs={{{{0,1}}}}",
    )
    add("broadcast", f"  ROOT y = {t}[{d}] collective-broadcast(x), replica_groups={{}}")
    add(
        "async_pairs",
        f"  s1 = {t}[{d}] all-reduce-start(x), replica_groups={{}}, to_apply=sum\n"
        f"  d1 = {t}[{d}] all-reduce-done(s1)\n"
        f"  s2 = ({t}[{d}], {t}[{rows * n},{cols}]) all-gather-start(x), replica_groups={{}}, "
        f"dimensions={{0}}\n"
        f"  d2 = {t}[{rows * n},{cols}] all-gather-done(s2)\n"
        f"  s3 = ({t}[{d}], {t}[{d}], u32[], u32[]) collective-permute-start(x), "
        f"source_target_pairs={pairs_up}\n"
        f"  d3 = {t}[{d}] collective-permute-done(s3)\n"
        f"  ROOT y = ({t}[{d}], {t}[{rows * n},{cols}], {t}[{d}]) tuple(d1, d2, d3)",
    )
    if n == 4:
        # 2 replicas x 2 partitions: the group modes
        add(
            "cross_partition",
            f"  ROOT y = {t}[{d}] all-reduce(x), channel_id=1, replica_groups={{}}, to_apply=sum",
            r=2,
            p=2,
        )
        add(
            "cross_replica_and_partition",
            f"  ROOT y = {t}[{rows * 2},{cols}] all-gather(x), channel_id=1, "
            f"replica_groups={{{{0}},{{1}}}}, dimensions={{0}}, use_global_device_ids=false",
            r=2,
            p=2,
        )
        add(
            "flattened_iota",
            f"  ROOT y = {t}[{rows * 2},{cols}] all-gather(x), channel_id=1, "
            f"replica_groups=[2,2]<=[2,2]T(1,0), dimensions={{0}}, use_global_device_ids=true",
            r=2,
            p=2,
        )
        add(
            "cross_replica_2x2",
            f"  ROOT y = {t}[{d}] all-reduce(x), replica_groups={{{{0,1}}}}, to_apply=biggest"
            if t != "pred"
            else f"  ROOT y = {t}[{d}] all-reduce(x), replica_groups={{{{0,1}}}}, to_apply=sum",
            r=2,
            p=2,
        )
    return out


def loop_program(devices: int) -> CollectiveProgram:
    """An all-reduce inside a while loop (three trips): each trip meets the same trip of the
    other copies."""
    n = devices
    text = f"""HloModule loop_all_reduce_{n}, replica_count={n}

sum {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}

cond {{
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}}

body {{
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  half = f32[] constant(0.5)
  h = f32[8] broadcast(half), dimensions={{}}
  r = f32[8] all-reduce(v), replica_groups={{}}, to_apply=sum
  w = f32[8] multiply(r, h)
  ROOT t = (s32[], f32[8]) tuple(j, w)
}}

ENTRY main {{
  x = f32[8] parameter(0)
  zero = s32[] constant(0)
  s = (s32[], f32[8]) tuple(zero, x)
  l = (s32[], f32[8]) while(s), condition=cond, body=body
  ROOT y = f32[8] get-tuple-element(l), index=1
}}
"""
    return CollectiveProgram(f"loop/f32/{n}", text, n, 1, ((8,),), "f32")


def run_program(backend, program: CollectiveProgram) -> list[list]:
    """Every device's outputs (NumPy arrays) of ``program`` on ``backend`` (a runtime Backend
    with at least ``program.copies`` devices)."""
    exe = compile_on(
        backend,
        program.text,
        options={"num_replicas": program.num_replicas, "num_partitions": program.num_partitions},
    )
    results = exe.execute_sharded([program.inputs(k) for k in range(program.copies)])
    return [[buf.numpy() for buf in outs] for outs in results]
