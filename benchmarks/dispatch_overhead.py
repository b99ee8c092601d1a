"""Per-execute cost of a tiny program on cpu (f32[4] -> f32[4]): does asynchronous execution
cost the caller anything? Best of N rounds, the three modes interleaved in one process so the
machine's noise hits them alike:

* ``synchronous queue``: the launch runs inside ``execute`` on the caller's thread (what the cpu
  plugin did before execution became asynchronous);
* ``inline when idle``: what cpu does now for a cheap program (``CpuExecutable.runs_inline``):
  the caller's thread when the device queue is idle and the inputs are ready;
* ``queue thread``: every launch handed to the device's queue thread (what cpu does for
  programs above the inline size).

Rows: ``exe(x)`` with a NumPy array (the host fast path, never queued), ``exe(buf)`` (dispatch
only), ``np.asarray(exe(buf))`` (dispatch, wait, copy out). ``--quick``: a few rounds (CI).
"""

from __future__ import annotations

import sys
import time

import numpy as np

import hlort
from hlort import Builder, shape


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    rounds, calls = (3, 50) if quick else (40, 200)
    b = Builder("tiny")
    x = b.parameter(shape.array("f32", [4]), "x")
    exe = hlort.compile(b.build(b.add(x, x)), "cpu:0")
    queue = exe.raw.placements[0].device.queue
    array = np.arange(4, dtype=np.float32)
    buf = hlort.device_put(array, exe.device)
    modes = {
        "synchronous queue": (True, False),
        "inline when idle": (False, True),
        "queue thread": (False, False),
    }
    rows = {
        "exe(x) array": lambda: exe(array),
        "exe(buf)": lambda: exe(buf),
        "np.asarray(exe(buf))": lambda: np.asarray(exe(buf)),
    }
    best: dict[tuple[str, str], float] = {}
    saved = queue.synchronous, exe.raw._inline
    try:
        for _ in range(rounds):
            for mode, (synchronous, inline) in modes.items():
                queue.synchronous, exe.raw._inline = synchronous, inline
                for row, fn in rows.items():
                    start = time.perf_counter()
                    for _ in range(calls):
                        fn()
                    spent = (time.perf_counter() - start) / calls
                    best[mode, row] = min(best.get((mode, row), spent), spent)
    finally:
        queue.synchronous, exe.raw._inline = saved
    np.testing.assert_array_equal(np.asarray(exe(buf)), array * 2)
    print(f"cpu dispatch of f32[4] add, best of {rounds} x {calls} calls (us per call)")
    print(f"{'':24}" + "".join(f"{mode:>20}" for mode in modes))
    for row in rows:
        print(f"{row:24}" + "".join(f"{best[m, row] * 1e6:>20.1f}" for m in modes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
