"""The elementwise ops added in issue 17: analytic derivatives on every backend, their special
points (sinc at 0, logaddexp at -inf, fmax with NaN, hypot at 0, nan_to_num), NumPy dispatch of
every name they stand for, and torch's gradients where torch has the function."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.ops import elementwise as ew
from adcore.plugins import get_registry

BACKENDS = ["reverse", "forward", "symbolic", "numeric"]
RULE_BACKENDS = ["reverse", "forward", "symbolic"]
OPS = [
    "arcsinh", "arccosh", "arctanh", "log2", "log10", "exp2", "logaddexp", "logaddexp2", "hypot", "mod",
    "fmod", "floor_divide", "fmax", "fmin", "sinc", "deg2rad", "rad2deg", "ceil", "fabs", "cbrt",
    "copysign", "float_power", "nan_to_num", "heaviside",
]  # fmt: skip
LN2, LN10, PI = np.log(2.0), np.log(10.0), np.pi


def _sinc_slope(x):
    return (np.cos(PI * x) - np.sinc(x)) / x


# op, inputs, and the elementwise derivative of the output by each differentiable input, from the
# textbook formula (the inputs are away from every kink, so numeric must agree too)
X = np.array([-1.7, -0.4, 0.3, 2.2])
Y = np.array([0.9, -1.3, 0.6, -0.8])
P = np.array([0.6, 1.4, 2.5, 3.1])
ANALYTIC = [
    ("arcsinh", (X,), (1 / np.sqrt(X**2 + 1),)),
    ("arccosh", (P + 1,), (1 / np.sqrt((P + 1) ** 2 - 1),)),
    ("arctanh", (X / 4,), (1 / (1 - (X / 4) ** 2),)),
    ("log2", (P,), (1 / (P * LN2),)),
    ("log10", (P,), (1 / (P * LN10),)),
    ("exp2", (X,), (2**X * LN2,)),
    ("logaddexp", (X, Y), (np.exp(X) / (np.exp(X) + np.exp(Y)), np.exp(Y) / (np.exp(X) + np.exp(Y)))),
    ("logaddexp2", (X, Y), (2**X / (2**X + 2**Y), 2**Y / (2**X + 2**Y))),
    ("hypot", (X, Y), (X / np.sqrt(X**2 + Y**2), Y / np.sqrt(X**2 + Y**2))),
    # x / y = -1.89, 0.31, 0.5, -2.75: floor -2, 0, 0, -3 and trunc -1, 0, 0, -2
    ("mod", (X, Y), (np.ones(4), -np.floor(X / Y))),
    ("fmod", (X, Y), (np.ones(4), -np.trunc(X / Y))),
    ("floor_divide", (X, Y), (np.zeros(4), np.zeros(4))),
    ("fmax", (X, Y), ((X > Y) * 1.0, (Y > X) * 1.0)),
    ("fmin", (X, Y), ((X < Y) * 1.0, (Y < X) * 1.0)),
    ("sinc", (X,), (_sinc_slope(X),)),
    ("deg2rad", (X * 90,), (np.full(4, PI / 180),)),
    ("rad2deg", (X,), (np.full(4, 180 / PI),)),
    ("ceil", (X,), (np.zeros(4),)),
    ("fabs", (X,), (np.sign(X),)),
    ("cbrt", (X,), (1 / (3 * np.cbrt(X) ** 2),)),
    ("copysign", (X, Y), (np.sign(X) * np.sign(Y), np.zeros(4))),
    ("float_power", (P, Y), (Y * P ** (Y - 1), P**Y * np.log(P))),
    ("nan_to_num", (X,), (np.ones(4),)),
    ("heaviside", (X, np.full(4, 0.5)), (np.zeros(4), np.zeros(4))),
]


def _diagonals(op, inputs, backend, **params):
    """d op / d input for each differentiable input, as the diagonal of its (elementwise) Jacobian."""
    argnums = tuple(i for i in range(len(inputs)) if op.is_differentiable(i))
    jacobians = adcore.jacobian(lambda *a: op(*a, **params), argnums=argnums, backend=backend)(*inputs)
    return [np.diagonal(j) for j in jacobians]


def test_every_op_of_the_issue_is_tested_here():
    assert sorted(name for name, _, _ in ANALYTIC) == sorted(OPS)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("name", "inputs", "expected"), ANALYTIC, ids=[a[0] for a in ANALYTIC])
def test_analytic_derivatives(name, inputs, expected, backend):
    got = _diagonals(adcore.ops[name], inputs, backend)
    rtol = 1e-6 if backend == "numeric" else 1e-12
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol)


# --- kinks and special points: the values every rule backend must give ---------------------------


KINKS = [(name, k) for name in OPS for k in adcore.ops[name].kinks]


def test_the_ops_with_kinks_or_limits_declare_them():
    declared = {name for name, _ in KINKS}
    assert declared >= {"ceil", "fabs", "mod", "fmod", "fmax", "fmin", "copysign", "heaviside", "sinc"}
    assert declared >= {"logaddexp", "logaddexp2", "hypot", "nan_to_num", "float_power", "floor_divide"}


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize(("name", "kink"), KINKS, ids=[name for name, _ in KINKS])
def test_kinks_give_the_declared_derivative(name, kink, backend):
    op = adcore.ops[name]
    inputs = tuple(np.asarray(a, dtype=np.float64) for a in kink.inputs)
    with warnings.catch_warnings():
        if backend != "symbolic":  # whose NumPy code evaluates the branches a Piecewise does not take
            warnings.simplefilter("error")  # no inf - inf or 0/0 computed on the way (numpy would warn)
        got = _diagonals(op, inputs, backend, **kink.params)
    value = op(*inputs, **kink.params)
    np.testing.assert_array_equal(value, op.impl(*inputs, **kink.params))
    for g, e in zip(got, kink.jacobians):
        np.testing.assert_allclose(g, np.diagonal(e) if np.ndim(e) == 2 else e, rtol=1e-15, atol=0)


@pytest.mark.parametrize("outer", ["reverse", "forward"])
@pytest.mark.parametrize("inner", ["reverse", "forward", "symbolic"])
def test_sinc_at_0_first_and_second_derivative(inner, outer):
    # sinc(x) = 1 - (pi x)**2 / 6 + ...: sinc'(0) = 0, sinc''(0) = -pi**2 / 3 (the limits, not 0/0)
    x = np.array([0.0, 1e-9, 0.05, 0.0999, 0.1001, 0.7])
    d1 = adcore.grad(lambda x: anp.sum(anp.sinc(x)), backend=inner)(x)
    d2 = adcore.hessian(lambda x: anp.sum(anp.sinc(x)), inner=inner, outer=outer)(x)
    # away from 0, d2 from the closed form: (-pi**2 x**2 sinc - 2 x sinc') / x**2
    closed_d2 = -(PI**2) * np.sinc(x[1:]) - 2 * _sinc_slope(x[1:]) / x[1:]
    assert d1[0] == 0.0
    np.testing.assert_allclose(d1[1], -(PI**2) * 1e-9 / 3, rtol=1e-12)  # the series, no cancellation
    np.testing.assert_allclose(d1[2:], _sinc_slope(x[2:]), rtol=1e-12)
    np.testing.assert_allclose(np.diagonal(d2)[0], -(PI**2) / 3, rtol=1e-14)
    np.testing.assert_allclose(np.diagonal(d2)[2:], closed_d2[1:], rtol=1e-9)
    assert np.allclose(d2 - np.diag(np.diagonal(d2)), 0)


def test_sinc_third_derivative_at_0_is_0():
    d3 = adcore.grad(adcore.grad(adcore.grad(anp.sinc)))(0.0)
    assert d3 == 0.0  # sinc is even


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_logaddexp_with_minus_inf(backend):
    # logaddexp(-inf, y) = y: d/dx = 0, d/dy = 1, finite; two -inf split 0.5/0.5 like a tie
    x, y = np.array([-np.inf, -np.inf, 0.3]), np.array([1.5, -np.inf, -np.inf])
    dx, dy = _diagonals(ew.logaddexp, (x, y), backend)
    np.testing.assert_array_equal(dx, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(dy, [1.0, 0.5, 0.0])


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_logaddexp_second_derivative_at_minus_inf_is_0(backend):
    h = adcore.hessian(lambda x: anp.logaddexp(x, 2.0), inner=backend)(-np.inf)
    assert h == 0.0


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_logaddexp_is_stable_at_large_inputs(backend):
    dx, dy = _diagonals(ew.logaddexp, (np.array([1000.0, -1000.0]), np.array([999.0, 5.0])), backend)
    np.testing.assert_allclose(dx, [1 / (1 + np.exp(-1.0)), 0.0], atol=1e-300)
    np.testing.assert_allclose(dy, [1 / (1 + np.exp(1.0)), 1.0])


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_and_fmin_ignore_nan(name, backend):
    # fmax(nan, y) = y: all the derivative goes to y; NaN in both is a NaN result, split like a tie
    x, y = np.array([np.nan, 2.0, np.nan]), np.array([1.0, np.nan, np.nan])
    dx, dy = _diagonals(adcore.ops[name], (x, y), backend)
    np.testing.assert_array_equal(dx, [0.0, 1.0, 0.5])
    np.testing.assert_array_equal(dy, [1.0, 0.0, 0.5])


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_fmax_ties_split_like_maximum(backend):
    dx, dy = _diagonals(ew.fmax, (np.array([1.5, 2.0]), np.array([1.5, 1.0])), backend)
    np.testing.assert_array_equal(dx, [0.5, 1.0])
    np.testing.assert_array_equal(dy, [0.5, 0.0])
    assert np.array_equal(
        dx, _diagonals(ew.maximum, (np.array([1.5, 2.0]), np.array([1.5, 1.0])), backend)[0]
    )


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_hypot_at_0_is_0_and_finite_twice(backend):
    # no derivative at (0, 0): 0 to each input (hypot(x, 0) = |x| and abs'(0) = 0), as JAX gives
    dx, dy = _diagonals(ew.hypot, (np.zeros(2), np.zeros(2)), backend)
    np.testing.assert_array_equal(dx, [0.0, 0.0])
    np.testing.assert_array_equal(dy, [0.0, 0.0])
    np.testing.assert_array_equal(_diagonals(ew.abs, (np.zeros(1),), backend)[0], [0.0])
    if backend != "symbolic":
        h = adcore.hessian(lambda x: anp.hypot(x, 0.0), inner=backend)(0.0)
        assert h == 0.0  # as abs''(0) = 0, not 1 / hypot = inf


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_nan_to_num_derivative_is_1_where_finite_0_where_replaced(backend):
    x = np.array([0.5, np.nan, np.inf, -np.inf, -2.0])
    (d,) = _diagonals(ew.nan_to_num, (x,), backend)
    np.testing.assert_array_equal(d, [1.0, 0.0, 0.0, 0.0, 1.0])
    (d,) = _diagonals(ew.nan_to_num, (x,), backend, nan=1.0, posinf=5.0, neginf=-5.0)
    np.testing.assert_array_equal(d, [1.0, 0.0, 0.0, 0.0, 1.0])


def test_nan_to_num_keywords_and_no_write_into_the_input():
    x = np.array([np.nan, np.inf, 1.0])
    assert list(anp.nan_to_num(x, nan=2.0, posinf=3.0)) == [2.0, 3.0, 1.0]
    out = adcore.grad(lambda x: anp.sum(np.nan_to_num(x, copy=False, nan=7.0) * 2.0))(x)
    np.testing.assert_array_equal(out, [0.0, 0.0, 2.0])
    assert np.isnan(x[0])


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_copysign_by_the_sign_bit_of_minus_0(backend):
    dx, dy = _diagonals(ew.copysign, (np.array([1.5, 1.5, 0.0]), np.array([-0.0, 0.0, -1.0])), backend)
    np.testing.assert_array_equal(dx, [-1.0, 1.0, 0.0])
    np.testing.assert_array_equal(dy, [0.0, 0.0, 0.0])


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_cbrt_derivative_is_inf_at_0(backend):
    # a vertical tangent: the derivative is +inf, which is what the rule gives (documented)
    with np.errstate(divide="ignore"):
        (d,) = _diagonals(ew.cbrt, (np.array([0.0, 8.0]),), backend)
    assert d[0] == np.inf and d[1] == pytest.approx(1 / 12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_heaviside_value_at_0_has_derivative_1_there(backend):
    # heaviside(0, h) is h: a rule giving d/dh = 0 there would be a silent wrong zero (numeric gives 1)
    dh = adcore.grad(lambda h: anp.sum(anp.heaviside(np.array([-1.0, 0.0, 2.0, 0.0]), h)), backend=backend)
    np.testing.assert_allclose(dh(np.array([0.5, 0.2, 0.3, 0.9])), [0.0, 1.0, 0.0, 1.0], rtol=1e-9)
    np.testing.assert_allclose(dh(np.array(0.5)), 2.0, rtol=1e-9)  # broadcast h: summed


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic"])
def test_float_power_is_float64_and_its_gradient_has_the_input_dtype(backend):
    x = np.array([1.5, 2.0], dtype=np.float32)
    assert anp.float_power(x, np.float32(2.0)).dtype == np.float64
    g = adcore.grad(lambda x: anp.sum(anp.float_power(x, 3.0)), backend=backend)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 3 * x.astype(np.float64) ** 2, rtol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mod_and_operators_on_traced_values(backend):
    # x % y is mod (NumPy's remainder), x // y floor_divide: the gradient of x % y + x // y
    x, y = np.array([2.5, -1.3, 4.1]), np.array([0.7, 0.9, -1.6])
    gx, gy = adcore.grad(lambda x, y: anp.sum(x % y + x // y), argnums=(0, 1), backend=backend)(x, y)
    np.testing.assert_allclose(gx, np.ones(3), rtol=1e-6)
    np.testing.assert_allclose(gy, -np.floor_divide(x, y), rtol=1e-6)
    gq, gr = adcore.grad(lambda y: anp.sum(divmod(3.3, y)[1]), backend=backend)(y), -np.floor_divide(3.3, y)
    np.testing.assert_allclose(gq, gr, rtol=1e-6)


# --- NumPy names ---------------------------------------------------------------------------------


def _numpy_name(func) -> str:
    return func.__name__


DISPATCH = [(name, f) for name in OPS for f in adcore.ops[name].numpy]


@pytest.mark.parametrize(("name", "func"), DISPATCH, ids=[f"{n}-{_numpy_name(f)}" for n, f in DISPATCH])
def test_numpy_function_on_a_tracer_is_the_op(name, func):
    op = adcore.ops[name]
    inputs = next(a for n, a, _ in ANALYTIC if n == name)
    argnums = tuple(i for i in range(len(inputs)) if op.is_differentiable(i))
    by_numpy = adcore.jacobian(lambda *a: func(*a), argnums=argnums)(*inputs)
    by_op = adcore.jacobian(lambda *a: op(*a), argnums=argnums)(*inputs)
    assert get_registry().numpy_ops[func] is op
    for a, b in zip(by_numpy, by_op):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("alias", "name", "func"),
    [
        ("remainder", "mod", np.remainder),
        ("radians", "deg2rad", np.radians),
        ("degrees", "rad2deg", np.degrees),
        ("true_divide", "divide", np.true_divide),
    ],
)
def test_aliases_in_adcore_numpy_and_numpy(alias, name, func):
    assert getattr(anp, alias) is adcore.ops[name]
    assert alias in adcore.ops[name].aliases
    x, y = np.array([1.3, -2.1]), np.array([0.7, 0.9])
    args = (x, y) if adcore.ops[name].nin == 2 else (x,)
    g_numpy = adcore.grad(lambda x: anp.sum(func(x, *args[1:])))(x)
    g_op = adcore.grad(lambda x: anp.sum(getattr(anp, alias)(x, *args[1:])))(x)
    np.testing.assert_array_equal(g_numpy, g_op)


def test_wrong_number_of_inputs_names_the_op():
    with pytest.raises(TypeError, match="'hypot'"):
        anp.hypot(np.ones(2))


# --- torch ---------------------------------------------------------------------------------------

TORCH = {
    "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "log2": "log2", "log10": "log10",
    "exp2": "exp2", "logaddexp": "logaddexp", "logaddexp2": "logaddexp2", "hypot": "hypot",
    "mod": "remainder", "fmod": "fmod", "fmax": "fmax", "fmin": "fmin", "sinc": "sinc",
    "deg2rad": "deg2rad", "rad2deg": "rad2deg", "ceil": "ceil", "fabs": "abs", "copysign": "copysign",
    "float_power": "float_power", "nan_to_num": "nan_to_num",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(TORCH))
def test_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    op = adcore.ops[name]
    inputs = next(a for n, a, _ in ANALYTIC if n == name)
    weights = np.linspace(0.5, 1.5, 4)
    argnums = tuple(range(len(inputs)))
    ours = adcore.grad(lambda *a: anp.sum(op(*a) * weights), argnums=argnums)(*inputs)
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in inputs]
    out = getattr(torch, TORCH[name])(*tensors)
    (out * torch.tensor(weights)).sum().backward()
    for g, t in zip(ours, tensors):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12, atol=1e-15)


def _composite(x):
    # maximum of fmax and logaddexp: sympy compares the two where their arguments are numbers
    return anp.sum(anp.maximum(anp.fmax(x, 0.3), anp.logaddexp(x, -1.0)) + anp.hypot(x, 2.0) * anp.sinc(x))


@pytest.mark.parametrize("backend", ["forward", "symbolic", "numeric"])
def test_a_composite_agrees_with_reverse_to_second_order(backend):
    x = np.array([-1.3, 0.0, 0.45, 2.2])
    g = adcore.grad(_composite)(x)
    np.testing.assert_allclose(
        adcore.grad(_composite, backend=backend)(x), g, rtol=1e-6 if backend == "numeric" else 1e-12
    )
    if backend != "numeric":
        h = adcore.hessian(_composite, inner="reverse", outer="forward")(x)
        np.testing.assert_allclose(
            adcore.hessian(_composite, inner=backend, outer="reverse")(x), h, rtol=1e-10, atol=1e-12
        )


def test_symbolic_functions_evaluate_at_numbers():
    sp = pytest.importorskip("sympy")
    from adcore_symbolic.sympy_rules.elementwise import _functions

    f = _functions()
    assert float(sp.Max(f.Fmax(sp.Integer(1), sp.Integer(2)), 1)) == 2.0  # comparable: no ValueError
    assert float(f.LogAddExp(sp.Integer(0), sp.Integer(0))) == pytest.approx(np.log(2.0), rel=1e-15)
    assert float(f.Hypot(sp.Integer(3), sp.Integer(4))) == 5.0


def test_np_sinc_on_a_tracer_is_the_sinc_op():
    """np.sinc is not a ufunc: it reaches the sinc op through __array_function__."""
    x = np.array([0.3, 0.5, 0.0])
    expected = np.array(
        [(np.cos(PI * 0.3) - np.sinc(0.3)) / 0.3, (np.cos(PI * 0.5) - np.sinc(0.5)) / 0.5, 0.0]
    )
    for backend in ("reverse", "forward"):
        np.testing.assert_allclose(adcore.grad(lambda x: np.sum(np.sinc(x)), backend=backend)(x), expected)
