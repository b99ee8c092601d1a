"""f64 tanh, sin, cos, tan, cbrt, atan2 (float_math_f64.py) and pow (pow_f64.py): exact cases,
special values, hard trigonometric arguments, pow against a long-double reference, and
vectorization.

The ulp bounds over the whole range live in test_transcendental_ulp.py; here the results that
must be exact are checked exactly (bitwise against the interpreter, or against exact values).
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from codegen_helpers import compile_modules, reference, same_bits, ulp_distance

from hlort import Builder, shape
from hlort.ir.opcodes import Opcode
from hlort_cpu.codegen.jit import jit_engine
from hlort_cpu.codegen.kernel_builder import KernelModule

UNARY = (Opcode.TANH, Opcode.SINE, Opcode.COSINE, Opcode.TAN, Opcode.CBRT)
BINARY = (Opcode.POWER, Opcode.ATAN2)

# Doubles nearest a multiple of pi/2 (one per ~17 binades, from the continued fraction of
# 2**E / (pi/2); the last is Muller's worst case, 2**-60.9 quarter turns away) and their
# correctly rounded sin, cos, tan (mpmath, 4000 bits). glibc 2.36 (NumPy's sin/cos) misses
# some of these by up to 1103 (sin) and 14901 (cos) ulp, so the interpreter cannot judge them.
HARD_TRIG = """
0x1.921fb54442d18p+0 0x1.0000000000000p+0 0x1.1a62633145c07p-54 0x1.d02967c31cdb5p+53
0x1.0dec1da5fa53fp+17 0x1.0000000000000p+0 -0x1.d626fccfc2601p-52 -0x1.16c9485688fedp+51
0x1.de5e5054e921bp+34 0x1.0000000000000p+0 -0x1.5361ee6553188p-54 -0x1.82350e88ea56ep+53
0x1.5cba89af1f855p+51 -0x1.0000000000000p+0 -0x1.b5ebde2aae00bp-55 0x1.2b4e0ca802ab0p+54
0x1.782b7a20df6d4p+68 0x1.7a6500ca6d83bp-57 -0x1.0000000000000p+0 -0x1.7a6500ca6d83bp-57
0x1.f19e5d71b26bap+85 -0x1.0000000000000p+0 -0x1.230f73631c67dp-56 0x1.c2536a9119dd1p+55
0x1.1ef7d5a008cd1p+102 0x1.0000000000000p+0 0x1.264ec85a70c6bp-53 0x1.bd5b612eb9ec0p+52
0x1.47623428452f0p+119 0x1.0000000000000p+0 0x1.a01dd34200b55p-54 0x1.3afd1beec6085p+53
0x1.504cac51f1eafp+136 -0x1.0cb604d34f341p-54 0x1.0000000000000p+0 -0x1.0cb604d34f341p-54
0x1.b930d680374c2p+153 -0x1.4710c83c6a7d5p-53 0x1.0000000000000p+0 -0x1.4710c83c6a7d5p-53
0x1.c54e136ed2490p+170 -0x1.0000000000000p+0 0x1.b52a865f401c3p-54 -0x1.2bd26bd9b14d9p+53
0x1.b5441ee104c98p+187 -0x1.0000000000000p+0 -0x1.ee82c23c23bc0p-54 0x1.090dcb15d7fb3p+53
0x1.6deb37da81129p+204 0x1.71f1077f9698ap-52 0x1.0000000000000p+0 0x1.71f1077f9698ap-52
0x1.741b6813300bap+221 -0x1.46ffe964146b1p-53 0x1.0000000000000p+0 -0x1.46ffe964146b1p-53
0x1.675f908206d8ap+238 0x1.0000000000000p+0 -0x1.cbf8ca274b28bp-52 -0x1.1cf4e24cdbc0fp+51
0x1.b2196364d750bp+255 0x1.12bbbe07f2de1p-56 0x1.0000000000000p+0 0x1.12bbbe07f2de1p-56
0x1.16e59932ab3bcp+272 -0x1.0000000000000p+0 0x1.8213126d82007p-54 -0x1.537fce4f3ce09p+53
0x1.6b37acc2fa285p+289 0x1.0000000000000p+0 -0x1.9c4469308f6a2p-54 -0x1.3dee0154f3ab2p+53
0x1.3974fbe05f40bp+306 0x1.0000000000000p+0 -0x1.ba8ceae0bcae1p-52 -0x1.282c94343dc7ap+51
0x1.1a8b94e0e8d12p+323 0x1.0000000000000p+0 0x1.2cb378995924dp-53 0x1.b3e357a22df74p+52
0x1.1cb1497fca4fep+340 -0x1.e985dd6f27db1p-53 -0x1.0000000000000p+0 0x1.e985dd6f27db1p-53
0x1.f32cf2b089a94p+357 0x1.5443be8a3a0e9p-52 -0x1.0000000000000p+0 -0x1.5443be8a3a0e9p-52
0x1.24faaa5272710p+374 -0x1.76a162c7ec1b6p-52 0x1.0000000000000p+0 -0x1.76a162c7ec1b6p-52
0x1.22043b9ac94b5p+391 0x1.37392e7bf4dd7p-54 -0x1.0000000000000p+0 -0x1.37392e7bf4dd7p-54
0x1.e3ca9b6c655cbp+408 0x1.0000000000000p+0 0x1.3b5dbbbe33decp-57 0x1.9f9e551266c3cp+56
0x1.6dd6b29edc33ap+425 0x1.3455f72eb7b7dp-52 0x1.0000000000000p+0 0x1.3455f72eb7b7dp-52
0x1.6e9c864f3423ap+442 -0x1.0000000000000p+0 0x1.2f9aa933ed8e0p-54 -0x1.afb855faf1970p+53
0x1.ac593e47e035bp+459 0x1.5642db7aa8cc8p-54 -0x1.0000000000000p+0 -0x1.5642db7aa8cc8p-54
0x1.157ef3a1528a5p+476 -0x1.05aef28215fbap-51 -0x1.0000000000000p+0 0x1.05aef28215fbap-51
0x1.d90169d240838p+493 0x1.06911eceb131ep-52 -0x1.0000000000000p+0 -0x1.06911eceb131ep-52
0x1.42376c24b6997p+510 0x1.0000000000000p+0 0x1.3f61c29ab0225p-54 0x1.9a6489fad2b49p+53
0x1.2aa88328eba84p+527 -0x1.0000000000000p+0 0x1.b452c68f3f10cp-53 -0x1.2c66acb0d7275p+52
0x1.3b4801fd74c7ep+544 -0x1.caf66265cec14p-54 -0x1.0000000000000p+0 0x1.caf66265cec14p-54
0x1.6bf5d7abaf7c8p+561 0x1.0d2b5fd89d0cdp-54 -0x1.0000000000000p+0 -0x1.0d2b5fd89d0cdp-54
0x1.4c96c11134d36p+578 -0x1.6ec67bcf77522p-58 -0x1.0000000000000p+0 0x1.6ec67bcf77522p-58
0x1.518acd4fe45e6p+595 -0x1.4033b5583710ap-52 0x1.0000000000000p+0 -0x1.4033b5583710ap-52
0x1.0d09901565674p+612 0x1.09436b6278822p-52 -0x1.0000000000000p+0 -0x1.09436b6278822p-52
0x1.118b5283cb548p+629 -0x1.71d0ad170d43cp-50 0x1.0000000000000p+0 -0x1.71d0ad170d43cp-50
0x1.20602607afc5bp+646 -0x1.0000000000000p+0 0x1.919ef0e888004p-51 -0x1.465b883a85f5dp+50
0x1.41c5fceb2921dp+663 -0x1.1a70280a2b3b5p-54 0x1.0000000000000p+0 -0x1.1a70280a2b3b5p-54
0x1.db41f3cb71d7bp+680 0x1.0000000000000p+0 0x1.e09878d22e29dp-59 0x1.10ba6f3f467d7p+58
0x1.29460d8eb8d38p+697 -0x1.ed1f0426d9a14p-53 0x1.0000000000000p+0 -0x1.ed1f0426d9a14p-53
0x1.5ae169cea43d6p+714 -0x1.2ee3de9450182p-53 0x1.0000000000000p+0 -0x1.2ee3de9450182p-53
0x1.276316f976fffp+731 -0x1.0000000000000p+0 -0x1.32fdbb0bbfeacp-54 0x1.aaf4faed26420p+53
0x1.f1da9499ae9dep+748 0x1.0000000000000p+0 0x1.304916bff99e4p-53 0x1.aec0db8efc2bep+52
0x1.0b11b70fb52efp+765 0x1.0000000000000p+0 0x1.070163efb5141p-50 0x1.f25cc1ca32c5bp+49
0x1.6de1f1aefcdbfp+782 -0x1.0000000000000p+0 0x1.0675347d6efcfp-54 -0x1.f366f1e289557p+53
0x1.eea340a33754dp+799 0x1.0000000000000p+0 -0x1.0dd9cf0de70bfp-53 -0x1.e5b860ef383fbp+52
0x1.5a9417258933ap+816 -0x1.3fbf793454b07p-52 -0x1.0000000000000p+0 0x1.3fbf793454b07p-52
0x1.6fb0d0ab996fap+833 -0x1.87dcf6a22ed92p-53 -0x1.0000000000000p+0 0x1.87dcf6a22ed92p-53
0x1.6ac5b262ca1ffp+850 -0x1.14ae72e6ba22fp-60 -0x1.0000000000000p+0 0x1.14ae72e6ba22fp-60
0x1.0354f948466b5p+867 -0x1.0000000000000p+0 -0x1.2e566dff19c67p-55 0x1.b187519a3f930p+54
0x1.66f7d5bbd5db6p+884 -0x1.868f474267133p-52 -0x1.0000000000000p+0 0x1.868f474267133p-52
0x1.340f77367b611p+901 -0x1.0dc9e4b174746p-52 0x1.0000000000000p+0 -0x1.0dc9e4b174746p-52
0x1.212e7467facccp+918 0x1.73689ccd34b79p-53 0x1.0000000000000p+0 0x1.73689ccd34b79p-53
0x1.a5046cd1fcafep+935 0x1.0000000000000p+0 0x1.3be2b37a106ddp-55 0x1.9eef62257cce6p+54
0x1.e1987122b7e06p+952 0x1.62c5dcf7f8d24p-56 -0x1.0000000000000p+0 -0x1.62c5dcf7f8d24p-56
0x1.bab62ed655019p+969 0x1.0000000000000p+0 0x1.027d184afb198p-53 0x1.fb1213e645905p+52
0x1.3f8fea87156cep+986 0x1.0000000000000p+0 -0x1.414971e2d6fd8p-55 -0x1.97f59980a92cdp+54
0x1.7f6a4d2df7d7fp+1003 0x1.0000000000000p+0 0x1.793f0234434ddp-54 0x1.5b71bac052016p+53
0x1.4551061aadd5dp+1020 -0x1.b137a7a07431bp-52 -0x1.0000000000000p+0 0x1.b137a7a07431bp-52
0x1.6ac5b262ca1ffp+849 0x1.0000000000000p+0 -0x1.14ae72e6ba22fp-61 -0x1.d9ba9a7975636p+60
0x1.61a3db8c8d129p+1022 0x1.dd15f96b823f2p-57 -0x1.0000000000000p+0 -0x1.dd15f96b823f2p-57
"""


def _module(op: Opcode, n: int, arity: int):
    b = Builder(f"{op.name}_f64")
    xs = [b.parameter(shape.array("f64", [n])) for _ in range(arity)]
    b.build(b.op(op, tuple(xs)))
    return b.module


def _run(op: Opcode, *args: np.ndarray) -> np.ndarray:
    module = _module(op, args[0].size, len(args))
    return compile_modules({"k": module})["k"](*args)[0]


SPECIALS = np.array(
    [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        2.5,
        -2.5,
        1e308,
        -1e308,
        5e-324,
        -5e-324,
        1e-310,
        -1e-310,
        1e-300,
        1 - 2.0**-53,
        1 + 2.0**-52,
        2.0**53 + 2,
        -(2.0**53),
        2.0**52 + 1,
        -(2.0**52 + 1),
        1e20,
        -1e20,
        1024.0,
        -1074.0,
        -1075.0,
        1023.5,
    ]
)


@pytest.mark.parametrize("op", UNARY, ids=lambda o: o.value)
def test_unary_special_values_match_interpreter_bitwise(op):
    """NaN, +-inf, +-0 (sign included), subnormals and the largest doubles."""
    x = SPECIALS
    special = ~np.isfinite(x) | (x == 0)
    got, want = _run(op, x), reference(_module(op, x.size, 1), x)
    assert same_bits(got[special], want[special])
    assert ulp_distance(got, want).max() <= 1


@pytest.mark.parametrize("op", BINARY, ids=lambda o: o.value)
def test_binary_special_values_match_interpreter_bitwise(op):
    """C99 Annex F: every pairing of zeros, infinities, NaN, +-1, odd/even/half integers."""
    pairs = np.array(list(itertools.product(SPECIALS, SPECIALS)))
    x, y = pairs[:, 0].copy(), pairs[:, 1].copy()
    got = _run(op, x, y)
    with np.errstate(all="ignore"):
        want = reference(_module(op, x.size, 2), x, y)
    special = ~np.isfinite(want) | (want == 0) | ~np.isfinite(x) | ~np.isfinite(y)
    special |= (x == 0) | (y == 0) | (np.abs(x) == 1)
    bad = np.nonzero(
        ~((got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want)))
        & special
    )[0]
    assert bad.size == 0, [(x[i], y[i], got[i], want[i]) for i in bad[:5]]
    assert ulp_distance(got, want).max() <= 1


def test_cbrt_of_perfect_cubes_is_exact():
    roots = np.outer(np.arange(1, 200.0), 2.0 ** np.arange(-340, 330, 17.0)).ravel()
    roots = np.concatenate([roots, -roots, [2.0**-358, 2.0**341]])
    got = _run(Opcode.CBRT, roots**3)
    assert same_bits(got, roots)


def test_pow_is_exact_when_the_result_is_representable():
    """b**k for integer k (negative bases too) and (b*b)**(k/2), whenever exactly a double."""
    x, y, exact = [], [], []
    for base in range(2, 40):
        for k in range(-40, 60):
            value = float(base) ** k if k >= 0 else 1 / float(base) ** -k
            if value and np.isfinite(value) and _exact_power(base, k, value):
                x += [base, -base]
                y += [k, k]
                exact += [value, value if k % 2 == 0 else -value]
                if k % 2:
                    x.append(base * base)
                    y.append(k / 2)
                    exact.append(value)
    got = _run(Opcode.POWER, np.array(x, float), np.array(y, float))
    assert same_bits(got, np.array(exact))


def _exact_power(base: int, k: int, value: float) -> bool:
    from fractions import Fraction

    return Fraction(value) == Fraction(base) ** k


def test_tanh_saturates_exactly():
    x = np.array([19.1, 22.0, 30.0, 700.0, 1e300, np.inf])
    got = _run(Opcode.TANH, np.concatenate([x, -x]))
    assert same_bits(got, np.concatenate([np.ones(6), -np.ones(6)]))


def test_trig_hard_arguments_are_correctly_rounded():
    rows = [[float.fromhex(v) for v in line.split()] for line in HARD_TRIG.split("\n") if line]
    table = np.array(rows)
    x = np.concatenate([table[:, 0], -table[:, 0]])
    for column, op, odd in (
        (1, Opcode.SINE, True),
        (2, Opcode.COSINE, False),
        (3, Opcode.TAN, True),
    ):
        want = np.concatenate([table[:, column], -table[:, column] if odd else table[:, column]])
        d = ulp_distance(_run(op, x), want)
        worst = int(np.argmax(d))
        assert d.max() <= 1, f"{op.value}({x[worst]!r}) off by {d[worst]} ulp"


@pytest.mark.parametrize("op", UNARY + BINARY, ids=lambda o: o.value)
def test_loop_is_vectorized_without_libm_calls(op):
    """The optimized loop uses full-width double vectors and calls only LLVM intrinsics (and,
    for pow, the module's own pow at the full width)."""
    km = KernelModule()
    km.add("f64_vectorized", _module(op, 1 << 16, 2 if op in BINARY else 1).entry)
    engine = jit_engine()
    text = engine.optimized_ir(km.ir_text())
    lanes = engine.target.vector_bits // 64
    assert f"<{lanes} x double>" in text
    declared = set(re.findall(r"^declare [^@]*@([\w.$]+)", text, re.MULTILINE))
    assert declared and all(name.startswith("llvm.") for name in declared), declared
    if op is Opcode.POWER:
        assert re.search(rf"call <{lanes} x double> @\"?hlort_pow_f64_v{lanes}\b", text)


def _long_double_ulp_error(x: np.ndarray, y: np.ndarray, got: np.ndarray) -> np.ndarray:
    """|got - x**y| in ulps of the exact value, x**y in long double (64-bit significand)."""
    wide = np.power(np.abs(x).astype(np.longdouble), y.astype(np.longdouble))
    step = np.exp2(np.maximum(np.floor(np.log2(wide)), -1022) - 52)
    return (np.abs(np.abs(got).astype(np.longdouble) - wide) / step).astype(np.float64)


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63, reason="needs an 80/128-bit long double")
def test_pow_is_within_0_51_ulp_of_the_exact_value():
    """x over every binade (subnormals too) with y = t / log x, t spanning every result from
    the largest double down into the subnormals; x near 1 with huge y; integer y with negative
    x. glibc's powl is good to ~2**-63, so its own error is ~0.001 ulp of a double."""
    rng = np.random.default_rng(11)
    n = 1 << 17
    wide_x = 2.0 ** rng.uniform(-1074, 1024, n)
    near_one = 1 + rng.standard_normal(n) * 10.0 ** rng.uniform(-16, -1, n)
    x = np.concatenate([wide_x, near_one, rng.uniform(-60, 60, n)])
    t = rng.uniform(-744.4, 709.7, 3 * n)
    with np.errstate(divide="ignore"):
        y = np.concatenate([t[: 2 * n] / np.log(x[: 2 * n]), np.round(t[2 * n :] / 10)])
    y[~np.isfinite(y)] = 0.5
    got = _run(Opcode.POWER, x, y)
    with np.errstate(over="ignore", under="ignore"):
        want = np.power(x, y)
    regular = np.isfinite(want) & (want != 0)
    assert regular.mean() > 0.99
    err = _long_double_ulp_error(x[regular], y[regular], got[regular])
    assert np.array_equal(np.signbit(got[regular]), np.signbit(want[regular]))
    worst = int(np.argmax(err))
    assert err.max() < 0.51, (x[regular][worst], y[regular][worst], err.max())


def test_pow_result_does_not_depend_on_its_vector_neighbours():
    """A special lane sends its whole vector through the general path; the regular lanes in it
    must round exactly as they do in the fast path."""
    rng = np.random.default_rng(3)
    n = 4096
    x = np.exp(rng.uniform(-700, 700, n))
    y = rng.uniform(-700, 700, n) / np.log(x)
    alone = _run(Opcode.POWER, x, y)
    mixed_x = x.copy()
    mixed_x[::5] = np.nan
    mixed = _run(Opcode.POWER, mixed_x, y)
    keep = np.arange(n) % 5 != 0
    assert same_bits(mixed[keep], alone[keep])
    assert np.isnan(mixed[~keep]).all()


@pytest.mark.parametrize(
    "dtype,op",
    [("f64", Opcode.POWER), ("f64", Opcode.ATAN2), ("f32", Opcode.POWER)],
    ids=["pow-f64", "atan2-f64", "pow-f32"],
)
def test_functions_of_broadcast_scalars_leave_the_loop(dtype, op):
    """pow/atan2 of broadcast scalars (random_gamma's shape). Scalar parameters load once, in
    the kernel's entry block (fused_emitter.py), so LLVM hoists the whole function out of the
    loop: it runs once per call, and the vectorizer never analyses it (LLVM 22 walks uniform
    operand chains without memoizing: minutes for the old inline pow, 3.5 s for atan2)."""
    b = Builder("broadcast_scalars")
    xs = [b.broadcast(b.parameter(shape.array(dtype, [])), [64], []) for _ in range(2)]
    b.build(b.op(op, tuple(xs)))
    km = KernelModule()
    km.add("broadcast_scalars", b.module.entry)
    text = jit_engine().optimized_ir(km.ir_text())
    fn = text[text.index("define void @broadcast_scalars") :]
    blocks = re.split(r"\n(?=[\w.]+:)", fn[: fn.index("\n}\n")])
    bodies = [blk for blk in blocks if blk.split(":")[0].endswith(".body")]
    assert bodies and not any("fdiv" in blk or "@hlort_pow" in blk for blk in bodies), bodies
    kernel = compile_modules({"k": b.module})["k"]
    np_type = {"f64": np.float64, "f32": np.float32}[dtype]
    x, y = np.array(0.75, np_type), np.array(-1 / 3, np_type)
    got = kernel(x, y)[0]
    want = np.asarray(reference(b.module, x, y))
    assert (got == got[0]).all() and ulp_distance(got, want).max() <= 1
