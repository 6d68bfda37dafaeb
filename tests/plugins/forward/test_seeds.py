"""Seed 001 through the forward backend: the worked example and the dual-number rules.

Seed 001 (前向模式): f(x1, x2) = log(x1) + x1*x2 - sin(x2) at (2, 5). By hand,
f = log 2 + 10 - sin 5 = 11.652071455223084, df/dx1 = 1/x1 + x2 = 5.5 and
df/dx2 = x1 - cos(x2) = 2 - cos(5) = 1.71633781453677...; the seed prints 5.5 and 1.716.

Seed 001 (二元数求导法): with x = a + bε and y = c + dε (ε² = 0), each rule of the
seed's DualNumber class gives the ε part in closed form. adcore.jvp with primals
(a, c) and tangents (b, d) is exactly that ε part, so each rule is checked here
against its closed form at several points, in float64 and float32 (the dtype is kept).
(The seed writes the real part of x*y as ac + cd; it is ac, as its code computes.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcore
import adcore.numpy as anp

# --- the worked example, seed 001 --------------------------------------------------------------
X1, X2 = 2.0, 5.0
VALUE = np.log(X1) + X1 * X2 - np.sin(X2)  # = 11.652071455223084
DF_DX1 = 1 / X1 + X2  # = 5.5, the seed's oracle
DF_DX2 = X1 - np.cos(X2)  # = 1.71633781453677..., the seed prints 1.716


def f(x1, x2):
    return anp.log(x1) + x1 * x2 - anp.sin(x2)


def test_closed_forms_are_the_seeds_numbers():
    assert VALUE == pytest.approx(11.652071455223084, rel=1e-15)
    assert DF_DX1 == 5.5
    assert DF_DX2 == pytest.approx(1.71633781453677, abs=1e-14)


def test_value_and_grad_through_forward():
    value, (g1, g2) = adcore.value_and_grad(f, argnums=(0, 1), backend="forward")(X1, X2)
    assert value == pytest.approx(11.652071455223084, rel=1e-15)
    assert g1 == pytest.approx(DF_DX1, rel=1e-15)
    assert g2 == pytest.approx(DF_DX2, rel=1e-15)
    assert (round(float(g1), 5), round(float(g2), 3)) == (5.5, 1.716)


def test_grad_both_arguments_through_forward():
    g1, g2 = adcore.grad(f, argnums=(0, 1), backend="forward")(X1, X2)
    assert g1 == pytest.approx(DF_DX1, rel=1e-15)
    assert g2 == pytest.approx(DF_DX2, rel=1e-15)
    assert np.shape(g1) == () and np.shape(g2) == ()


@pytest.mark.parametrize("argnum, expected", [(0, DF_DX1), (1, DF_DX2)])
def test_grad_one_argument_at_a_time_through_forward(argnum, expected):
    assert adcore.grad(f, argnums=argnum, backend="forward")(X1, X2) == pytest.approx(expected, rel=1e-15)


def test_jacobian_through_forward_matches_reverse():
    jf = adcore.jacobian(f, argnums=(0, 1), backend="forward")(X1, X2)
    jr = adcore.jacobian(f, argnums=(0, 1), backend="reverse")(X1, X2)
    np.testing.assert_allclose(jf, [DF_DX1, DF_DX2], rtol=1e-15)
    np.testing.assert_allclose(jf, jr, rtol=1e-15)


def test_jacobian_of_the_example_on_a_vector_of_points():
    # elementwise on arrays: the Jacobian is diagonal, one seed-001 derivative per point
    x1 = np.array([2.0, 0.5, 3.0])
    x2 = np.array([5.0, -1.0, 0.25])
    j1, j2 = adcore.jacobian(f, argnums=(0, 1), backend="forward")(x1, x2)
    np.testing.assert_allclose(j1, np.diag(1 / x1 + x2), rtol=1e-15)
    np.testing.assert_allclose(j2, np.diag(x1 - np.cos(x2)), rtol=1e-15)


@pytest.mark.parametrize(
    "direction, expected", [((1.0, 0.0), DF_DX1), ((0.0, 1.0), DF_DX2), ((1.0, 1.0), DF_DX1 + DF_DX2)]
)
def test_jvp_along_the_axes(direction, expected):
    # seed 001: ẋ = e_i gives ∂f/∂x_i in one forward pass
    value, tangent = adcore.jvp(f, (X1, X2), direction, backend="forward")
    assert value == pytest.approx(11.652071455223084, rel=1e-15)
    assert tangent == pytest.approx(expected, rel=1e-15)


def test_jvp_along_any_direction_is_the_gradient_dotted_with_it():
    r = (0.3, -1.7)
    _, tangent = adcore.jvp(f, (X1, X2), r, backend="forward")
    assert tangent == pytest.approx(r[0] * DF_DX1 + r[1] * DF_DX2, rel=1e-14)


# --- the DualNumber rules of seed 001 -----------------------------------------------------------
# Every binary rule: (name, f(x, y), value(a, c), tangent(a, b, c, d)) for x = a + bε, y = c + dε.
BINARY = [
    ("add", lambda x, y: x + y, lambda a, c: a + c, lambda a, b, c, d: b + d),
    ("sub", lambda x, y: x - y, lambda a, c: a - c, lambda a, b, c, d: b - d),
    ("mul", lambda x, y: x * y, lambda a, c: a * c, lambda a, b, c, d: b * c + a * d),
    ("div", lambda x, y: x / y, lambda a, c: a / c, lambda a, b, c, d: (b * c - a * d) / c**2),
    (
        "pow",
        lambda x, y: x**y,
        lambda a, c: a**c,
        lambda a, b, c, d: b * c * a ** (c - 1) + d * a**c * math.log(a),
    ),
]

# Every unary rule: (name, f(x), value(a), tangent(a, b)) for x = a + bε.
UNARY = [
    ("sin", anp.sin, math.sin, lambda a, b: math.cos(a) * b),
    ("cos", anp.cos, math.cos, lambda a, b: -math.sin(a) * b),
    ("tan", anp.tan, math.tan, lambda a, b: b / math.cos(a) ** 2),
    ("arctan", anp.arctan, math.atan, lambda a, b: b / (1 + a * a)),
    ("sqrt", anp.sqrt, math.sqrt, lambda a, b: 0.5 * b / math.sqrt(a)),
    ("exp", anp.exp, math.exp, lambda a, b: b * math.exp(a)),
    ("log", anp.log, math.log, lambda a, b: b / a),
    # the seed's abs: sign(a) times the tangent (the seed's code forgets the tangent factor)
    ("abs", anp.abs, abs, lambda a, b: math.copysign(1.0, a) * b),
    # plain NumPy on the dual number, through __array_ufunc__
    ("np.sin", np.sin, math.sin, lambda a, b: math.cos(a) * b),
    ("np.exp", np.exp, math.exp, lambda a, b: b * math.exp(a)),
]

# (a, b, c, d): a > 0 for log, sqrt and a**c; away from the poles of tan and zero of c for div
POINTS = [
    (2.0, 1.0, 5.0, 0.0),
    (0.5, -1.5, 3.0, 2.0),
    (1.3, 0.25, -0.7, -3.0),
    (3.7, 2.0, 1.0, 0.5),
    (0.9, 1.0, 0.0001, 1.0),
]
DTYPES = [np.float64, np.float32]
RTOL = {np.float64: 1e-13, np.float32: 2e-5}


def _dtype_id(dtype):
    return np.dtype(dtype).name


def _check(out, tangent, value, expected, dtype):
    assert np.result_type(out) == dtype
    assert np.result_type(tangent) == dtype
    assert np.shape(tangent) == ()
    np.testing.assert_allclose(out, value, rtol=RTOL[dtype], atol=RTOL[dtype])
    np.testing.assert_allclose(tangent, expected, rtol=RTOL[dtype], atol=RTOL[dtype])


def _rounded(dtype, *values):
    """The inputs in `dtype`, and the same numbers (after rounding) as Python floats for the closed form."""
    arrays = tuple(np.asarray(v, dtype=dtype) for v in values)
    return arrays, tuple(float(v) for v in arrays)


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("point", POINTS, ids=str)
@pytest.mark.parametrize("name, fn, value, tangent", BINARY, ids=[r[0] for r in BINARY])
def test_binary_rule_with_both_arguments_dual(name, fn, value, tangent, point, dtype):
    (a, b, c, d), (fa, fb, fc, fd) = _rounded(dtype, *point)
    out, t = adcore.jvp(fn, (a, c), (b, d), backend="forward")
    _check(out, t, value(fa, fc), tangent(fa, fb, fc, fd), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("point", POINTS, ids=str)
@pytest.mark.parametrize("name, fn, value, tangent", BINARY, ids=[r[0] for r in BINARY])
def test_binary_rule_batch_of_two_tangents_is_both_partials(name, fn, value, tangent, point, dtype):
    # the Jacobian is one pass with tangents e_1 and e_2: the rule's two partials
    (a, _, c, _), (fa, _, fc, _) = _rounded(dtype, *point)
    da, dc = adcore.jacobian(fn, argnums=(0, 1), backend="forward")(a, c)
    assert da.dtype == dtype and dc.dtype == dtype
    tol = dict(rtol=RTOL[dtype], atol=RTOL[dtype])
    np.testing.assert_allclose(da, tangent(fa, 1.0, fc, 0.0), **tol)
    np.testing.assert_allclose(dc, tangent(fa, 0.0, fc, 1.0), **tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("point", POINTS, ids=str)
def test_pow_with_a_real_exponent(point, dtype):
    # (a + bε)^c = a^c + c a^(c-1) b ε, the exponent a plain number
    (a, b), (fa, fb) = _rounded(dtype, *point[:2])
    c = point[2]
    out, t = adcore.jvp(lambda x: x**c, (a,), (b,), backend="forward")
    _check(out, t, fa**c, c * fa ** (c - 1) * fb, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("point", POINTS, ids=str)
def test_pow_with_a_real_base(point, dtype):
    # a^(c + dε) = a^c + d a^c ln(a) ε, the base a plain number
    a = point[0]
    (c, d), (fc, fd) = _rounded(dtype, *point[2:])
    out, t = adcore.jvp(lambda y: a**y, (c,), (d,), backend="forward")
    _check(out, t, a**fc, fd * a**fc * math.log(a), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("point", POINTS, ids=str)
def test_pow_with_a_dual_exponent_and_a_constant_tangent_on_the_base(point, dtype):
    # d = 0 reduces the dual-exponent rule to the real-exponent one, b = 0 to the real-base one
    (a, b, c, d), (fa, fb, fc, fd) = _rounded(dtype, *point)
    zero = np.zeros((), dtype=dtype)
    _, t_base = adcore.jvp(lambda x, y: x**y, (a, c), (b, zero), backend="forward")
    _, t_exp = adcore.jvp(lambda x, y: x**y, (a, c), (zero, d), backend="forward")
    tol = dict(rtol=RTOL[dtype], atol=RTOL[dtype])
    np.testing.assert_allclose(t_base, fb * fc * fa ** (fc - 1), **tol)
    np.testing.assert_allclose(t_exp, fd * fa**fc * math.log(fa), **tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("point", POINTS, ids=str)
@pytest.mark.parametrize("name, fn, value, tangent", UNARY, ids=[r[0] for r in UNARY])
def test_unary_rule(name, fn, value, tangent, point, dtype):
    (a, b), (fa, fb) = _rounded(dtype, *point[:2])
    out, t = adcore.jvp(fn, (a,), (b,), backend="forward")
    _check(out, t, value(fa), tangent(fa, fb), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("point", POINTS, ids=str)
@pytest.mark.parametrize("base", [2.0, 10.0, math.e, 0.5])
def test_log_with_a_base(base, point, dtype):
    # log_s(a + bε) = log_s(a) + b / (a ln s) ε, written as log(x) / log(s)
    (a, b), (fa, fb) = _rounded(dtype, *point[:2])
    out, t = adcore.jvp(lambda x: anp.log(x) / math.log(base), (a,), (b,), backend="forward")
    _check(out, t, math.log(fa, base), fb / (fa * math.log(base)), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("point", POINTS, ids=str)
@pytest.mark.parametrize("name, fn, value, tangent", UNARY, ids=[r[0] for r in UNARY])
def test_unary_rule_matches_reverse(name, fn, value, tangent, point, dtype):
    (a, _), _ = _rounded(dtype, *point[:2])
    gf = adcore.grad(fn, backend="forward")(a)
    gr = adcore.grad(fn, backend="reverse")(a)
    assert gf.dtype == gr.dtype == dtype
    np.testing.assert_allclose(gf, gr, rtol=RTOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_id)
def test_rules_on_arrays_are_elementwise(dtype):
    # the seed's rules hold point by point when a, b, c, d are arrays
    a, b, c, d = (np.asarray(col, dtype=dtype) for col in zip(*POINTS))
    tol = dict(rtol=RTOL[dtype], atol=RTOL[dtype])
    for _, fn, value, tangent in BINARY:
        out, t = adcore.jvp(fn, (a, c), (b, d), backend="forward")
        assert out.dtype == t.dtype == dtype and t.shape == a.shape
        expected = [tangent(*map(float, p)) for p in zip(a, b, c, d)]
        np.testing.assert_allclose(out, [value(float(x), float(y)) for x, y in zip(a, c)], **tol)
        np.testing.assert_allclose(t, expected, **tol)
    for _, fn, value, tangent in UNARY:
        out, t = adcore.jvp(fn, (a,), (b,), backend="forward")
        assert out.dtype == t.dtype == dtype and t.shape == a.shape
        np.testing.assert_allclose(out, [value(float(x)) for x in a], **tol)
        np.testing.assert_allclose(t, [tangent(float(x), float(y)) for x, y in zip(a, b)], **tol)


def test_composite_rule_chains_like_the_seed():
    # F'(a) = Dual(F(a + ε)): sqrt(exp(sin x) * x) at a = 0.8 by the chain rule
    a = 0.8
    inner = math.exp(math.sin(a)) * a
    expected = 0.5 / math.sqrt(inner) * (math.exp(math.sin(a)) * math.cos(a) * a + math.exp(math.sin(a)))
    out, t = adcore.jvp(lambda x: anp.sqrt(anp.exp(anp.sin(x)) * x), (a,), (1.0,), backend="forward")
    assert out == pytest.approx(math.sqrt(inner), rel=1e-15)
    assert t == pytest.approx(expected, rel=1e-14)
