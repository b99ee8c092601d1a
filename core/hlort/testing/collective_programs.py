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
    add(
        "all_reduce_scalar",
        f"  ROOT y = {t}[] all-reduce(x), replica_groups={{}}, to_apply=sum",
        dims=((),),
    )
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


def large_all_reduce_programs(devices: int, t: str = "f32") -> list[CollectiveProgram]:
    """All-reduces of operands large enough (20,480 elements) that a backend may split the
    reduction between the members (cpu does): every reducer, subgroups, a variadic all-reduce
    and an async pair."""
    n = devices
    halves = "{{0,1}}" if n == 2 else "{{0,1},{2,3}}"
    d = "128,160"
    out: list[CollectiveProgram] = []

    def add(name: str, body: str, operands: int = 1) -> None:
        params = "\n".join(_x(t, d, name=f"x{k}" if k else "x", index=k) for k in range(operands))
        text = _module(f"{name}_{t}_{n}", t, f", replica_count={n}", params, body)
        out.append(CollectiveProgram(f"{name}/{t}/{n}", text, n, 1, ((128, 160),) * operands, t))

    add("large_sum", f"  ROOT y = {t}[{d}] all-reduce(x), replica_groups={{}}, to_apply=sum")
    add(
        "large_reducer_halves",
        f"  ROOT y = {t}[{d}] all-reduce(x), replica_groups={halves}, to_apply=twice_plus",
    )
    if t != "pred":
        add(
            "large_max", f"  ROOT y = {t}[{d}] all-reduce(x), replica_groups={{}}, to_apply=biggest"
        )
    add(
        "large_variadic",
        f"  ROOT y = ({t}[{d}], {t}[{d}]) all-reduce(x, x1), replica_groups={{}}, to_apply=sum",
        operands=2,
    )
    add(
        "large_async",
        f"  s = {t}[{d}] all-reduce-start(x), replica_groups={{}}, to_apply=sum\n"
        f"  ROOT y = {t}[{d}] all-reduce-done(s)",
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


MLP_SIZES = (8, 16, 16, 4)  # input, hidden, hidden, output


def mlp_step_program(batch: int, replicas: int, global_batch: int | None = None) -> str:
    """One data-parallel SGD step of a 3-layer MLP (tanh, tanh, linear; mean squared error)
    as XLA HLO text for ``replicas`` copies, each on ``batch`` rows of the global batch: forward,
    backward, an all-reduce (sum) of every gradient and of the loss, then ``w -= 0.1 * g``.
    Parameters: x[batch, 8], y[batch, 4], w1, b1, w2, b2, w3, b3; result: (loss, the six new
    parameters). With ``replicas=1`` and ``batch`` the global batch it is the single-device step
    (the all-reduces are then identities). Dots are HIGHEST precision (f32 on every backend)."""
    n = global_batch if global_batch is not None else batch * replicas
    i, h1, h2, o = MLP_SIZES
    b = batch

    def dot(name, shape, lhs, rhs, lc, rc):
        return (
            f"  {name} = f32[{shape}] dot({lhs}, {rhs}), lhs_contracting_dims={{{lc}}}, "
            f"rhs_contracting_dims={{{rc}}}, operand_precision={{highest,highest}}"
        )

    def dense(k, x, w, bias, rows, cols, act):
        lines = [
            dot(f"z{k}", f"{rows},{cols}", x, w, 1, 0),
            f"  bb{k} = f32[{rows},{cols}] broadcast({bias}), dimensions={{1}}",
            f"  a{k} = f32[{rows},{cols}] add(z{k}, bb{k})",
        ]
        if act:
            lines.append(f"  h{k} = f32[{rows},{cols}] tanh(a{k})")
        return lines

    def colsum(name, src, rows, cols):
        return f"  {name} = f32[{cols}] reduce({src}, zero), dimensions={{0}}, to_apply=sum"

    def tanh_grad(k, upstream, rows, cols):
        return [
            f"  sq{k} = f32[{rows},{cols}] multiply(h{k}, h{k})",
            f"  ones{k} = f32[{rows},{cols}] broadcast(one), dimensions={{}}",
            f"  dt{k} = f32[{rows},{cols}] subtract(ones{k}, sq{k})",
            f"  da{k} = f32[{rows},{cols}] multiply({upstream}, dt{k})",
        ]

    def all_reduce(name, shape):
        return f"  {name}r = f32[{shape}] all-reduce({name}), replica_groups={{}}, to_apply=sum"

    def sgd(name, param, shape):
        return [
            f"  lr_{name} = f32[{shape}] broadcast(lr), dimensions={{}}",
            f"  st_{name} = f32[{shape}] multiply(lr_{name}, {name}r)",
            f"  new_{param} = f32[{shape}] subtract({param}, st_{name})",
        ]

    body = [
        f"  x = f32[{b},{i}] parameter(0)",
        f"  y = f32[{b},{o}] parameter(1)",
        f"  w1 = f32[{i},{h1}] parameter(2)",
        f"  b1 = f32[{h1}] parameter(3)",
        f"  w2 = f32[{h1},{h2}] parameter(4)",
        f"  b2 = f32[{h2}] parameter(5)",
        f"  w3 = f32[{h2},{o}] parameter(6)",
        f"  b3 = f32[{o}] parameter(7)",
        "  zero = f32[] constant(0)",
        "  one = f32[] constant(1)",
        "  lr = f32[] constant(0.1)",
        f"  inv_n = f32[] constant({1.0 / n!r})",
        *dense(1, "x", "w1", "b1", b, h1, True),
        *dense(2, "h1", "w2", "b2", b, h2, True),
        *dense(3, "h2", "w3", "b3", b, o, False),
        f"  d = f32[{b},{o}] subtract(a3, y)",
        f"  dd = f32[{b},{o}] multiply(d, d)",
        "  sse = f32[] reduce(dd, zero), dimensions={0,1}, to_apply=sum",
        "  loss = f32[] multiply(sse, inv_n)",
        "  lossr = f32[] all-reduce(loss), replica_groups={}, to_apply=sum",
        "  two_n = f32[] add(inv_n, inv_n)",
        f"  tn = f32[{b},{o}] broadcast(two_n), dimensions={{}}",
        f"  do = f32[{b},{o}] multiply(d, tn)",
        dot("gw3", f"{h2},{o}", "h2", "do", 0, 0),
        colsum("gb3", "do", b, o),
        dot("dh2", f"{b},{h2}", "do", "w3", 1, 1),
        *tanh_grad(2, "dh2", b, h2),
        dot("gw2", f"{h1},{h2}", "h1", "da2", 0, 0),
        colsum("gb2", "da2", b, h2),
        dot("dh1", f"{b},{h1}", "da2", "w2", 1, 1),
        *tanh_grad(1, "dh1", b, h1),
        dot("gw1", f"{i},{h1}", "x", "da1", 0, 0),
        colsum("gb1", "da1", b, h1),
    ]
    grads = [
        ("gw1", "w1", f"{i},{h1}"),
        ("gb1", "b1", f"{h1}"),
        ("gw2", "w2", f"{h1},{h2}"),
        ("gb2", "b2", f"{h2}"),
        ("gw3", "w3", f"{h2},{o}"),
        ("gb3", "b3", f"{o}"),
    ]
    for g, p, shape in grads:
        body.append(all_reduce(g, shape))
        body += sgd(g, p, shape)
    types = ", ".join(["f32[]", *[f"f32[{shape}]" for _, _, shape in grads]])
    outs = ", ".join(["lossr", *[f"new_{p}" for _, p, _ in grads]])
    body.append(f"  ROOT out = ({types}) tuple({outs})")
    reducer = (
        "sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}"
    )
    return (
        f"HloModule mlp_step_{replicas}x{batch}, replica_count={replicas}\n\n{reducer}\n\n"
        "ENTRY main {\n" + "\n".join(body) + "\n}\n"
    )


def mlp_inputs(global_batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list]:
    """(x, y, [w1, b1, w2, b2, w3, b3]) for :func:`mlp_step_program`, seeded."""
    rng = np.random.default_rng(seed)
    i, h1, h2, o = MLP_SIZES
    x = rng.standard_normal((global_batch, i)).astype(np.float32)
    y = rng.standard_normal((global_batch, o)).astype(np.float32)
    params = []
    for fan_in, fan_out in ((i, h1), (h1, h2), (h2, o)):
        params.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32))
        params.append((0.1 * rng.standard_normal(fan_out)).astype(np.float32))
    return x, y, params
