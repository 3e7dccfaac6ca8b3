#!/usr/bin/python3
# The coefficients of interp::erfF32 (Scalar.cpp): least-squares fits at
# Chebyshev nodes in double, reweighted toward minimax, printed rounded to
# f32, with the fit's own error (before f32 evaluation; InterpScalar.
# ErfOfF32IsWithinOneAndAQuarterUlp measures the function as evaluated).
#   erf(x)/x - 1 = p(x²) on [0, T²]; ln erfc(t) = q(t) on [T, 4]; T = 0.875.
import math

import numpy as np

T = 0.875


def fit(f, a, b, deg, nodes=4000):
    k = np.arange(nodes)
    x = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    y = np.array([f(v) for v in x])
    V = np.vander(x, deg + 1)
    c, *_ = np.linalg.lstsq(V, y, rcond=None)
    W = np.ones_like(y)
    for _ in range(30):  # weights grow where the error is largest
        e = V @ c - y
        W = W * np.sqrt(np.abs(e) / np.max(np.abs(e)) + 1e-3)
        c, *_ = np.linalg.lstsq(V * W[:, None], y * W, rcond=None)
    return c


def p_target(s):
    x = math.sqrt(s)
    return (math.erf(x) / x if x > 0 else 2 / math.sqrt(math.pi)) - 1


p = fit(p_target, 0, T * T, 5)
q = fit(lambda t: math.log(math.erfc(t)), T, 4.0, 8)
xs = np.linspace(1e-6, T, 20001)
print('p:', [float(np.float32(v)) for v in p])
print('  relative error of erf: %.3g' % max(abs((np.polyval(p, x * x) + 1) * x - math.erf(x)) / math.erf(x) for x in xs))
ts = np.linspace(T, 4.0, 20001)
print('q:', [float(np.float32(v)) for v in q])
print('  error of erf in its ulps: %.3f' %
      max(abs(math.exp(np.polyval(q, t)) - math.erfc(t)) / math.erf(t) / 2**-24 for t in ts))
