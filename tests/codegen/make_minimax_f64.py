"""Regenerate the minimax coefficients of core/hlort/codegen/llvm/float_math_f64.py (offline).

Needs mpmath (not a dependency of hlort):
``pip install mpmath; python tests/codegen/make_minimax_f64.py``.
Each fit is a Remez exchange minimizing the relative error of the whole function (for example
sin(a) = a + a**3 S(a**2), the weight makes |a + a**3 S - sin a| / |sin a| equioscillate) in
400-bit arithmetic; the printed tuples (highest degree first) are the doubles nearest the
coefficients, and "rounded" is the relative error those doubles achieve, as log2.
"""

from __future__ import annotations

import mpmath as mp

mp.mp.prec = 400


def remez(g, w, a, b, n: int, iters: int = 30, samples: int = 4000):
    """Degree-n polynomial P minimizing max |w(z) (g(z) - P(z))| on [a, b]."""
    a, b = mp.mpf(a), mp.mpf(b)
    pts = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * (i + 0.5) / (n + 2)) for i in range(n + 2)]
    coeffs, level = None, None
    for _ in range(iters):
        matrix = mp.matrix(n + 2, n + 2)
        rhs = mp.matrix(n + 2, 1)
        for i, z in enumerate(pts):
            for j in range(n + 1):
                matrix[i, j] = z**j
            matrix[i, n + 1] = (-1) ** i / w(z)
            rhs[i] = g(z)
        sol = mp.lu_solve(matrix, rhs)
        coeffs = [sol[j] for j in range(n + 1)]
        level = sol[n + 1]
        xs = [a + (b - a) * mp.mpf(k) / samples for k in range(samples + 1)]
        es = [w(x) * (g(x) - mp.polyval(coeffs[::-1], x)) for x in xs]
        extrema = []
        for k in range(samples + 1):
            left = es[k - 1] if k > 0 else None
            right = es[k + 1] if k < samples else None
            if (left is None or abs(es[k]) >= abs(left)) and (
                right is None or abs(es[k]) >= abs(right)
            ):
                extrema.append((xs[k], es[k]))
        alternating: list = []
        for x, v in extrema:
            if alternating and mp.sign(alternating[-1][1]) == mp.sign(v):
                if abs(v) > abs(alternating[-1][1]):
                    alternating[-1] = (x, v)
            else:
                alternating.append((x, v))
        while len(alternating) > n + 2:
            alternating.pop(0 if abs(alternating[0][1]) < abs(alternating[-1][1]) else -1)
        if len(alternating) < n + 2:
            break
        pts = [x for x, _ in alternating]
        worst = max(abs(v) for _, v in alternating)
        if worst - abs(level) < abs(level) * mp.mpf("1e-6"):
            break
    return coeffs, level


def rounded_error(g, w, a, b, coeffs, samples: int = 4000):
    cs = [mp.mpf(float(c)) for c in coeffs]
    return max(
        abs(w(z) * (g(z) - mp.polyval(cs[::-1], z)))
        for z in (mp.mpf(a) + (mp.mpf(b) - a) * k / samples for k in range(samples + 1))
    )


def odd_fit(f, limit, n: int):
    """f(x) = x + x**3 P(x**2) on |x| <= limit, relative error."""
    g = lambda z: (f(mp.sqrt(z)) - mp.sqrt(z)) / z**1.5  # noqa: E731
    w = lambda z: z**1.5 / f(mp.sqrt(z))  # noqa: E731
    return g, w, mp.mpf("1e-30"), mp.mpf(limit) ** 2, n


def cos_fit(limit, n: int):
    """cos(x) = 1 - x**2/2 + x**4 P(x**2), relative error."""
    g = lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z**2  # noqa: E731
    w = lambda z: z**2 / mp.cos(mp.sqrt(z))  # noqa: E731
    return g, w, mp.mpf("1e-30"), mp.mpf(limit) ** 2, n


FITS = {
    "_SIN": odd_fit(mp.sin, mp.pi / 4 + mp.mpf("1e-3"), 5),
    "_COS": cos_fit(mp.pi / 4 + mp.mpf("1e-3"), 5),
    "_TANH": odd_fit(mp.tanh, "0.55", 10),
    "_ATAN": odd_fit(mp.atan, "0.4375", 10),
    "_CBRT_SEED": (mp.cbrt, lambda z: 1 / mp.cbrt(z), 1, 2, 4),
}


def main() -> None:
    for name, (g, w, a, b, n) in FITS.items():
        coeffs, _ = remez(g, w, a, b, n)
        err = rounded_error(g, w, a, b, coeffs)
        print(
            f"{name} = {tuple(float(c) for c in coeffs[::-1])}  # rounded: 2**"
            f"{float(mp.log(err, 2)):.1f}"
        )


if __name__ == "__main__":
    main()
