"""A fresh process's first cpu compile imports only what that program needs.

Every module imported on the first compile's path is paid by every process (benchmarks/
fresh_compile.py measures it): these are modules a softmax (a reduce, elementwise ops, no custom
call, no HLORT_FLAGS) must not pull in, each kept off that path on purpose.
"""

from __future__ import annotations

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
}


def test_a_softmax_first_compile_leaves_unneeded_modules_unimported(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HLORT_FLAGS", "HLORT_PLATFORMS")}
    env.update(HLORT_CACHE_DIR=str(tmp_path), HLORT_FALLBACK="error")
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=_SOFTMAX,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "hlort_cpu.compiler" in loaded  # it did compile natively
    wrong = {m: why for m, why in NOT_ON_THE_PATH.items() if m in loaded}
    assert not wrong, wrong
