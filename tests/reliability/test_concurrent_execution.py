"""One executable called from eight threads at once gives, bit for bit, the single-thread answer.

Covers the NumPy fast path and the buffer path on cpu (its arena, host pool and thread pool are
shared between calls) and on tpusim (its simulated HBM is shared between launches).
"""

import threading

import numpy as np
import pytest

import hlort

THREADS = 8
ROUNDS = 12
PROGRAM = """HloModule mixed
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[32,48] parameter(0)
  w = f32[48,16] parameter(1)
  d = f32[32,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[32,16] tanh(d)
  z = f32[] constant(0)
  r = f32[32] reduce(t, z), dimensions={1}, to_apply=add
  e = f32[32,48] exponential(x)
  ROOT out = (f32[32,16], f32[32], f32[32,48]) tuple(t, r, e)
}"""


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((32, 48)).astype(np.float32),
        rng.standard_normal((48, 16)).astype(np.float32),
    )


@pytest.mark.parametrize("platform", ["cpu", "tpusim"])
@pytest.mark.parametrize("path", ["arrays", "buffers"])
def test_eight_threads_get_the_single_thread_results(platform, path):
    exe = hlort.compile(PROGRAM, platform)
    backend = hlort.backend(platform)
    seeds = [k * 100 + r for k in range(THREADS) for r in range(ROUNDS)]
    expected = {s: exe(*_inputs(s)) for s in seeds}
    got: dict[int, tuple] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def work(k: int) -> None:
        try:
            barrier.wait(60)
            for r in range(ROUNDS):
                seed = k * 100 + r
                args = _inputs(seed)
                if path == "buffers":
                    outs = exe(*(backend.device_put(a) for a in args))
                    got[seed] = tuple(o.numpy() for o in outs)
                else:
                    got[seed] = exe(*args)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors[0]
    assert set(got) == set(seeds)
    for seed in seeds:
        for a, b in zip(got[seed], expected[seed], strict=True):
            assert a.tobytes() == b.tobytes(), f"seed {seed} differs from the single-thread run"
