"""Shape-polymorphic StableHLO programs, one per dynamic op, with NumPy references.

Each program's entry has ``?`` dims; the conformance suite refines it for each of its
``shapes`` (shape refinement turns the dynamic op into its static form), runs it on the backend
and compares with ``reference`` (an independent NumPy formula, not the interpreter). Dimension
sizes are computed inside the program from ``get_dimension_size``, as JAX exports them. The
convolution asks for HIGHEST precision, so a backend whose DEFAULT is bfloat16 (tpusim, as
TPUs) is held to f32.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DynamicProgram:
    op: str  # the dynamic op it covers
    text: str
    shapes: Sequence[Sequence[tuple[int, ...]]]  # argument dims to refine for, one list per run
    reference: Callable[..., list[np.ndarray]]
    dtypes: Sequence[str] = ("float32",)  # one per argument

    def inputs(self, dims: Sequence[tuple[int, ...]], seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        out = []
        for d, dt in zip(dims, self.dtypes, strict=True):
            if np.dtype(dt).kind == "i":
                out.append(rng.integers(0, 4, size=d).astype(dt))
            else:
                out.append(rng.standard_normal(d).astype(dt))
        return out


_SIZE0 = """    %n = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<{t}>) -> tensor<i32>
    %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
"""

PROGRAMS: tuple[DynamicProgram, ...] = (
    DynamicProgram(
        "dynamic_broadcast_in_dim",
        """func.func @main(%arg0: tensor<?xf32>) -> tensor<3x?xf32> {
"""
        + _SIZE0.format(t="?xf32")
        + """    %c3 = stablehlo.constant dense<3> : tensor<1xi32>
    %s = stablehlo.concatenate %c3, %n1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %0 = stablehlo.dynamic_broadcast_in_dim %arg0, %s, dims = [1] : (tensor<?xf32>,
        tensor<2xi32>) -> tensor<3x?xf32>
    return %0 : tensor<3x?xf32>
  }""",
        [[(1,)], [(5,)]],
        lambda x: [np.broadcast_to(x, (3, x.shape[0]))],
    ),
    DynamicProgram(
        "dynamic_reshape",
        """func.func @main(%arg0: tensor<?x4xf32>) -> tensor<?xf32> {
"""
        + _SIZE0.format(t="?x4xf32")
        + """    %c4 = stablehlo.constant dense<4> : tensor<1xi32>
    %m = stablehlo.multiply %n1, %c4 : tensor<1xi32>
    %0 = stablehlo.dynamic_reshape %arg0, %m : (tensor<?x4xf32>, tensor<1xi32>) -> tensor<?xf32>
    return %0 : tensor<?xf32>
  }""",
        [[(2, 4)], [(6, 4)]],
        lambda x: [x.reshape(-1)],
    ),
    DynamicProgram(
        "dynamic_iota",
        """func.func @main(%arg0: tensor<?x3xf32>) -> tensor<?x3xf32> {
"""
        + _SIZE0.format(t="?x3xf32")
        + """    %c3 = stablehlo.constant dense<3> : tensor<1xi32>
    %s = stablehlo.concatenate %n1, %c3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %i = stablehlo.dynamic_iota %s, dim = 0 : (tensor<2xi32>) -> tensor<?x3xf32>
    %0 = stablehlo.add %arg0, %i : tensor<?x3xf32>
    return %0 : tensor<?x3xf32>
  }""",
        [[(1, 3)], [(4, 3)]],
        lambda x: [x + np.arange(x.shape[0], dtype=np.float32)[:, None]],
    ),
    DynamicProgram(
        "real_dynamic_slice",
        """func.func @main(%arg0: tensor<?x6xf32>) -> tensor<?x2xf32> {
"""
        + _SIZE0.format(t="?x6xf32")
        + """    %c1 = stablehlo.constant dense<1> : tensor<1xi32>
    %c5 = stablehlo.constant dense<5> : tensor<1xi32>
    %c0 = stablehlo.constant dense<0> : tensor<1xi32>
    %c2 = stablehlo.constant dense<2> : tensor<1xi32>
    %lo = stablehlo.concatenate %c0, %c1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %hi = stablehlo.concatenate %n1, %c5, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %st = stablehlo.concatenate %c1, %c2, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %0 = stablehlo.real_dynamic_slice %arg0, %lo, %hi, %st : (tensor<?x6xf32>, tensor<2xi32>,
        tensor<2xi32>, tensor<2xi32>) -> tensor<?x2xf32>
    return %0 : tensor<?x2xf32>
  }""",
        [[(2, 6)], [(5, 6)]],
        lambda x: [x[:, 1:5:2]],
    ),
    DynamicProgram(
        "real_dynamic_slice (runtime start)",
        """func.func @main(%arg0: tensor<?x5xf32>, %arg1: tensor<2xi32>) -> tensor<?x3xf32> {
"""
        + _SIZE0.format(t="?x5xf32")
        + """    %c3 = stablehlo.constant dense<3> : tensor<1xi32>
    %c1 = stablehlo.constant dense<1> : tensor<2xi32>
    %size = stablehlo.concatenate %n1, %c3, dim = 0 : (tensor<1xi32>,
        tensor<1xi32>) -> tensor<2xi32>
    %hi = stablehlo.add %arg1, %size : tensor<2xi32>
    %0 = stablehlo.real_dynamic_slice %arg0, %arg1, %hi, %c1 : (tensor<?x5xf32>, tensor<2xi32>,
        tensor<2xi32>, tensor<2xi32>) -> tensor<?x3xf32>
    return %0 : tensor<?x3xf32>
  }""",
        [[(2, 5), (2,)], [(3, 5), (2,)]],
        lambda x, s: [_clamped_slice(x, s, (x.shape[0], 3))],
        ("float32", "int32"),
    ),
    DynamicProgram(
        "dynamic_pad",
        """func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
    %z = stablehlo.constant dense<0.5> : tensor<f32>
    %lo = stablehlo.constant dense<1> : tensor<1xi32>
    %hi = stablehlo.constant dense<2> : tensor<1xi32>
    %in = stablehlo.constant dense<1> : tensor<1xi32>
    %0 = stablehlo.dynamic_pad %arg0, %z, %lo, %hi, %in : (tensor<?xf32>, tensor<f32>,
        tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?xf32>
    return %0 : tensor<?xf32>
  }""",
        [[(1,)], [(4,)]],
        lambda x: [_pad_reference(x, 0.5, 1, 2, 1)],
    ),
    DynamicProgram(
        "dynamic_gather",
        """func.func @main(%arg0: tensor<?x4xf32>, %arg1: tensor<2xi32>) -> tensor<2x?x2xf32> {
"""
        + _SIZE0.format(t="?x4xf32")
        + """    %c2 = stablehlo.constant dense<2> : tensor<1xi32>
    %sizes = stablehlo.concatenate %n1, %c2, dim = 0 : (tensor<1xi32>,
        tensor<1xi32>) -> tensor<2xi32>
    %idx = stablehlo.reshape %arg1 : (tensor<2xi32>) -> tensor<2x1xi32>
    %0 = "stablehlo.dynamic_gather"(%arg0, %idx,
        %sizes) {dimension_numbers = #stablehlo.gather<offset_dims = [1, 2],
        start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false}
        : (tensor<?x4xf32>, tensor<2x1xi32>, tensor<2xi32>) -> tensor<2x?x2xf32>
    return %0 : tensor<2x?x2xf32>
  }""",
        [[(3, 4), (2,)], [(5, 4), (2,)]],
        lambda x, i: [np.stack([x[:, min(max(int(k), 0), 2) :][:, :2] for k in i])],
        ("float32", "int32"),
    ),
    DynamicProgram(
        "dynamic_conv",
        """func.func @main(%arg0: tensor<1x?x2xf32>,
        %arg1: tensor<3x2x1xf32>) -> tensor<1x?x1xf32> {
    %p = stablehlo.constant dense<[[1, 1]]> : tensor<1x2xi32>
    %0 = "stablehlo.dynamic_conv"(%arg0, %arg1, %p) {batch_group_count = 1 : i64,
        dimension_numbers = #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>,
        feature_group_count = 1 : i64, window_strides = array<i64: 1>,
        precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]}
        : (tensor<1x?x2xf32>,
        tensor<3x2x1xf32>, tensor<1x2xi32>) -> tensor<1x?x1xf32>
    return %0 : tensor<1x?x1xf32>
  }""",
        [[(1, 4, 2), (3, 2, 1)], [(1, 7, 2), (3, 2, 1)]],
        lambda x, k: [_conv1d_same(x, k)],
        ("float32", "float32"),
    ),
    DynamicProgram(
        "get_dimension_size",
        """func.func @main(%arg0: tensor<?x?xf32>) -> tensor<i32> {
    %a = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x?xf32>) -> tensor<i32>
    %b = stablehlo.get_dimension_size %arg0, dim = 1 : (tensor<?x?xf32>) -> tensor<i32>
    %c10 = stablehlo.constant dense<10> : tensor<i32>
    %m = stablehlo.multiply %a, %c10 : tensor<i32>
    %0 = stablehlo.add %m, %b : tensor<i32>
    return %0 : tensor<i32>
  }""",
        [[(2, 3)], [(5, 1)]],
        lambda x: [np.array(10 * x.shape[0] + x.shape[1], np.int32)],
    ),
)


def _clamped_slice(x: np.ndarray, start: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """dynamic_slice's semantics: each start clamped so the slice stays in bounds."""
    lo = [min(max(int(s), 0), d - n) for s, d, n in zip(start, x.shape, sizes, strict=True)]
    return x[tuple(slice(a, a + n) for a, n in zip(lo, sizes, strict=True))]


def _pad_reference(x: np.ndarray, value: float, lo: int, hi: int, interior: int) -> np.ndarray:
    n = x.shape[0]
    out = np.full(lo + n + max(n - 1, 0) * interior + hi, value, x.dtype)
    out[lo : lo + n + max(n - 1, 0) * interior : interior + 1] = x
    return out


def _conv1d_same(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    """[b, 0, f] x [0, i, o] -> [b, 0, f], stride 1, padding (1, 1), kernel width 3."""
    padded = np.pad(x, ((0, 0), (1, 1), (0, 0)))
    width = x.shape[1]
    out = np.zeros((x.shape[0], width, k.shape[2]), np.float64)
    for t in range(width):
        out[:, t, :] = np.einsum("bwi,wio->bo", padded[:, t : t + 3, :], k)
    return out.astype(np.float32)
