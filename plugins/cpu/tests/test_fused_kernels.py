"""Fused loops and reductions against the interpreter: index maps, narrow types, reducers.

Data movement is exact, so results must match bit for bit; float reductions are compared with
a tolerance (partial sums reassociate the additions).
"""

from __future__ import annotations

import numpy as np
import pytest
from codegen_helpers import compile_modules, reference, same_bits

from hlort import Builder, shape
from hlort.ir.opcodes import Opcode
from hlort.text.printer import print_computation
from hlort_cpu.codegen.kernel_builder import classify

RNG = np.random.default_rng(5)


def _arr(s):
    dt = s.dtype.numpy
    if dt.kind == "b":
        return RNG.integers(0, 2, s.dims).astype(bool)
    if dt.kind in "iu":
        return RNG.integers(-50 if dt.kind == "i" else 0, 50, s.dims).astype(dt)
    return (RNG.standard_normal(s.dims) * 3).astype(dt)


def m_broadcast_transpose():
    b = Builder("bt")
    x = b.parameter(shape.array("f32", [3, 4, 5]))
    y = b.parameter(shape.array("f32", [4]))
    t = b.transpose(x, [2, 0, 1])
    return b.build(b.add(t, b.broadcast(y, [5, 3, 4], [2])))


def m_reshape_slice_reverse():
    b = Builder("rsr")
    x = b.parameter(shape.array("s32", [6, 8]))
    r = b.reshape(x, [4, 12])
    s = b.slice(r, [1, 2], [4, 12], [2, 3])
    return b.build(b.reverse(s, [0, 1]))


def m_pad():
    b = Builder("pad")
    x = b.parameter(shape.array("f32", [4, 5]))
    v = b.parameter(shape.array("f32", []))
    config = [(2, -1, 1), (-2, 3, 2)]
    return b.build(b.multiply(b.pad(x, v, config), b.pad(x, v, config)))


def m_concat_iota():
    b = Builder("cat")
    x = b.parameter(shape.array("s16", [2, 3]))
    y = b.parameter(shape.array("s16", [2, 0]))
    z = b.parameter(shape.array("s16", [2, 4]))
    c = b.concatenate([x, y, z], 1)
    return b.build(b.add(c, b.iota(shape.array("s16", [2, 7]), 1)))


def m_dynamic():
    b = Builder("dyn")
    x = b.parameter(shape.array("f32", [6, 7]))
    i = b.parameter(shape.array("s32", []))
    j = b.parameter(shape.array("u8", []))
    u = b.parameter(shape.array("f32", [2, 3]))
    d = b.dynamic_slice(x, [i, b.convert(j, "s32")], [2, 3])
    w = b.dynamic_update_slice(x, u, [b.convert(j, "s32"), i])
    return b.build(b.tuple([b.abs(d), b.negate(b.slice(w, [1, 2], [3, 5]))]))


def m_narrow_chain(dt):
    b = Builder(f"narrow_{dt}")
    x = b.parameter(shape.array(dt, [100]))
    y = b.parameter(shape.array(dt, [100]))
    s = b.add(b.multiply(x, y), b.divide(x, y))
    return b.build(b.convert(b.maximum(s, b.tanh(x)), "f32"))


def m_select_compare_convert():
    b = Builder("scc")
    x = b.parameter(shape.array("f32", [9, 11]))
    p = b.compare(x, b.broadcast(b.constant(np.float32(0.5)), [9, 11], []), "GT")
    i = b.convert(x, "s8")
    return b.build(b.select(p, b.convert(i, "f32"), b.sqrt(b.abs(x))))


def reducer(b, op, dt):
    s = b.sub(f"{op}_{dt}")
    p0 = s.parameter(shape.scalar(dt))
    p1 = s.parameter(shape.scalar(dt))
    return s.finish(s.op(Opcode(op), (p0, p1)))


def m_reduce(dims, rdims, op="add", dt="f32", init=0):
    b = Builder(f"red_{op}")
    x = b.parameter(shape.array(dt, dims))
    y = b.parameter(shape.array(dt, dims))
    v = b.add(x, b.multiply(y, x))
    init_c = b.constant(np.array(init).astype(shape.scalar(dt).dtype.numpy))
    return b.build(b.reduce(v, init_c, reducer(b, op, dt), rdims))


def m_argmax():
    """Variadic reduce (value, index) with a select-based reducer, over rows and columns."""
    b = Builder("argmax")
    x = b.parameter(shape.array("f32", [7, 9]))
    idx = b.iota(shape.array("s32", [7, 9]), 1)
    s = b.sub("argmax_r")
    av, ai, bv, bi = (s.parameter(shape.scalar(t)) for t in ("f32", "s32", "f32", "s32"))
    take_a = s.compare(av, bv, "GE")
    s.finish(s.tuple([s.select(take_a, av, bv), s.select(take_a, ai, bi)]))
    comp = s.computation
    inits = [b.constant(np.float32(-np.inf)), b.constant(np.int32(0))]
    return b.build(b.reduce([x, idx], inits, comp, [1]))


def m_two_reduces():
    b = Builder("two")
    x = b.parameter(shape.array("f32", [5, 33]))
    zero = b.constant(np.float32(0))
    s1 = b.reduce(x, zero, reducer(b, "add", "f32"), [1])
    s2 = b.reduce(b.multiply(x, x), zero, reducer(b, "add", "f32"), [1])
    return b.build(b.tuple([s1, s2]))


CASES = {
    "broadcast_transpose": m_broadcast_transpose(),
    "reshape_slice_reverse": m_reshape_slice_reverse(),
    "pad": m_pad(),
    "concat_iota": m_concat_iota(),
    "dynamic": m_dynamic(),
    "narrow_f16": m_narrow_chain("f16"),
    "narrow_bf16": m_narrow_chain("bf16"),
    "select_compare_convert": m_select_compare_convert(),
    "row_sum": m_reduce([64, 100], [1]),
    "col_sum": m_reduce([64, 100], [0]),
    "full_sum": m_reduce([5000], [0]),
    "mid_sum": m_reduce([4, 5, 6], [1]),
    "outer_sum": m_reduce([4, 5, 6], [0, 2]),
    "row_max": m_reduce([16, 40], [1], "maximum", init=-np.inf),
    "col_min": m_reduce([16, 40], [0], "minimum", init=np.inf),
    "int_row_sum": m_reduce([16, 40], [1], "add", "s32"),
    "int_col_xor": m_reduce([16, 40], [0], "xor", "u16"),
    "bf16_row_sum": m_reduce([8, 64], [1], "add", "bf16"),
    "argmax": m_argmax(),
    "two_reduces": m_two_reduces(),
}
EXACT = {
    "broadcast_transpose",
    "reshape_slice_reverse",
    "pad",
    "concat_iota",
    "dynamic",
    "narrow_f16",
    "narrow_bf16",
    "select_compare_convert",
    "row_max",
    "col_min",
    "int_row_sum",
    "int_col_xor",
    "argmax",
}


@pytest.fixture(scope="module")
def kernels():
    return compile_modules(CASES)


def _inputs(name, module):
    args = [_arr(p.shape) for p in module.entry.parameters]
    if name == "dynamic":
        args[1] = np.array(4, np.int32)  # clamped to 3
        args[2] = np.array(250, np.uint8)  # clamped
    if name in ("row_max", "col_min"):
        args[0][3, 5] = np.nan
    return args


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_matches_interpreter(kernels, name):
    module = CASES[name]
    assert classify(module.entry) in ("loop", "row", "column")
    args = _inputs(name, module)
    got = kernels[name](*args)
    want = reference(module, *args)
    want = list(want) if isinstance(want, tuple) else [want]
    for g, w in zip(got, want, strict=True):
        if name in EXACT:
            assert same_bits(g, w), f"{name}\n got {g}\nwant {w}"
        else:
            np.testing.assert_allclose(
                g.astype(np.float64),
                w.astype(np.float64),
                rtol=2e-2 if "bf16" in name else 1e-5,
                atol=1e-4,
            )


def _pipeline_fusions():
    """The fusions the core pipeline makes for softmax and layernorm (row fusions)."""
    from hlort import examples
    from hlort.passes import run_default_pipeline

    out = {}
    for name, (module, _) in {
        "softmax": examples.softmax_relu_matmul(8, 16, 40),
        "layernorm": examples.layernorm(12, 64),
    }.items():
        run_default_pipeline(module)
        for instr in module.entry.instructions:
            if instr.opcode is Opcode.FUSION:
                out[f"{name}_{instr.name}"] = instr.attrs["calls"]
    return out


PIPELINE_FUSIONS = _pipeline_fusions()


def test_pipeline_fusions_compile_and_match():
    from hlort.interpreter.evaluator import Evaluator
    from hlort_cpu.codegen.compiled import compile_kernel_module
    from hlort_cpu.codegen.kernel_builder import KernelModule

    km = KernelModule()
    for k, comp in enumerate(PIPELINE_FUSIONS.values()):
        assert classify(comp) is not None, print_computation(comp)
        km.add(f"test_pipeline_{k}", comp)
    _, kernels = compile_kernel_module(km)
    for k, comp in enumerate(PIPELINE_FUSIONS.values()):
        args = [_arr(p.shape) for p in comp.parameters]
        got = kernels[f"test_pipeline_{k}"](*args)
        want = Evaluator().call(comp, args)
        want = list(want) if isinstance(want, tuple) else [want]
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
