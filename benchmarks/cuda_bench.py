"""GPU benchmark of the cuda platform, printed as the ratios issue 15 asks for (needs a GPU).

Every time is GPU time between two stream events recorded around one execution's steps on the
stream (the median of REPEAT after WARMUP), so the host's gaps between executions are not
counted; the fused cases also print the time per execute through the API (host included).
Ratios, all from one run:

- copy: device-to-device copy bandwidth (bytes read + written per second): the floor below.
- fused elementwise ``x + y*z`` and ``reduce_sum(x + y*z)`` at 2^26 f32: achieved bytes/s as a
  share of the copy bandwidth (goal >= 0.85);
- softmax and layernorm over [4096, 1024] f32: the same share (goal >= 0.70);
- matmul 4096^3 f32 and bf16: cuBLAS alone (the same gemm call, straight) / hlort (goal >= 0.95);
- softmax(relu(matmul + bias)) at 2048: its time / matmul alone (goal <= 1.15).

Usage: ``python benchmarks/cuda_bench.py [--quick] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

WARMUP, REPEAT = 3, 20


def elementwise(n: int) -> str:
    return f"""HloModule ew
ENTRY main {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  z = f32[{n}] parameter(2)
  m = f32[{n}] multiply(y, z)
  ROOT s = f32[{n}] add(x, m)
}}
"""


ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
"""


def reduce_sum(n: int) -> str:
    return f"""HloModule reduce_sum
{ADD}
ENTRY main {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  z = f32[{n}] parameter(2)
  m = f32[{n}] multiply(y, z)
  s = f32[{n}] add(x, m)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(s, zero), dimensions={{0}}, to_apply=add
}}
"""


def _softmax_body(rows: int, cols: int, x: str) -> str:
    return f"""  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  mx = f32[{rows}] reduce({x}, ninf), dimensions={{1}}, to_apply=max
  mxb = f32[{rows},{cols}] broadcast(mx), dimensions={{0}}
  d = f32[{rows},{cols}] subtract({x}, mxb)
  e = f32[{rows},{cols}] exponential(d)
  sm = f32[{rows}] reduce(e, zero), dimensions={{1}}, to_apply=add
  smb = f32[{rows},{cols}] broadcast(sm), dimensions={{0}}
  ROOT out = f32[{rows},{cols}] divide(e, smb)
"""


def softmax(rows: int, cols: int) -> str:
    return (
        f"HloModule softmax\n{ADD}\nENTRY main {{\n  x = f32[{rows},{cols}] parameter(0)\n"
        f"{_softmax_body(rows, cols, 'x')}}}\n"
    )


def layernorm(rows: int, cols: int) -> str:
    return f"""HloModule layernorm
{ADD}
ENTRY main {{
  x = f32[{rows},{cols}] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant({cols})
  eps = f32[] constant(1e-5)
  s = f32[{rows}] reduce(x, zero), dimensions={{1}}, to_apply=add
  nb = f32[{rows}] broadcast(n), dimensions={{}}
  mean = f32[{rows}] divide(s, nb)
  meanb = f32[{rows},{cols}] broadcast(mean), dimensions={{0}}
  c = f32[{rows},{cols}] subtract(x, meanb)
  c2 = f32[{rows},{cols}] multiply(c, c)
  v = f32[{rows}] reduce(c2, zero), dimensions={{1}}, to_apply=add
  var = f32[{rows}] divide(v, nb)
  epsb = f32[{rows}] broadcast(eps), dimensions={{}}
  ve = f32[{rows}] add(var, epsb)
  r = f32[{rows}] rsqrt(ve)
  rb = f32[{rows},{cols}] broadcast(r), dimensions={{0}}
  ROOT out = f32[{rows},{cols}] multiply(c, rb)
}}
"""


def matmul(n: int, dtype: str) -> str:
    return f"""HloModule matmul_{dtype}
ENTRY main {{
  a = {dtype}[{n},{n}] parameter(0)
  b = {dtype}[{n},{n}] parameter(1)
  ROOT d = {dtype}[{n},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def attention_like(n: int) -> str:
    return f"""HloModule softmax_relu_matmul
{ADD}
ENTRY main {{
  a = f32[{n},{n}] parameter(0)
  b = f32[{n},{n}] parameter(1)
  bias = f32[{n}] parameter(2)
  mm = f32[{n},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  bb = f32[{n},{n}] broadcast(bias), dimensions={{1}}
  sa = f32[{n},{n}] add(mm, bb)
  z = f32[] constant(0)
  zb = f32[{n},{n}] broadcast(z), dimensions={{}}
  r = f32[{n},{n}] maximum(sa, zb)
{_softmax_body(n, n, "r")}}}
"""


class GpuTimer:
    """GPU time of work on one device's stream, measured with stream events.

    ``device_ms(job)``: ``job`` runs on the device's work-queue thread between two events, once
    per repeat; the median of the event pairs is the device time of one run, free of the host's
    gaps between runs. ``span_ms(enqueue)``: the events bracket everything ``enqueue`` submits
    (host overhead included where the host is slower than the GPU).
    """

    def __init__(self, device):
        self.device = device
        self.driver = device.driver

    def _pair(self):
        return (
            self.driver.event_create(self.device.ordinal, timing=True),
            self.driver.event_create(self.device.ordinal, timing=True),
        )

    def _elapsed(self, start, end) -> float:
        self.driver.event_synchronize(end)
        ms = self.driver.event_elapsed_ms(start, end)
        self.driver.event_destroy(start)
        self.driver.event_destroy(end)
        return ms

    def device_ms(self, job) -> float:
        device, driver = self.device, self.driver

        def bracketed():
            start, end = self._pair()
            driver.event_record(start, device.stream)
            job()
            driver.event_record(end, device.stream)
            return start, end

        for _ in range(WARMUP):
            self._elapsed(*device.queue.enqueue(bracketed).result())
        pending = [device.queue.enqueue(bracketed) for _ in range(REPEAT)]
        return float(np.median([self._elapsed(*p.result()) for p in pending]))

    def span_ms(self, enqueue_work) -> float:
        device, driver = self.device, self.driver
        start, end = self._pair()
        device.queue.enqueue(lambda: driver.event_record(start, device.stream)).wait()
        enqueue_work()
        device.queue.enqueue(lambda: driver.event_record(end, device.stream)).wait()
        return self._elapsed(start, end)


class Timed:
    """One compiled benchmark module on the device, with its inputs there."""

    def __init__(self, backend, text: str, inputs, timer: GpuTimer):
        self.raw = backend.compile(text).raw
        self.timer, self.device = timer, timer.device
        self.buffers = [backend.client.buffer_from_host(x, self.device) for x in inputs]
        for buf in self.buffers:
            buf.ready_event().wait()
        self.blocks = [buf.storage_now() for buf in self.buffers]

    def device_ms(self) -> float:
        """GPU time of one execution's steps (the program run straight on the stream)."""
        runner, device = self.raw.runner, self.device

        def job() -> None:
            for block in runner.run(device, self.blocks, set()):
                device.free(block)  # stream order: reused only by later work

        return self.timer.device_ms(job)

    def wall_ms(self) -> float:
        """Per execution through the API (Executable.execute), REPEAT back to back."""
        outs: list = []
        for _ in range(WARMUP):
            outs.append(self.raw.execute([self.buffers])[0])
        ms = self.timer.span_ms(
            lambda: outs.extend(self.raw.execute([self.buffers])[0] for _ in range(REPEAT))
        )
        for row in outs:
            for buf in row:
                buf.ready_event().wait()
                buf.delete()
        return ms / REPEAT


def cublas_alone_ms(timed: Timed) -> float:
    """The program's own gemm call, straight to cuBLAS on the same input blocks."""
    from hlort.codegen.gpu.program import LibraryCall

    device, program = timed.device, timed.raw.program
    call = next(s for s in program.steps if isinstance(s, LibraryCall))
    a, b, c = call.args
    blocks = {
        s: timed.blocks[program.parameters.index(s)] for s in (a, b) if s in program.parameters
    }
    for s in (a, b, c):
        if s not in blocks:
            blocks[s] = device.allocate_bytes(program.slot(s).size)
    cublas = timed.raw.runner.library  # the client's cuBLAS runner: its handle, its stream
    ms = timed.timer.device_ms(lambda: cublas(device, call, [blocks[a], blocks[b], blocks[c]]))
    for s, block in blocks.items():
        if s not in program.parameters:
            device.free(block)
    return ms


def copy_bandwidth(device, timer: GpuTimer, nbytes: int) -> float:
    src, dst = device.allocate_bytes(nbytes), device.allocate_bytes(nbytes)
    ms = timer.device_ms(
        lambda: device.driver.copy_d2d_async(dst.pointer, src.pointer, nbytes, device.stream)
    )
    device.free(src)
    device.free(dst)
    return 2 * nbytes / (ms * 1e-3)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    import hlort

    backend = hlort.backend("cuda")
    device = backend.client.devices()[0]
    timer = GpuTimer(device)
    rng = np.random.default_rng(0)
    big = 1 << (20 if args.quick else 26)
    rows, cols = (256, 1024) if args.quick else (4096, 1024)
    mm, att = (512, 256) if args.quick else (4096, 2048)
    f32 = lambda *s: rng.standard_normal(s, dtype=np.float32)  # noqa: E731
    results: dict[str, float] = {}
    t0 = time.perf_counter()
    print(f"device: {device.kind} ({device.properties.arch}), {backend.platform_version}")
    bw = copy_bandwidth(device, timer, big * 4)
    results["copy_bandwidth_gb_s"] = bw / 1e9
    print(f"copy bandwidth                     {bw / 1e9:8.1f} GB/s (read + write)")

    def share(name: str, text: str, inputs, nbytes: int, goal: str) -> None:
        timed = Timed(backend, text, inputs, timer)
        ms, wall = timed.device_ms(), timed.wall_ms()
        ratio = nbytes / (ms * 1e-3) / bw
        results[name] = ratio
        print(
            f"{name:<34} {ms:8.3f} ms  {ratio:5.2f} of copy bandwidth  (goal {goal}; "
            f"{wall:.3f} ms per execute through the API)"
        )

    xs = [f32(big) for _ in range(3)]
    log2 = big.bit_length() - 1
    share(f"elementwise x+y*z 2^{log2}", elementwise(big), xs, 16 * big, ">= 0.85")
    share(f"reduce_sum(x+y*z) 2^{log2}", reduce_sum(big), xs, 12 * big, ">= 0.85")
    x = f32(rows, cols)
    share(f"softmax [{rows},{cols}]", softmax(rows, cols), [x], 8 * rows * cols, ">= 0.70")
    share(f"layernorm [{rows},{cols}]", layernorm(rows, cols), [x], 8 * rows * cols, ">= 0.70")
    for dtype, np_dtype in (("f32", np.float32), ("bf16", "bfloat16")):
        import ml_dtypes

        dt = ml_dtypes.bfloat16 if np_dtype == "bfloat16" else np_dtype
        a, b = f32(mm, mm).astype(dt), f32(mm, mm).astype(dt)
        timed = Timed(backend, matmul(mm, dtype), [a, b], timer)
        ms, alone = timed.device_ms(), cublas_alone_ms(timed)
        results[f"matmul_{dtype}_cublas_over_hlort"] = alone / ms
        print(
            f"matmul {mm}^3 {dtype:<5}                {ms:8.3f} ms  cuBLAS alone {alone:.3f} ms"
            f"  ratio {alone / ms:5.2f}  (goal >= 0.95)"
        )
    a, b, bias = f32(att, att), f32(att, att), f32(att)
    fused = Timed(backend, attention_like(att), [a, b, bias], timer).device_ms()
    plain = Timed(backend, matmul(att, "f32"), [a, b], timer).device_ms()
    results["softmax_relu_matmul_over_matmul"] = fused / plain
    print(
        f"softmax(relu(matmul+bias)) {att}      {fused:8.3f} ms  matmul alone {plain:.3f} ms"
        f"  ratio {fused / plain:5.2f}  (goal <= 1.15)"
    )
    print(f"benchmark took {time.perf_counter() - t0:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
