"""Failures reach JAX users as errors with hlort's code and message, never as a crash."""

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from jax_platforms import device, jax  # skips the module without jax


def test_unsupported_element_type_names_the_type():
    d = device("hlort_interpreter")
    with pytest.raises(Exception, match="s2 .*is not supported by hlort; supported: .*s4, u4"):
        jax.device_put(np.arange(3).astype(jax.numpy.int2), d).block_until_ready()


def test_int4_round_trips_through_the_bridge():
    d = device("hlort_interpreter")
    values = np.array([-8, 7, 0, -1]).astype(jax.numpy.int4)
    back = np.asarray(jax.device_put(values, d))
    assert back.dtype == values.dtype and back.tolist() == values.tolist()


def test_buffer_destroyed_while_an_exception_is_pending():
    d = device("hlort_cpu")
    try:
        x = jax.device_put(np.ones(3, np.float32), d)
        raise KeyError("pending")
    except KeyError as err:
        del x
        gc.collect()  # destroys the PJRT buffer while ``err`` is being handled
        assert err.args == ("pending",)


def test_interpreter_shutdown_with_live_buffers_exits_cleanly():
    code = textwrap.dedent("""
        import jax, numpy as np
        d = jax.devices("hlort_interpreter")[0]
        keep = [jax.device_put(np.ones(4, np.float32), d) for _ in range(3)]
        f = jax.jit(lambda x: x + 1, device=d)
        keep.append(f(keep[0]))
        print(float(keep[-1][0]))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("2.0")


def test_trace_names_each_pjrt_call_and_its_failures():
    code = textwrap.dedent("""
        import jax, numpy as np
        d = jax.devices("hlort_interpreter")[0]
        print(float(jax.jit(lambda x: x + 1, device=d)(np.ones(2, np.float32))[0]))
    """)
    env = {**os.environ, "HLORT_JAX_TRACE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    calls = [
        x.split(": ", 1)[1] for x in done.stderr.splitlines() if x.startswith("hlort-jax trace")
    ]
    assert {"PJRT_Client_Create", "PJRT_Client_Compile", "PJRT_LoadedExecutable_Execute"} <= set(
        calls
    )
    assert calls.index("PJRT_Client_Compile") < calls.index("PJRT_LoadedExecutable_Execute")
