"""A fresh process's first cpu compile imports only what that program needs.

Every module imported on the first compile's path is paid by every process (benchmarks/
fresh_compile.py measures it): these are modules a softmax (a reduce, elementwise ops, no custom
call, no HLORT_FLAGS) must not pull in, each kept off that path on purpose.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

_SOFTMAX = """
module @softmax {
  func.func public @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1]
      : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
    %2 = stablehlo.subtract %arg0, %1 : tensor<4x8xf32>
    %3 = stablehlo.exponential %2 : tensor<4x8xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [1]
      : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
    %6 = stablehlo.divide %3, %5 : tensor<4x8xf32>
    return %6 : tensor<4x8xf32>
  }
}
"""

_CHILD = """
import json, sys
import numpy as np
import hlort
exe = hlort.compile(sys.stdin.read(), "cpu")
x = np.linspace(-3, 3, 32, dtype=np.float32).reshape(4, 8)
out = exe(x)
loaded = sorted(sys.modules)  # before numpy.testing (which imports unittest and logging)
e = np.exp(x - x.max(axis=1, keepdims=True))
np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-6)
print(json.dumps(loaded))
"""

NOT_ON_THE_PATH = {
    "hlort.interpreter.custom_call_targets": "no custom call (registered on first lookup)",
    "hlort.interpreter.lapack_targets": "no custom call",
    "shlex": "HLORT_FLAGS unset",
    "hlort_rocm.probe": "another platform's probe (started only when its answer is needed)",
    "hlort_cuda.probe": "another platform's probe",
    "fractions": "exact constants of math this program does not emit",
    "hlort.codegen.llvm.float_math_f64": "no f64 math",
    "hlort.codegen.llvm.float_math_f32": "no all-f32 sin/cos/erf/expm1",
    "hlort.codegen.llvm.pow_f64": "no pow",
    "hlort.importers.stablehlo.quantization": "no quantized type",
    "hlort.importers.stablehlo.convert_control_flow": "no while/if/case (later converters)",
    "hlort.importers.stablehlo.spmd": "no SPMD ops (later converters)",
    "hlort.ir.shape_rules.control_flow": "no while/conditional (later shape rules)",
    "hlort.ir.shape_rules.collectives": "no collectives (later shape rules)",
    "logging": "no record anyone can see (hlort.log.lazy_logger)",
    "_hashlib": "small keys are hashed without OpenSSL (hlort.sha256)",
    "traceback": "no plugin failed (it only formats a failure's detail)",
    "hlort.plugin.compile_flags": "HLORT_FLAGS unset, options not given as a mapping",
    "importlib.resources": "llvmlite's library found without it (llvm_start._import_binding)",
    "zipfile": "imported only by importlib.resources (its readers)",
    "tempfile": "imported only by importlib.resources (its _common)",
    "hlort_cpu.blas_threads": "no dot (step_groups imports it for a group that has one)",
    "hlort_cpu.blas_functions": "no dot (BLAS look-ups through ctypes)",
    "hlort.plugin.conformance_profile": "no conformance run (plugins import it when asked)",
    "queue": "work_queue.py takes SimpleQueue from _queue (queue adds heapq)",
    "hlort.ir.custom_call_layouts": "no custom call (runtime.compile checks layouts of one)",
    "hlort.runtime.polymorphic": "no `?` dimension in the program text",
}


def _first_compile_child(code: str, tmp_path) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter compiling the softmax (its stdin), cache in tmp_path."""
    env = {k: v for k, v in os.environ.items() if k not in ("HLORT_FLAGS", "HLORT_PLATFORMS")}
    env.update(HLORT_CACHE_DIR=str(tmp_path), HLORT_FALLBACK="error")
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=_SOFTMAX,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_a_softmax_first_compile_leaves_unneeded_modules_unimported(tmp_path):
    done = _first_compile_child(_CHILD, tmp_path)
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "hlort_cpu.compiler" in loaded  # it did compile natively
    wrong = {m: why for m, why in NOT_ON_THE_PATH.items() if m in loaded}
    assert not wrong, wrong


# The same first compile with jit.py's prefetch helper turned off: which modules the compile
# imports after its kernels' LLVM compile started.
_AFTER_LLVM_CHILD = """
import sys  # not json: a first compile imports it after LLVM
import numpy as np
import hlort
from hlort_cpu.codegen import jit
jit._prefetch_started = True  # no helper: the compile imports everything itself
seen = {}
compile_ir = jit.JitEngine.compile_ir
def spy(self, ir_text):
    seen.setdefault("before", sorted(sys.modules))
    return compile_ir(self, ir_text)
jit.JitEngine.compile_ir = spy
hlort.compile(sys.stdin.read(), "cpu")
after = sorted(set(sys.modules) - set(seen["before"]))
print(repr([after, list(jit.AFTER_LLVM), list(jit.AFTER_LLVM_WITH_CACHE)]))
"""


def test_the_prefetch_list_is_what_a_first_compile_imports_after_llvm(tmp_path):
    """jit.AFTER_LLVM (+ _WITH_CACHE) are imported on a helper thread while LLVM runs: each
    must be one the compile would import after that point (else the helper adds an import, or
    overlaps nothing), and nothing big the compile imports then may be missing from it."""
    done = _first_compile_child(_AFTER_LLVM_CHILD, tmp_path)
    after, prefetched, with_cache = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    wanted = prefetched + with_cache
    assert set(wanted) <= set(after), sorted(set(wanted) - set(after))
    # what they import with them is fine (a C accelerator too: json's _json); any other top
    # module imported after LLVM is not
    covered = tuple(m.rsplit(".", 1)[0] for m in wanted) + tuple(wanted)
    covered += tuple("_" + m for m in wanted if "." not in m)
    missing = [m for m in after if not any(m == c or m.startswith(c + ".") for c in covered)]
    assert not missing, missing
