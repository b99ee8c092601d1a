"""The Shardings extension: an executable's parameter and output shardings for jaxlib.

jaxlib's C-API client asks ``PJRT_Shardings_PJRT_Executable_{Parameter,Output}Shardings`` for
them (serialized ``xla.OpSharding``, one per flat parameter or output, devices numbered by
partition); JAX takes an unspecified ``out_shardings`` of ``jit`` from there and checks the
parameters' against the shardings it asked for. They are hlort's ``Executable.shardings()``:
what its SPMD partitioner recorded. A one-device executable answers null arrays: JAX then uses
its own single-device sharding, as for a plugin without shardings.
"""

from __future__ import annotations

import ctypes

from hlort.ir.sharding import HloSharding
from hlort_jax import proto_wire
from hlort_jax.handles import HANDLES
from hlort_jax.pjrt_call import pjrt


def _c_arrays(exe, shardings: list[HloSharding]) -> tuple[int, int, int]:
    blobs = [proto_wire.op_sharding_proto(s) for s in shardings]
    addresses = [exe.c.put(b)[0] for b in blobs]
    return (
        len(blobs),
        exe.c.array(ctypes.c_void_p, addresses),
        exe.c.array(ctypes.c_size_t, [len(b) for b in blobs]),
    )


def _answers(exe) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    if exe.shardings_c is None:
        if len(exe.devices) == 1:
            exe.shardings_c = ((len(exe.exe.input_shapes), 0, 0), (exe.num_outputs, 0, 0))
        else:
            params, outs = exe.exe.shardings()
            exe.shardings_c = (_c_arrays(exe, params), _c_arrays(exe, outs))
    return exe.shardings_c


@pjrt("Shardings_ParameterShardings")
def parameter_shardings_handler(a) -> None:
    a.num_parameters, a.shardings, a.sharding_sizes = _answers(HANDLES.get(a.executable))[0]


@pjrt("Shardings_OutputShardings")
def output_shardings_handler(a) -> None:
    a.num_outputs, a.shardings, a.sharding_sizes = _answers(HANDLES.get(a.executable))[1]
