"""The conventions of docs/conventions.md, tested at the kink points, for every backend in BACKENDS.

Kinks: abs'(0)=0, sign'=0, relu'(0)=0, floor'=round'=0, maximum/minimum ties split 0.5/0.5,
max/min reductions split 1/k among ties, clip' = 1 on the closed interval, where's
condition has no derivative, and the untaken branch gets 0 even where its own derivative is
inf or nan (the where trap); a NaN in max/min and max_pool2d takes the gradient. Stability:
sigmoid, softplus, softmax, log_softmax and logsumexp are finite with finite gradients at
±1e3, without NumPy warnings. Dtypes:
float32 in, float32 out. Integer inputs: an error.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore import InvalidInputError

# Add a backend here once it implements the conventions; every test below then runs on it.
BACKENDS = ["reverse", "forward", "symbolic"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def grad(f, backend, argnums=0):
    return adcore.grad(f, argnums=argnums, backend=backend)


def jacobian(f, backend, argnums=0):
    return adcore.jacobian(f, argnums=argnums, backend=backend)


# --- kinks ----------------------------------------------------------------------------------


def test_abs_derivative_at_zero_is_zero(backend):
    d = grad(anp.abs, backend)
    assert d(0.0) == 0.0
    assert (d(-2.0), d(3.0)) == (-1.0, 1.0)  # and ±1 away from the kink


def test_abs_at_zero_in_an_array(backend):
    jac = jacobian(anp.abs, backend)(np.array([-1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(jac, np.diag([-1.0, 0.0, 1.0]))


@pytest.mark.parametrize("x", [-2.0, 0.0, 3.0])
def test_sign_derivative_is_zero_everywhere(backend, x):
    assert grad(anp.sign, backend)(x) == 0.0


def test_relu_derivative_at_zero_is_zero(backend):
    d = grad(anp.relu, backend)
    assert d(0.0) == 0.0
    assert (d(-1.0), d(1.0)) == (0.0, 1.0)


def test_relu_differs_from_maximum_with_zero_at_the_kink(backend):
    # relu has its own rule (0 at 0); maximum(x, 0) is a tie there and splits it (0.5)
    assert grad(lambda x: anp.maximum(x, 0.0), backend)(0.0) == 0.5


@pytest.mark.parametrize("op", ["floor", "round"])
@pytest.mark.parametrize("x", [-1.5, 0.0, 0.5, 1.0, 2.5, 2.7])
def test_floor_and_round_have_zero_derivative(backend, op, x):
    # integers and half-integers are floor's and round's jumps; 2.7 is an ordinary point
    assert grad(getattr(anp, op), backend)(x) == 0.0


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_binary_max_min_ties_split_equally(backend, op):
    gx, gy = grad(getattr(anp, op), backend, argnums=(0, 1))(1.5, 1.5)
    assert (gx, gy) == (0.5, 0.5)


@pytest.mark.parametrize("op, expected", [("maximum", (1.0, 0.0)), ("minimum", (0.0, 1.0))])
def test_binary_max_min_without_tie_go_to_the_winner(backend, op, expected):
    assert grad(getattr(anp, op), backend, argnums=(0, 1))(2.0, 1.0) == expected


def test_binary_max_ties_inside_arrays(backend):
    x, y = np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 0.0])
    gx, gy = grad(lambda a, b: anp.sum(anp.maximum(a, b)), backend, argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(gy, [0.5, 1.0, 0.0])


def test_max_reduction_splits_among_ties(backend):
    # three elements equal the max: 1/3 each
    g = grad(anp.max, backend)(np.array([1.0, 3.0, 3.0, 2.0, 3.0]))
    np.testing.assert_allclose(g, [0.0, 1 / 3, 1 / 3, 0.0, 1 / 3], rtol=1e-15)
    assert g.sum() == pytest.approx(1.0)


def test_min_reduction_splits_among_ties(backend):
    g = grad(anp.min, backend)(np.array([1.0, 3.0, 1.0, 2.0]))
    np.testing.assert_array_equal(g, [0.5, 0.0, 0.5, 0.0])


def test_max_reduction_over_an_axis_splits_per_slice(backend):
    x = np.array([[2.0, 2.0, 0.0], [1.0, 5.0, 4.0]])
    g = grad(lambda v: anp.sum(anp.max(v, axis=1)), backend)(x)
    np.testing.assert_array_equal(g, [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]])


def test_max_reduction_without_ties_picks_the_argmax(backend):
    g = grad(anp.max, backend)(np.array([1.0, 4.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])


def test_clip_derivative_is_one_on_the_closed_interval(backend):
    x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])  # below, at a_min, inside, at a_max, above
    jac = jacobian(lambda v: anp.clip(v, a_min=-1.0, a_max=1.0), backend)(x)
    np.testing.assert_array_equal(np.diag(jac), [0.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(jac, np.diag(np.diag(jac)))


def test_clip_with_one_bound(backend):
    x = np.array([-3.0, 0.5, 0.7])
    jac = jacobian(lambda v: anp.clip(v, a_min=None, a_max=0.5), backend)(x)
    np.testing.assert_array_equal(np.diag(jac), [1.0, 1.0, 0.0])


def test_where_condition_gets_no_derivative(backend):
    c = np.array([1.0, 0.0, 2.0])  # a float condition, truthy where nonzero
    x, y = np.array([2.0, 3.0, 4.0]), np.array([5.0, 6.0, 7.0])
    gc, gx, gy = grad(lambda c, x, y: anp.sum(anp.where(c, x, y)), backend, argnums=(0, 1, 2))(c, x, y)
    np.testing.assert_array_equal(gc, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(gx, [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(gy, [0.0, 1.0, 0.0])


@pytest.mark.parametrize("x, expected", [(2.0, 4.0), (-1.0, 3.0), (0.0, 3.0)])
def test_where_on_a_condition_computed_from_x_differentiates_the_chosen_branch(backend, x, expected):
    # f = x² if x > 0 else 3x: the switch contributes nothing, not even at x = 0
    assert grad(lambda v: np.where(v > 0, v**2, 3 * v), backend)(x) == expected


# --- the where trap (issue 15, class 13): the untaken branch's derivative is never taken --------
# where(c, x, y) differentiates the branch chosen at the point, as the Piecewise symbolic builds:
# positions of the other branch get exactly 0, even where that branch's own derivative is inf or
# nan (log at 0, sin(x)/x at 0). Reverse keeps those zeros through elementwise nodes (zeros.py).

LOG_TRAP = lambda x: anp.where(x > 0, anp.log(x), 0.0)  # noqa: E731
SINC = lambda x: anp.where(x != 0, anp.sin(x) / x, 1.0)  # noqa: E731
XLOGX = lambda x: anp.where(x > 0, x * anp.log(x), 0.0)  # noqa: E731
TRAPS = [
    # (f, x, f'(x), f''(x)) by hand, each from the branch taken at x
    (LOG_TRAP, 0.0, 0.0, 0.0),  # 0 is untaken: the constant branch
    (LOG_TRAP, -1.0, 0.0, 0.0),  # log(-1) is nan, and untaken
    (LOG_TRAP, 2.0, 0.5, -0.25),  # 1/x, -1/x²
    (SINC, 0.0, 0.0, 0.0),  # sinc'(0) = 0 is also the true value; sinc''(0) = -1/3 is not (docs)
    (SINC, 1.0, np.cos(1.0) - np.sin(1.0), -np.sin(1.0) - 2 * np.cos(1.0) + 2 * np.sin(1.0)),
    (XLOGX, 0.0, 0.0, 0.0),  # the kink: the left derivative, the branch where x > 0 fails
    (XLOGX, np.e, 2.0, 1 / np.e),  # log(x) + 1, 1/x
]


@pytest.mark.parametrize("f, x, d1, d2", TRAPS)
def test_where_gives_the_taken_branchs_derivative_even_where_the_other_is_inf_or_nan(backend, f, x, d1, d2):
    with np.errstate(divide="ignore", invalid="ignore"):  # both branches are evaluated, as in NumPy
        assert grad(f, backend)(x) == pytest.approx(d1, abs=1e-15)
        assert adcore.hessian(f, backend=backend)(x) == pytest.approx(d2, abs=1e-15)
        assert adcore.hessian(f)(x) == pytest.approx(d2, abs=1e-15)  # forward over reverse
        assert grad(f, backend)(0.5) == pytest.approx(grad(f, "numeric")(0.5), rel=1e-6)  # next call


@pytest.mark.parametrize("name, f", [("log", LOG_TRAP), ("sinc", SINC), ("xlogx", XLOGX)])
def test_where_trap_elementwise_over_an_array(backend, name, f):
    x = np.array([-1.0, 0.0, 0.5, 2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        jac = jacobian(f, backend)(x)
    expected = [grad(f, "symbolic")(v) for v in x]  # symbolic differentiates the Piecewise
    np.testing.assert_allclose(jac, np.diag(expected), rtol=1e-15, atol=0)


def test_where_with_a_broadcast_condition_zeroes_only_positions_no_copy_uses(backend):
    # x (2,) broadcast over the rows of c (2, 1): row 0 takes log(x) where c holds, row 1 the constant
    f = lambda c: lambda v: anp.sum(anp.where(c, anp.log(v), 1.0))  # noqa: E731
    with np.errstate(divide="ignore", invalid="ignore"):
        # no row takes log: x = 0 is never used, so 0 (an all-reduction of the zeros over the rows)
        np.testing.assert_array_equal(
            grad(f(np.array([[False], [False]])), backend)(np.array([0.0, 1.0])), [0, 0]
        )
        # row 0 takes log(x) for every x: 1/x, summed over the one row that uses it
        np.testing.assert_allclose(
            grad(f(np.array([[True], [False]])), backend)(np.array([0.5, 1.0])), [2, 1]
        )


@pytest.mark.parametrize("backend", ["reverse", "forward"])  # symbolic gives nan here (see the report)
def test_where_of_a_reduction_with_no_position_taken(backend):
    # where(sum(x) > 0, sum(log(x)), 0) at x = 0: the sum is never taken, so the gradient is 0
    f = lambda x: anp.where(anp.sum(x) > 0, anp.sum(anp.log(x)), 0.0)  # noqa: E731
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(grad(f, backend)(np.zeros(2)), [0.0, 0.0])
    np.testing.assert_allclose(grad(f, backend)(np.array([1.0, 2.0])), [1.0, 0.5])


def test_the_zeros_are_no_blanket_zero_times_inf_rule(backend):
    # d/dx sqrt(x)*sqrt(x) at 0 is 1 (it is x); a rule "0 * inf = 0" would give 0. Taken branch or
    # not, the answer is 1 or an honest nan, never 0.
    with np.errstate(divide="ignore", invalid="ignore"):
        for f in (
            lambda v: anp.sqrt(v) * anp.sqrt(v),
            lambda v: anp.where(v >= 0, anp.sqrt(v) * anp.sqrt(v), 0.0),
        ):
            g = grad(f, backend)(0.0)
            assert np.isnan(g) or g == 1.0


def test_a_branch_also_used_outside_where_keeps_its_infinite_derivative(backend):
    # where(x > 0, log x, 0) + log x at 0: the second term's derivative 1/x is inf, the first's 0
    with np.errstate(divide="ignore", invalid="ignore"):
        g = grad(lambda v: LOG_TRAP(v) + anp.log(v), backend)(0.0)
    assert np.isinf(g) or np.isnan(g)


# --- NaN in max and max_pool2d (issue 15, class 13) -------------------------------------------


@pytest.mark.parametrize("backend", ["reverse", "forward"])  # symbolic gives nan (docs/conventions.md)
@pytest.mark.parametrize("op", ["max", "min"])
def test_a_nan_in_a_max_reduction_takes_the_gradient_split_among_the_nans(backend, op):
    x = np.array([1.0, np.nan, 3.0, np.nan])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 0/0 on the way
        np.testing.assert_array_equal(grad(getattr(anp, op), backend)(x), [0.0, 0.5, 0.0, 0.5])
    assert grad(getattr(anp, op), backend)(np.array([1.0, 3.0]))[1] == (op == "max")  # next call


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_max_and_max_pool2d_treat_a_nan_alike(backend):
    # one 2x2 window per 2x2 block: max_pool2d's gradient equals max's over each window
    x = np.array([[1.0, np.nan, 5.0, 2.0], [3.0, 4.0, 2.0, 5.0]]).reshape(1, 1, 2, 4)
    pooled = grad(lambda v: anp.sum(adcore.ops.max_pool2d(v, kernel_size=2)), backend)(x)
    for cols in (slice(0, 2), slice(2, 4)):
        window = x[0, 0, :, cols]
        np.testing.assert_array_equal(pooled[0, 0, :, cols], grad(anp.max, backend)(window))
    # by hand: the NaN takes its window's gradient, the tied 5s of the other split theirs
    np.testing.assert_array_equal(pooled[0, 0], [[0.0, 1.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.5]])


# --- stability at ±1e3 ----------------------------------------------------------------------


@contextmanager
def strict_numpy():
    """Any NumPy warning is an error; overflow, division by zero and invalid operations raise.

    Underflow stays ignored (NumPy's default): exp(-1000) rounding to 0 is the correctly
    rounded result, and no finite-precision softmax or sigmoid avoids it.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", divide="raise", invalid="raise", under="ignore"):
            yield


def _sig(x):
    return 1 / (1 + np.exp(-x))


E1 = np.exp(-1.0)
BIG = np.array([1e3, -1e3, 0.0])
HIGH = np.array([1e3, 1e3 - 1])  # every entry large: naive exp overflows
LOW = np.array([-1e3, -1e3 - 1])  # every entry very negative: naive sum underflows to 0/0
PAIR = np.array([1 / (1 + E1), E1 / (1 + E1)])  # softmax of (a, a - 1) for any a


def _tol(dtype):
    # Inputs near ±1e3 are only known to |x|·eps (6e-5 in float32): results that cancel
    # against them (x - logsumexp(x)) are held to that absolute accuracy.
    return {"rtol": 1e-6, "atol": 1e3 * np.finfo(dtype).eps}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sigmoid_is_stable(backend, dtype):
    x = BIG.astype(dtype)
    with strict_numpy():
        y = anp.sigmoid(x)
        d = np.diag(jacobian(anp.sigmoid, backend)(x))
    np.testing.assert_array_equal(y, [1.0, 0.0, 0.5])
    np.testing.assert_array_equal(d, [0.0, 0.0, 0.25])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softplus_is_stable(backend, dtype):
    x = BIG.astype(dtype)
    with strict_numpy():
        y = anp.softplus(x)
        d = np.diag(jacobian(anp.softplus, backend)(x))
    np.testing.assert_allclose(y, [1e3, 0.0, np.log(2)], **_tol(dtype))
    np.testing.assert_allclose(d, [1.0, 0.0, 0.5], **_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmax_is_stable(backend, dtype):
    with strict_numpy():
        y = anp.softmax(BIG.astype(dtype))
        jac = jacobian(anp.softmax, backend)(BIG.astype(dtype))
        high, low = anp.softmax(HIGH.astype(dtype)), anp.softmax(LOW.astype(dtype))
        jac_low = jacobian(anp.softmax, backend)(LOW.astype(dtype))
    np.testing.assert_array_equal(y, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(jac, np.zeros((3, 3)))  # diag(s) - s sᵀ with s = e_0
    np.testing.assert_allclose(high, PAIR, **_tol(dtype))
    np.testing.assert_allclose(low, PAIR, **_tol(dtype))
    np.testing.assert_allclose(jac_low, np.diag(PAIR) - np.outer(PAIR, PAIR), **_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_log_softmax_is_stable(backend, dtype):
    with strict_numpy():
        y = anp.log_softmax(BIG.astype(dtype))
        jac = jacobian(anp.log_softmax, backend)(BIG.astype(dtype))
        low = anp.log_softmax(LOW.astype(dtype))
    np.testing.assert_array_equal(y, [0.0, -2e3, -1e3])
    np.testing.assert_array_equal(jac, np.eye(3) - np.outer(np.ones(3), [1.0, 0.0, 0.0]))
    np.testing.assert_allclose(low, np.log(PAIR), **_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_logsumexp_is_stable(backend, dtype):
    with strict_numpy():
        y = anp.logsumexp(BIG.astype(dtype))
        g = grad(anp.logsumexp, backend)(BIG.astype(dtype))
        high = anp.logsumexp(HIGH.astype(dtype))
        low = anp.logsumexp(LOW.astype(dtype))
        g_low = grad(anp.logsumexp, backend)(LOW.astype(dtype))
    assert y == 1e3
    np.testing.assert_array_equal(g, [1.0, 0.0, 0.0])  # the gradient is softmax
    np.testing.assert_allclose(high, 1e3 + np.log1p(E1), **_tol(dtype))
    np.testing.assert_allclose(low, -1e3 + np.log1p(E1), **_tol(dtype))
    np.testing.assert_allclose(g_low, PAIR, **_tol(dtype))


@pytest.mark.parametrize("op", ["sigmoid", "softplus", "softmax", "log_softmax", "logsumexp"])
def test_stable_ops_have_finite_second_derivatives_at_1e3(backend, op):
    f = getattr(anp, op)
    with strict_numpy():
        hess = jacobian(grad(lambda v: anp.sum(f(v)), backend), backend)(BIG)
    assert np.all(np.isfinite(hess))


# --- dtypes ---------------------------------------------------------------------------------

X32 = np.array([0.5, -1.0, 2.0], dtype=np.float32)

FLOAT32_OPS = {
    "sin": anp.sin,
    "exp": anp.exp,
    "tanh": anp.tanh,
    "abs": anp.abs,
    "sigmoid": anp.sigmoid,
    "softmax": anp.softmax,
    "log_softmax": anp.log_softmax,
    "x * 2.0": lambda x: x * 2.0,  # a Python float must not promote
    "maximum": lambda x: anp.maximum(x, np.float32(0.0)),
    "matmul": lambda x: anp.matmul(np.ones((2, 3), dtype=np.float32), x),
}


@pytest.mark.parametrize("name", list(FLOAT32_OPS))
def test_float32_in_float32_out(backend, name):
    f = FLOAT32_OPS[name]
    assert f(X32).dtype == np.float32
    assert jacobian(f, backend)(X32).dtype == np.float32


@pytest.mark.parametrize("name", ["sum", "logsumexp", "max", "mean"])
def test_float32_value_and_grad_of_reductions(backend, name):
    value, g = adcore.value_and_grad(getattr(anp, name), backend=backend)(X32)
    assert np.result_type(value) == np.float32
    assert g.dtype == np.float32


def test_float32_gradient_matches_float64_loosely(backend):
    def f(x):
        return anp.sum(anp.sin(x) * anp.exp(x))

    g32 = grad(f, backend)(X32)
    g64 = grad(f, backend)(X32.astype(np.float64))
    assert g32.dtype == np.float32 and g64.dtype == np.float64
    np.testing.assert_allclose(g32, g64, rtol=1e-5)


# --- integer inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize("x", [3, np.arange(3), np.int32(2), np.array([True, False])])
def test_integer_input_is_an_error(backend, x):
    with pytest.raises(InvalidInputError, match="dtype") as info:
        grad(lambda v: anp.sum(v * v), backend)(x)
    assert isinstance(info.value, TypeError)  # as JAX's TypeError for integer inputs to grad
    assert "float" in str(info.value)


def test_integer_argument_outside_argnums_is_fine(backend):
    assert grad(lambda x, n: x**n, backend, argnums=0)(2.0, 3) == 12.0


@pytest.mark.parametrize("op", ["sum", "max", "prod", "logsumexp"])  # NumPy's mean refuses it
def test_a_0d_reduction_over_axis_minus_1_is_the_identity(backend, op):
    # NumPy accepts axis -1 on a 0-d array (found by the fuzzer: reverse divided by ndim 0)
    f = lambda x: getattr(anp, op)(x * x, axis=-1)  # noqa: E731
    assert grad(f, backend)(np.array(1.5)) == 3.0
