"""adcore-special: the plugin loads, its ops match scipy and known constants, and every installed
backend's derivatives (first, second, third) match the closed forms, float32 kept.

Known values: Abramowitz & Stegun 6.1.8 (Gamma(1/2) = sqrt(pi)), 6.3.2-6.3.3 (digamma(1) =
-euler_gamma, digamma(1/2) = -euler_gamma - 2 ln 2), 6.4.2 (polygamma(1, n) = (-1)^(n+1) n!
zeta(n+1)), 7.1 (erfc(1/2) = 0.4795001221869535, erfc' = -2/sqrt(pi) exp(-x^2), so erfcx(x) =
exp(x^2) erfc(x) has erfcx' = 2x erfcx - 2/sqrt(pi)); zeta(2) = pi^2/6, zeta(3) =
1.2020569031595942 (Apery's constant).
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from contextlib import contextmanager

import adcore_special
import numpy as np
import pytest
from adcore_special import erfcx, loggamma, powm1, psi
from scipy import special

import adcore
from adcore.plugins import get_registry

# the backends that differentiate (a pattern backend, such as sparsity, gives dependency patterns)
BACKENDS = [b for b in adcore.backends() if not adcore.get_backend(b).pattern]
EXACT = [b for b in BACKENDS if not adcore.get_backend(b).estimates]  # numeric estimates by differences
DTYPES = [np.float64, np.float32]
ZETA3 = 1.2020569031595942
X = np.array([-2.5, -0.4, 0.0, 0.7, 3.0])  # erfcx's inputs, both tails included
P = np.array([0.5, 1.0, 2.5, 7.0])  # loggamma's and psi's: away from the poles at 0, -1, ...


def erfcx_prime(x):
    return 2 * x * special.erfcx(x) - 2 / math.sqrt(math.pi)


def erfcx_second(x):
    return (2 + 4 * x**2) * special.erfcx(x) - 4 * x / math.sqrt(math.pi)


def tol(backend: str, dtype, order: int = 1) -> dict:
    """How close a backend's derivative of order `order` must be to the closed form."""
    if backend != "numeric":
        return {"rtol": 1e-12 if dtype == np.float64 else 2e-6, "atol": 1e-14}
    # finite differences keep about half the digits of the values they difference, fewer per order
    rtol = {np.float64: (1e-7, 1e-4), np.float32: (2e-3, 5e-2)}[dtype][order - 1]
    return {"rtol": rtol, "atol": rtol / 2}


@contextmanager
def strict_numpy():
    """Any warning is an error; overflow, division by zero and invalid operations raise
    (underflow to 0 stays allowed: exp(-2000) = 0 is correctly rounded)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", divide="raise", invalid="raise", under="ignore"):
            yield


# --- the plugin ---------------------------------------------------------------------------------


def test_the_plugin_registers_four_ops_each_with_all_three_rule_kinds_and_a_case():
    registry = get_registry()
    record = registry.plugins["special"]
    assert record.error == ""
    assert sorted(record.ops) == ["erfcx", "loggamma", "powm1", "psi"]
    assert sorted(record.rules) == sorted((k, op) for k in ("vjp", "jvp", "sympy") for op in record.ops)
    assert record.cases == ["special_chain"]


def test_the_ops_are_reachable_by_name_attribute_and_package():
    assert adcore.ops.erfcx is adcore.ops["erfcx"] is adcore_special.erfcx
    assert adcore.ops.powm1 is powm1


# --- values ---------------------------------------------------------------------------------------


def test_values_match_scipy_and_known_constants():
    np.testing.assert_array_equal(erfcx(X), special.erfcx(X))
    assert erfcx(0.0) == 1.0
    assert erfcx(0.5) == pytest.approx(math.exp(0.25) * 0.4795001221869535, rel=1e-15)  # A&S table 7.1
    np.testing.assert_array_equal(loggamma(P), special.gammaln(P))
    assert loggamma(0.5) == pytest.approx(math.log(math.sqrt(math.pi)), rel=1e-15)
    assert loggamma(1.0) == 0.0 and loggamma(2.0) == 0.0
    for n in range(4):
        np.testing.assert_allclose(psi(P, n=n), special.polygamma(n, P), rtol=1e-14)
    assert psi(1.0) == pytest.approx(-np.euler_gamma, rel=1e-15)
    assert psi(0.5) == pytest.approx(-np.euler_gamma - 2 * math.log(2), rel=1e-15)
    assert psi(1.0, n=1) == pytest.approx(math.pi**2 / 6, rel=1e-15)
    assert psi(1.0, 2) == pytest.approx(-2 * ZETA3, rel=1e-15)  # n positionally too
    assert powm1(2.0, 3.0) == 7.0 and powm1(4.0, -0.5) == -0.5
    np.testing.assert_array_equal(powm1(P[:, None], X), special.powm1(P[:, None], X))


@pytest.mark.parametrize("op", [erfcx, loggamma, psi, lambda x: powm1(x, np.float32(1.5))])
def test_values_keep_float32(op):
    assert op(P.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("n", [-1, 1.5, True, "2"])
def test_psi_refuses_an_order_that_is_not_a_non_negative_int(n):
    with pytest.raises(ValueError, match=r"op 'psi': n must be a non-negative integer"):
        psi(P, n=n)


def test_a_call_with_the_wrong_number_of_inputs_names_the_op():
    with pytest.raises(TypeError, match="powm1"):
        powm1(P)


# --- first derivatives on every backend --------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_first_derivatives_match_the_closed_forms(backend, dtype):
    def d(f, x):  # the Jacobian's diagonal: a finite difference of the sum would difference erfcx(-2.5) = 1e3
        return np.diagonal(adcore.jacobian(f, backend=backend)(x.astype(dtype)))

    cases = [
        (d(erfcx, X), erfcx_prime(X)),
        (d(loggamma, P), special.digamma(P)),
        (d(psi, P), special.polygamma(1, P)),
        (d(lambda v: psi(v, n=2), P), special.polygamma(3, P)),
    ]
    for got, expected in cases:
        assert got.dtype == dtype
        np.testing.assert_allclose(got, expected, **tol(backend, dtype))


@pytest.mark.parametrize("backend", BACKENDS)
def test_loggamma_derivative_at_1_is_minus_euler_gamma(backend):
    np.testing.assert_allclose(
        adcore.grad(loggamma, backend=backend)(1.0), -np.euler_gamma, **tol(backend, np.float64)
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_powm1_gradients_are_summed_over_broadcasting(backend, dtype):
    x = np.array([[0.5], [2.0]], dtype=dtype)  # (2, 1) against (2, 3)
    y = np.array([[0.0, 1.0, -2.0], [3.0, 0.5, -1.0]], dtype=dtype)
    gx, gy = adcore.grad(lambda a, b: powm1(a, b).sum(), argnums=(0, 1), backend=backend)(x, y)
    x64, y64 = x.astype(float), y.astype(float)  # d/dx x**y = y x**(y - 1), d/dy x**y = x**y log x
    assert (gx.dtype, gy.dtype) == (dtype, dtype)
    np.testing.assert_allclose(gx, (y64 * x64 ** (y64 - 1)).sum(axis=1, keepdims=True), **tol(backend, dtype))
    np.testing.assert_allclose(gy, x64**y64 * np.log(x64), **tol(backend, dtype))


@pytest.mark.parametrize("backend", BACKENDS)
def test_scipy_and_numpy_functions_are_differentiable_as_written(backend):
    def f(x):
        return (special.erfcx(x) + special.loggamma(x + 3) + special.powm1(2.0, x)).sum()

    expected = erfcx_prime(X) + special.digamma(X + 3) + 2.0**X * math.log(2.0)
    np.testing.assert_allclose(adcore.grad(f, backend=backend)(X), expected, **tol(backend, np.float64))


# --- higher derivatives ----------------------------------------------------------------------------


@pytest.mark.parametrize("outer", EXACT)
@pytest.mark.parametrize("inner", EXACT)
def test_second_derivatives_match_the_closed_forms_for_every_pair_of_backends(inner, outer):
    def h(f, x):
        return np.diag(adcore.hessian(lambda v: f(v).sum(), inner=inner, outer=outer)(x))

    np.testing.assert_allclose(h(erfcx, X), erfcx_second(X), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h(loggamma, P), special.polygamma(1, P), rtol=1e-12)
    assert h(loggamma, np.array([1.0]))[0] == pytest.approx(math.pi**2 / 6, rel=1e-14)  # zeta(2)


def test_the_numeric_hessian_matches_too():
    if "numeric" not in BACKENDS:
        pytest.skip("the numeric backend is not installed")
    got = np.diag(adcore.hessian(lambda v: loggamma(v).sum(), backend="numeric")(P))
    np.testing.assert_allclose(got, special.polygamma(1, P), **tol("numeric", np.float64, order=2))


@pytest.mark.parametrize("backend", EXACT)
def test_third_derivative_of_loggamma_at_1_is_minus_two_zeta_3(backend):
    third = adcore.grad(adcore.grad(adcore.grad(loggamma, backend=backend), backend=backend), backend=backend)
    assert third(1.0) == pytest.approx(-2 * ZETA3, rel=1e-14)


# --- powm1's accuracy -----------------------------------------------------------------------------

# (x, y) where x**y is within 1e-12 of 1, so x**y - 1 would keep about 4 of its 16 digits:
# powm1 = expm1(y log x), and its derivatives d/dx = y x**(y-1), d/dy = x**y log x, d2/dy2 = x**y log(x)**2
NEAR_ONE = [(1 + 2e-12, 0.5), (1 - 3e-12, 2.0), (4.0, 1e-12), (0.25, -7e-13)]


@pytest.mark.parametrize("backend", EXACT)  # a finite difference of a value near 1e-12 is noise
def test_powm1_keeps_its_digits_where_x_to_the_y_is_near_one(backend):
    for x, y in NEAR_ONE:
        log_x = math.log1p(x - 1) if abs(x - 1) < 0.5 else math.log(x)
        with strict_numpy():
            got = powm1(x, y)
            g = adcore.grad(powm1, argnums=(0, 1), backend=backend)(x, y)
            h = adcore.grad(adcore.grad(powm1, argnums=1, backend=backend), argnums=1, backend=backend)(x, y)
        assert got == pytest.approx(math.expm1(y * log_x), rel=1e-14)
        np.testing.assert_allclose(g, (y * x ** (y - 1), x**y * log_x), rtol=1e-14)
        assert h == pytest.approx(x**y * log_x**2, rel=1e-13)


# --- powm1 where its rules' formulas are 0/0 ------------------------------------------------------

# (x, y, d/dx, d/dy, d2/dx2) of x**y - 1 where y (ans + 1) / x or (ans + 1) log(x) is nan: at x = 0,
# x**1 - 1 = x - 1, x**2 - 1 and x**3 - 1 (so d/dx = 1, 0, 0 and d2/dx2 = 0, 2, 0), and 0**y = 0 for
# every y > 0 (d/dy = 0); at y = 0, x**0 - 1 is 0 for every x (d/dx = 0, d2/dx2 = 0) and d/dy = log x
EDGES = [
    (0.0, 1.0, 1.0, 0.0, 0.0),
    (0.0, 2.0, 0.0, 0.0, 2.0),
    (0.0, 3.0, 0.0, 0.0, 0.0),
    (0.0, 2.5, 0.0, 0.0, 0.0),
    (0.0, 0.0, 0.0, None, 0.0),  # d/dy: 0**y jumps from inf to 1 to 0 across y = 0, no derivative
    (2.0, 0.0, 0.0, math.log(2.0), 0.0),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", EXACT)
@pytest.mark.parametrize(("x", "y", "dx", "dy", "dxx"), EDGES)
def test_powm1_derivatives_where_the_formulas_are_zero_over_zero(backend, dtype, x, y, dx, dy, dxx):
    x, y = dtype(x), dtype(y)
    d_dx = adcore.grad(powm1, argnums=0, backend=backend)
    assert d_dx(x, y) == dx
    assert adcore.grad(d_dx, argnums=0, backend=backend)(x, y) == dxx
    if dy is not None:
        assert adcore.grad(powm1, argnums=1, backend=backend)(x, y) == pytest.approx(dy, rel=1e-6)
    assert adcore.grad(powm1, argnums=0, backend=backend)(dtype(0.5), dtype(2.0)) == 1.0  # the next call


@pytest.mark.parametrize(("x", "y", "dx", "dy", "dxx"), [e for e in EDGES if e[1] in (1.0, 2.0, 3.0)])
def test_powm1_at_x_0_agrees_with_finite_differences(x, y, dx, dy, dxx):
    # integer y: x**y is defined on both sides of x = 0, so central differences see the same slope
    if "numeric" not in BACKENDS:
        pytest.skip("the numeric backend is not installed")
    assert adcore.grad(powm1, argnums=0, backend="numeric")(x, y) == pytest.approx(dx, abs=1e-8)
    assert adcore.grad(powm1, argnums=1, backend="numeric")(x, y) == pytest.approx(dy, abs=1e-8)


def test_powm1_is_conformance_checked_at_those_points():
    (kink,) = adcore.ops.powm1.kinks
    checked = set(zip(*kink.inputs))
    assert {(0.0, 1.0), (0.0, 2.0), (0.0, 3.0), (2.0, 0.0)} <= checked


# --- erfcx's slope where its closed form cancels -------------------------------------------------


def erfcx_derivatives_exactly(x: float) -> tuple[float, float]:
    """erfcx' = 2 x erfcx - 2/sqrt(pi) and erfcx'' = (2 + 4 x**2) erfcx - 4 x/sqrt(pi), in 60 digits
    (mpmath), where the cancellation (x**2 and x**4 of them) still leaves more than 16."""
    import mpmath

    with mpmath.workdps(60):
        e = mpmath.exp(mpmath.mpf(x) ** 2) * mpmath.erfc(x)
        first = 2 * x * e - 2 / mpmath.sqrt(mpmath.pi)
        second = (2 + 4 * mpmath.mpf(x) ** 2) * e - 4 * x / mpmath.sqrt(mpmath.pi)
        return float(first), float(second)


@pytest.mark.parametrize("backend", EXACT)
@pytest.mark.parametrize("x", [5.0, 39.5, 40.0, 1e3, 1e5, 1e8, 1e20])
def test_erfcx_slope_keeps_its_digits_for_large_x(backend, x):
    # 2 x erfcx(x) - 2/sqrt(pi) gave 0.0 at x = 1e8, where -5.6e-17 is right, and 2% off at 1e7
    first, second = erfcx_derivatives_exactly(x)
    with strict_numpy():
        d = adcore.grad(erfcx, backend=backend)
        assert d(x) == pytest.approx(first, rel=1e-12)  # the closed form keeps 12 digits up to 40
        assert adcore.grad(d, backend=backend)(x) == pytest.approx(second, rel=1e-10)
        np.testing.assert_allclose(  # both regimes in one array, and the next call
            adcore.grad(lambda v: erfcx(v).sum(), backend=backend)(np.array([0.5, x])),
            [erfcx_prime(0.5), first],
            rtol=1e-12,
        )


# --- the symbolic backend -----------------------------------------------------------------------


def test_the_symbolic_derivative_is_exact_and_compiles_to_calls_of_the_ops():
    symbolic = pytest.importorskip("adcore_symbolic")
    d = symbolic.derivative_expr(lambda x: loggamma(x) + erfcx(x), ())
    # the closed form up to x = 40, erfcx's asymptotic series from there (erfcx_slope)
    assert "(2*x*erfcx(x) + psi(0, x) - 2/sqrt(pi), True)" in str(d.derivatives[0])
    assert "x >= 40.0" in str(d.derivatives[0])
    assert "ops.psi(x, n=0)" in d.source
    assert "ops.erfcx(x)" in d.source


def test_the_plugin_loads_and_differentiates_without_sympy_until_a_sympy_rule_runs():
    # sympy blocked as if it were not installed: the rules name it through adcore.extend.LazyModule
    script = (
        "import sys\n"
        "sys.modules['sympy'] = None\n"
        "import numpy as np, adcore\n"
        "assert adcore.plugins.get_registry().plugins['special'].error == ''\n"
        "assert adcore.grad(adcore.ops.loggamma, backend='reverse')(2.0) == 1 - 0.5772156649015329\n"
        "assert abs(adcore.grad(adcore.ops.erfcx, backend='forward')(0.0) + 2 / np.pi**0.5) < 1e-15\n"
        "from adcore_special.sympy_rules import SYMPY_RULES\n"
        "try:\n"
        "    SYMPY_RULES['erfcx'](np.array([0.5], dtype=object))\n"
        "except ImportError as e:\n"
        "    assert 'sympy' in str(e)\n"
        "else:\n"
        "    raise AssertionError('a sympy rule ran without sympy')\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_loading_the_plugin_and_a_reverse_gradient_do_not_import_sympy():
    script = (
        "import sys, adcore\n"
        "assert 'special' in adcore.plugins.get_registry().plugins\n"
        "assert 'scipy' not in sys.modules, 'scipy imported by loading the plugins'\n"
        "assert adcore.grad(adcore.ops.loggamma, backend='reverse')(2.0) == 1 - 0.5772156649015329\n"
        "assert 'sympy' not in sys.modules, 'sympy imported before use'\n"
        "assert 'scipy.special' in sys.modules  # by the op's first call\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


# --- the registered case ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_special_chain_case_matches_its_closed_form(backend):
    case = get_registry().cases["special_chain"]
    x = np.array([[0.3], [-1.2]])  # (2, 1) against (2, 3)
    y = np.array([[0.5, -1.0, 2.0], [0.0, 1.5, -0.7]])
    a, b = special.erfcx(x), special.gammaln(1 + y**2)  # the sum of a**b - 1
    gx, gy = adcore.grad(case.fn, argnums=case.argnums, backend=backend)(x, y)
    da = b * a ** (b - 1) * erfcx_prime(x)
    db = a**b * np.log(a) * special.digamma(1 + y**2) * 2 * y
    np.testing.assert_allclose(gx, da.sum(axis=1, keepdims=True), **tol(backend, np.float64))
    np.testing.assert_allclose(gy, db, **tol(backend, np.float64))


@pytest.mark.parametrize(
    "f",
    [
        lambda x: adcore.ops.maximum(adcore.ops.loggamma(x / x), x / x),  # sympy compares loggamma(1) with 1
        lambda x: adcore.ops.clip(adcore.ops.psi(adcore.ops.relu(x)), a_min=-1.0, a_max=1.0),  # pole at 0
        lambda x: adcore.ops.maximum(adcore.ops.erfcx(x - x), adcore.ops.powm1(x / x, x - x)) * x,
    ],
)
def test_constants_built_from_special_ops_compare_in_symbolic(f):
    # found by `adcore conformance --fuzz`: sympy must evaluate these functions at numbers
    x = np.array(0.8217701239287258)
    np.testing.assert_allclose(
        adcore.grad(f, backend="symbolic")(x), adcore.grad(f, backend="reverse")(x), rtol=1e-12, atol=1e-15
    )


def test_vmap_batches_the_ops_by_their_elementwise_flag_with_no_batch_rule():
    registry = get_registry()
    assert all(registry.ops[name].elementwise for name in ("erfcx", "loggamma", "psi", "powm1"))
    assert not {"erfcx", "loggamma", "psi", "powm1"} & set(registry.rules["batch"])
    x, y = np.linspace(0.5, 3.0, 12).reshape(4, 3), np.linspace(-1.0, 1.0, 3)

    def f(x, y):
        return erfcx(x) * loggamma(x) + psi(x, n=1) - powm1(x, y)

    expected = np.stack([f(row, y) for row in x])
    np.testing.assert_array_equal(adcore.vmap(f, in_axes=(0, None))(x, y), expected)
    np.testing.assert_array_equal(adcore.vmap(f, in_axes=(1, None), out_axes=1)(x.T, y), expected.T)
