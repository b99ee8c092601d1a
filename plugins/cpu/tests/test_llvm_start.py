"""Host LLVM started once per process, in the background when asked; compiles one at a time.

The background start runs in fresh interpreters (a process starts LLVM once), and the first
compile-time benchmark script is run once to check it measures and prints one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from hlort.ir.computation import Computation  # noqa: E402
from hlort.ir.instruction import Instruction  # noqa: E402
from hlort.ir.opcodes import Opcode  # noqa: E402
from hlort.shape import array  # noqa: E402
from hlort_cpu.codegen.compiled import compile_kernel_module  # noqa: E402
from hlort_cpu.codegen.jit import jit_engine  # noqa: E402
from hlort_cpu.codegen.kernel_builder import KernelModule  # noqa: E402
from hlort_cpu.codegen.llvm_start import host_llvm  # noqa: E402

_BACKGROUND = """
import threading
from hlort_cpu.codegen import llvm_start
assert llvm_start.start_in_background(force=True)
assert llvm_start.start_in_background(force=True)  # idempotent: one thread
host = llvm_start.host_llvm()
assert host is llvm_start.host_llvm()
from hlort_cpu.codegen.jit import jit_engine
engine = jit_engine()
assert engine.machine is host.machine and engine.engine is host.engine
import hlort, numpy as np
exe = hlort.compile("HloModule m\\nENTRY e {\\n p = f32[4] parameter(0)\\n"
                    " ROOT r = f32[4] exponential(p)\\n}", "cpu")
x = np.array([0, 1, -1, 2], np.float32)
assert np.allclose(exe(x), np.exp(x), rtol=1e-6)
llvm_start._THREAD.join(timeout=60)
assert not llvm_start._THREAD.is_alive()
print("ok", len([t for t in threading.enumerate() if t.name == "hlort-llvm-start"]))
"""


def test_background_start_is_used_by_the_engine_and_compiles(tmp_path):
    env = {**os.environ, "HLORT_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", _BACKGROUND], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["ok", "0"]


def test_the_engine_reuses_one_target_machine():
    assert jit_engine().machine is host_llvm().machine
    assert jit_engine() is jit_engine()


def _negate_module(name: str, n: int) -> KernelModule:
    comp = Computation(f"neg_{name}")
    p = comp.add_instruction(
        Instruction(Opcode.PARAMETER, array("f32", [n]), (), name="p", parameter_number=0)
    )
    root = comp.add_instruction(Instruction(Opcode.NEGATE, array("f32", [n]), (p,), name="r"))
    comp.set_root(root)
    km = KernelModule(f"threads_{name}")
    km.add(f"threaded_negate_{name}", comp)
    return km


def test_compiles_from_several_threads_at_once_are_safe():
    results: dict[int, object] = {}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            _, kernels = compile_kernel_module(_negate_module(f"t{k}", 64 + k))
            kernel = kernels[f"threaded_negate_t{k}"]
            results[k] = kernel(np.arange(64 + k, dtype=np.float32))[0]
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k, got in results.items():
        np.testing.assert_array_equal(got, -np.arange(64 + k, dtype=np.float32))


_FORK_MID_START = """
import os, time
import numpy as np
from hlort_cpu.codegen import llvm_start
slow_create = llvm_start._create
llvm_start._create = lambda opt: (time.sleep(0.5), slow_create(opt))[1]  # still starting at fork
import hlort
assert llvm_start.start_in_background(force=True)
pid = os.fork()
if pid == 0:
    exe = hlort.compile("HloModule m\\nENTRY e {\\n p = f32[3] parameter(0)\\n"
                        " ROOT r = f32[3] negate(p)\\n}", "cpu")
    x = np.array([1, -2, 0], np.float32)
    os._exit(0 if np.array_equal(exe(x), -x) else 3)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("child", os.waitstatus_to_exitcode(status))
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    print("child hung")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_process_forked_while_llvm_starts_compiles(tmp_path):
    env = {**os.environ, "HLORT_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", _FORK_MID_START],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["child", "0"], proc.stderr[-3000:]
