"""adcore/ops/numpy_functions.py: NumPy functions autograd users write, on traced values. Each
traced value is NumPy's bit for bit (np.array_equal on reverse and forward, symbolic where the
function needs no concrete value), each derivative agrees with the numeric backend or an analytic
value, and what is refused is refused by name, the next call working."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.errors import (
    AdcoreError,
    ComplexValueError,
    InvalidValueError,
    TracerConversionError,
    UnsupportedFunctionError,
)

TRACING = ("reverse", "forward")
RNG = np.random.default_rng(32)


def traced_value(f, x, backend):
    """f(x) as a backend's trace computed it."""
    if backend == "reverse":
        return adcore.vjp(f, x)[0]
    return adcore.jvp(f, (x,), (np.ones_like(x),), backend=backend)[0]


def assert_numpys_value_and_numeric_derivative(f, x, backends=TRACING, rtol=1e-6, atol=1e-8):
    expected = f(x)
    numeric = adcore.jacobian(f, backend="numeric")(x)
    for backend in backends:
        value = traced_value(f, x, backend)
        assert np.array_equal(value, expected, equal_nan=True), (backend, value, expected)
        assert np.result_type(value) == np.result_type(expected), backend
        jac = adcore.jacobian(f, backend=backend)(x)
        np.testing.assert_allclose(jac, numeric, rtol=rtol, atol=atol, err_msg=backend)


# --- np.trapezoid -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "f",
    [
        lambda y: np.trapezoid(y),
        lambda y: np.trapezoid(y**2, dx=0.3),
        lambda y: np.trapezoid(np.sin(y), x=np.array([0.0, 0.1, 0.5, 0.6, 1.7, 2.0])),
        lambda y: np.trapezoid(y, x=np.cumsum(y**2)),  # traced x too
        lambda y: np.trapezoid(y.reshape(2, 3), axis=0),
        lambda y: np.trapezoid(y.reshape(2, 3), x=np.array([0.0, 1.0, 3.0])),
    ],
)
def test_trapezoid_is_numpys_and_differentiates_on_every_backend(f):
    y = RNG.normal(size=6)
    assert_numpys_value_and_numeric_derivative(f, y, backends=(*TRACING, "symbolic"))


def test_trapezoid_of_ones_has_the_trapezoid_weights_as_gradient():
    for backend in (*TRACING, "symbolic"):
        g = adcore.grad(lambda y: np.trapezoid(y, dx=2.0), backend=backend)(np.ones(4))
        np.testing.assert_array_equal(g, [1.0, 2.0, 2.0, 1.0])


def test_trapezoid_in_float32_keeps_float32():
    y = RNG.normal(size=5).astype(np.float32)
    for backend in TRACING:
        value = traced_value(lambda y: np.trapezoid(y * y), y, backend)
        assert value.dtype == np.float32 and np.array_equal(value, np.trapezoid(y * y))


# --- np.interp ----------------------------------------------------------------------------------

XP = np.array([-1.0, 0.0, 0.5, 2.0])
FP = np.array([1.0, -1.0, 3.0, 2.5])


def test_interp_in_x_is_numpys_and_its_slope():
    # left of xp, each interval, right of xp; away from the knots
    x = np.array([-2.0, -0.3, 0.2, 1.1, 1.9, 3.0])
    assert_numpys_value_and_numeric_derivative(lambda x: np.interp(x, XP, FP), x)
    slopes = np.array([0.0, -2.0, 8.0, -1 / 3, -1 / 3, 0.0])
    for backend in TRACING:
        np.testing.assert_allclose(
            adcore.elementwise_grad(lambda x: np.interp(x, XP, FP), backend=backend)(x), slopes
        )


def test_interp_at_the_data_points_is_numpys_value_exactly():
    x = np.concatenate([XP, [np.nan, -1.0000001, 2.0000001]])
    for backend in TRACING:
        assert np.array_equal(
            traced_value(lambda x: np.interp(x, XP, FP), x, backend), np.interp(x, XP, FP), equal_nan=True
        )


def test_interp_in_fp_xp_left_and_right():
    x = np.array([-3.0, -0.7, 0.1, 0.9, 1.4, 5.0])
    assert_numpys_value_and_numeric_derivative(lambda fp: np.interp(x, XP, fp), FP)
    assert_numpys_value_and_numeric_derivative(lambda xp: np.interp(x, xp, FP), XP)
    assert_numpys_value_and_numeric_derivative(
        lambda lr: anp.interp(x, XP, FP, left=lr[0], right=lr[1]), np.array([7.0, -4.0])
    )
    # the weights of fp are the hat functions: at x = 0.1 between 0 and 0.5, 0.8 and 0.2
    g = adcore.grad(lambda fp: np.interp(0.1, XP, fp))(FP)
    np.testing.assert_allclose(g, [0.0, 0.8, 0.2, 0.0])


def test_interp_with_an_infinite_fp_and_repeated_xp_is_numpys_value_without_warnings():
    xp, fp = np.array([0.0, 1.0, 1.0, 2.0]), np.array([np.inf, 1.0, 5.0, 3.0])
    x = np.array([-1.0, 1.5, 0.5, 1.0, 3.0])
    with np.errstate(all="raise"):  # NumPy's interp warns of nothing here; neither does the trace
        for backend in TRACING:
            assert np.array_equal(
                traced_value(lambda x: np.interp(x, xp, fp), x, backend), np.interp(x, xp, fp)
            )
    # reverse: the untaken branches (inf slopes, a zero width) send nothing back
    g = adcore.elementwise_grad(lambda x: np.interp(x, xp, fp))(x)
    np.testing.assert_array_equal(g, [0.0, -2.0, -np.inf, 0.0, 0.0])


def test_interp_is_numpys_bit_for_bit_on_random_data():
    rng = np.random.default_rng(7)
    for trial in range(40):
        dtype = np.float32 if trial % 3 == 0 else np.float64
        xp = np.sort(rng.normal(size=int(rng.integers(2, 8))))
        fp = rng.normal(size=xp.size)
        x = np.concatenate([rng.normal(size=6) * 2, xp[:2]]).astype(dtype)  # and two data points
        for backend in TRACING:
            for f in (
                lambda x, xp=xp, fp=fp: np.interp(x, xp, fp),
                lambda x, xp=xp, fp=fp: np.interp(x, xp, fp, period=1.5),
            ):
                assert np.array_equal(traced_value(f, x, backend), f(x)), (trial, backend)


def test_interp_with_a_period_and_with_one_data_point():
    x = np.array([-5.0, 0.3, 2.2, 7.9])
    xp, fp = np.array([0.0, 1.0, 3.5, 2.0]), np.array([2.0, 1.0, 0.5, 3.0])
    assert_numpys_value_and_numeric_derivative(lambda x: np.interp(x, xp, fp, period=4.0), x)
    assert_numpys_value_and_numeric_derivative(lambda fp: np.interp(x, xp, fp, period=4.0), fp)
    assert_numpys_value_and_numeric_derivative(lambda x: np.interp(x, [1.0], [2.0]) * x, x)


def test_interp_in_float32_computes_in_float64_as_numpy():
    x = np.array([0.1, 0.7], dtype=np.float32)
    for backend in TRACING:
        value = traced_value(lambda x: np.interp(x, XP, FP), x, backend)
        assert value.dtype == np.float64 and np.array_equal(value, np.interp(x, XP, FP))
        assert adcore.grad(lambda x: np.interp(x, XP, FP).sum(), backend=backend)(x).dtype == np.float32


def test_interp_refuses_a_traced_period_and_complex_fp_by_name_then_works():
    x = np.array([0.2, 0.4])
    with pytest.raises(UnsupportedFunctionError, match="period is a traced value"):
        adcore.grad(lambda x: np.interp(x, XP, FP, period=x[0] + 3.0).sum())(x)
    with pytest.raises(ComplexValueError, match="complex fp"):
        adcore.grad(lambda x: np.interp(x, XP, FP + 1j).real.sum())(x)
    # symbolic has no number to find the interval with: a typed refusal
    with pytest.raises(AdcoreError):
        adcore.grad(lambda x: np.interp(x, XP, FP).sum(), backend="symbolic")(x)
    np.testing.assert_allclose(adcore.grad(lambda x: np.interp(x, XP, FP).sum())(x), [8.0, 8.0])


# --- np.gradient --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "f",
    [
        lambda y: np.gradient(y**2),
        lambda y: np.gradient(y, 0.3),
        lambda y: np.gradient(np.sin(y), edge_order=2),
        lambda y: np.gradient(y, np.array([0.0, 0.5, 1.5, 1.6, 3.0, 3.2])),  # uneven coordinates
        lambda y: np.gradient(y**3, np.array([0.0, 0.5, 1.5, 1.6, 3.0, 3.2]), edge_order=2),
        lambda y: np.gradient(y, np.array([0.0, 2.0, 4.0, 6.0, 8.0, 10.0])),  # even coordinates: a scalar
        lambda y: np.stack(np.gradient(y.reshape(2, 3))),
        lambda y: np.gradient(y.reshape(3, 2), 0.5, axis=0),
        lambda y: np.gradient(y.reshape(3, 2), axis=1),
    ],
)
def test_gradient_is_numpys_and_differentiates_on_every_backend(f):
    y = RNG.normal(size=6)
    assert_numpys_value_and_numeric_derivative(f, y, backends=(*TRACING, "symbolic"))


def test_gradient_in_float32_with_float64_coordinates_is_numpys_float32():
    y = RNG.normal(size=5).astype(np.float32)
    coordinates = np.array(
        [0.0, 1.0, 2.0, 3.0, 4.0]
    )  # even: np.float64 spacing, float64 arithmetic, stored float32
    for backend in TRACING:
        value = traced_value(lambda y: np.gradient(y, coordinates, edge_order=2), y, backend)
        expected = np.gradient(y, coordinates, edge_order=2)
        assert value.dtype == np.float32 and np.array_equal(value, expected)


def test_gradient_refuses_traced_spacing_and_short_axes_by_name_then_works():
    y = np.arange(4.0) ** 2
    with pytest.raises(UnsupportedFunctionError, match="varargs is a traced value"):
        adcore.grad(lambda h: np.gradient(y, h[0]).sum())(np.array([0.5]))
    with pytest.raises(InvalidValueError, match="at least"):
        adcore.grad(lambda y: np.gradient(y[:2], edge_order=2).sum())(y)
    # d/dy of sum(gradient(y)) with unit spacing: the end rows' weights
    np.testing.assert_array_equal(adcore.grad(lambda y: np.gradient(y).sum())(y), [-1.5, 0.5, -0.5, 1.5])


# --- np.linspace --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "f",
    [
        lambda e: np.linspace(e[0], e[1], 7),
        lambda e: np.linspace(e[0], e[1], 6, endpoint=False),
        lambda e: np.linspace(e[0], 2.0, 5),
        lambda e: np.linspace(-1.0, e[1], 1),
        lambda e: np.linspace(e[:2], e[2:], 4),  # array endpoints
        lambda e: np.linspace(e[:2], e[2:], 4, axis=1),
        lambda e: np.linspace(e[0], e[1], 5, retstep=True)[1] * e[2],
    ],
)
def test_linspace_with_traced_endpoints_is_numpys(f):
    e = np.array([0.3, 2.9, -1.0, 4.0])
    assert_numpys_value_and_numeric_derivative(f, e, backends=(*TRACING, "symbolic"))


def test_linspace_derivatives_are_the_interpolation_weights():
    for backend in (*TRACING, "symbolic"):
        jac = adcore.jacobian(lambda e: np.linspace(e[0], e[1], 5), backend=backend)(np.array([1.0, 3.0]))
        t = np.linspace(0, 1, 5)
        np.testing.assert_allclose(jac, np.stack([1 - t, t], axis=1), atol=1e-15)


def test_linspace_float32_and_an_integer_dtype_refused_then_works():
    e = np.array([0.1, 0.7], dtype=np.float32)
    for backend in TRACING:
        value = traced_value(lambda e: np.linspace(e[0], e[1], 9), e, backend)
        assert value.dtype == np.float32 and np.array_equal(value, np.linspace(e[0], e[1], 9))
    with pytest.raises(UnsupportedFunctionError, match="dtype=int64"):
        adcore.grad(lambda e: np.linspace(e[0], e[1], 3, dtype=np.int64).sum())(e)
    assert adcore.grad(lambda e: np.linspace(e[0], e[1], 3).sum())(e).tolist() == [1.5, 1.5]


# --- np.partition and np.unwrap -----------------------------------------------------------------


@pytest.mark.parametrize(
    "f",
    [
        lambda a: np.partition(a, 3),
        lambda a: np.partition(a, [1, 5]),
        lambda a: np.partition(a.reshape(2, 4), 1, axis=0),
        lambda a: np.partition(a.reshape(2, 4), 2),
        lambda a: np.partition(a.reshape(2, 4), 0, axis=None),
        lambda a: np.partition(np.round(a), 4),  # ties
    ],
)
def test_partition_is_numpys_arrangement_and_routes_each_derivative_home(f):
    a = RNG.normal(size=8) * 3
    assert_numpys_value_and_numeric_derivative(f, a)


def test_partition_of_many_ties_is_numpys_bit_for_bit():
    a = np.array([0.0, -0.0, 1.0, 0.0, -0.0, 1.0, -0.0, 0.0])
    for backend in TRACING:
        value = traced_value(lambda a: np.partition(a + 0.0 * a, 3), a, backend)
        assert value.tobytes() == np.partition(a + 0.0 * a, 3).tobytes()


def test_unwrap_is_numpys_and_its_derivative_is_the_identity():
    p = np.cumsum(RNG.uniform(-2.5, 2.5, size=9))
    wrapped = (p + np.pi) % (2 * np.pi) - np.pi
    for f in (
        lambda w: np.unwrap(w),
        lambda w: np.unwrap(w, period=4.0),
        lambda w: np.unwrap(w.reshape(3, 3), axis=0),
    ):
        assert_numpys_value_and_numeric_derivative(f, wrapped)
    for backend in TRACING:
        np.testing.assert_array_equal(adcore.jacobian(np.unwrap, backend=backend)(wrapped), np.eye(9))


def test_unwrap_refuses_a_traced_period_by_name_then_works():
    with pytest.raises(UnsupportedFunctionError, match="period is a traced value"):
        adcore.grad(lambda w: np.unwrap(w, period=w[0] + 5).sum())(np.array([1.0, 2.0]))
    assert adcore.grad(lambda w: np.unwrap(w).sum())(np.array([1.0, 2.0])).tolist() == [1.0, 1.0]


# --- comparisons: plain answers, as NumPy's ----------------------------------------------------


def test_isclose_allclose_iscomplex_isreal_give_plain_answers_on_traced_values():
    x = np.array([1.0, 2.0, 3.0])
    seen = {}

    def f(x):
        seen["isclose"] = np.isclose(x, [1.0, 2.5, 3.0])
        seen["allclose"] = np.allclose(x, x + 1e-12)
        seen["iscomplex"] = np.iscomplex(x)
        seen["isreal"] = np.isreal(x)
        return anp.sum(x * x)

    for backend in TRACING:
        np.testing.assert_array_equal(adcore.grad(f, backend=backend)(x), 2 * x)
        assert seen["isclose"].tolist() == [True, False, True] and seen["allclose"] is True
        assert seen["iscomplex"].tolist() == [False] * 3 and seen["isreal"].tolist() == [True] * 3


def test_real_if_close_drops_a_tiny_imaginary_part_as_numpy_does():
    z = np.array([1.0 + 1e-20j, 2.0 - 1e-20j])

    def f(v):
        c = v * z
        r = np.real_if_close(c)
        assert r.dtype == np.real_if_close(z).dtype  # float64: NumPy's choice
        return anp.sum(r * r)

    for backend in TRACING:
        np.testing.assert_allclose(adcore.grad(f, backend=backend)(np.array(2.0)), 2 * 2.0 * (1 + 4))
    big = np.array([1.0 + 1.0j])
    assert (
        adcore.jvp(lambda v: np.real_if_close(v * big), (np.array(1.0),), (np.array(1.0),))[0].dtype.kind
        == "c"
    )


# --- anp.full, anp.full_like; np.copyto refused -----------------------------------------------


def test_full_and_full_like_with_a_traced_fill_value():
    x = np.array([1.5, -2.0])
    for backend in (*TRACING, "symbolic"):
        np.testing.assert_array_equal(
            adcore.grad(lambda x: anp.sum(anp.full((2, 3), x[0])), backend=backend)(x), [6.0, 0.0]
        )
        np.testing.assert_array_equal(
            adcore.grad(lambda x: anp.sum(anp.full_like(np.zeros((4,)), x[1])), backend=backend)(x),
            [0.0, 4.0],
        )
        value = traced_value(lambda x: anp.full((2, 2), x), x, backend)
        assert np.array_equal(value, np.full((2, 2), x))
    assert np.array_equal(anp.full(3, 2.0), np.full(3, 2.0))  # plain: NumPy's


def test_np_full_like_of_a_traced_fill_value_is_refused_with_the_way_out_then_works():
    x = np.array([1.5, -2.0])
    with pytest.raises(TracerConversionError, match=r"np\.full\(shape, x\), anp\.full"):
        adcore.grad(lambda x: np.sum(np.full(3, x[0])))(x)
    with pytest.raises(UnsupportedFunctionError, match=r"anp\.full_like"):
        adcore.grad(lambda x: np.sum(np.full_like(np.zeros(3), x[0])))(x)
    assert adcore.grad(lambda x: np.sum(anp.full_like(x, x[0])))(x).tolist() == [2.0, 0.0]


# --- astype(int) -------------------------------------------------------------------------------


def test_astype_int_on_a_traced_value_shows_the_fix_in_one_line():
    for backend in TRACING:
        with pytest.raises(TracerConversionError) as caught:
            adcore.grad(lambda x: anp.sum(x.astype(int) * x), backend=backend)(np.array([1.5]))
        message = str(caught.value)
        assert "adcore.concrete(x).astype(int64)" in message and "\n" not in message
        fixed = adcore.grad(lambda x: anp.sum(adcore.concrete(x).astype(int) * x), backend=backend)(
            np.array([1.5])
        )
        assert fixed.tolist() == [1.0]


# --- sparsity: patterns of the compositions ----------------------------------------------------


def test_sparsity_patterns_global_for_pure_compositions_local_where_numpy_picks_by_value():
    x = np.array([0.3, 1.2, -0.5, 2.0, 0.1])
    tridiagonal = np.eye(5, k=1) + np.eye(5, k=-1)
    tridiagonal[0, 0] = tridiagonal[-1, -1] = 1  # one-sided differences at the ends
    np.testing.assert_array_equal(adcore.jacobian_sparsity(np.gradient)(x).toarray(), tridiagonal)
    moved = np.partition(x, 2)  # a permutation: one entry per row, where the element came from
    expected = (moved[:, None] == x[None, :]).astype(int)
    np.testing.assert_array_equal(
        adcore.jacobian_sparsity(lambda y: np.partition(y, 2), local=True)(x).toarray(), expected
    )
    with pytest.raises(adcore.ValueDependentError, match="local=True"):
        adcore.jacobian_sparsity(lambda y: np.partition(y, 2))(x)
    assert adcore.jacobian_sparsity(np.gradient)(x).nnz == 10  # the next call works


# --- NumPy's own refusals, typed --------------------------------------------------------------


@pytest.mark.parametrize(
    "f, says",
    [
        (lambda x: np.partition(x, 9), "numpy.partition on traced values: kth"),
        (lambda x: np.gradient(x, axis=3), "numpy.gradient on traced values: axis 3"),
        (lambda x: np.unwrap(x, axis=2), "numpy.unwrap on traced values: axis 2"),
        (lambda x: np.linspace(x[0], x[1], -1), "number of samples, -1"),
        (lambda x: np.interp(x, [0.0, 1.0], [1.0]), "not of the same length"),
    ],
)
def test_bad_arguments_are_invalid_value_errors_naming_the_function_then_it_works(f, says):
    x = np.arange(4.0)
    for backend in TRACING:
        with pytest.raises(InvalidValueError, match=says):
            adcore.grad(lambda x: anp.sum(f(x)), backend=backend)(x)
    np.testing.assert_array_equal(adcore.grad(lambda x: anp.sum(np.partition(x, 2)))(x), np.ones(4))


# --- second derivatives: the compositions nest ---------------------------------------------------


@pytest.mark.parametrize(
    "f",
    [
        lambda y: np.trapezoid(y**3),
        lambda y: np.sum(np.gradient(y**2) ** 2),
        lambda y: np.sum(np.linspace(y[0], y[1], 4) ** 3),
        lambda y: np.sum(np.interp([0.1, 0.7], [0.0, 0.5, 1.0, 2.0], y) ** 2),
        lambda y: np.sum(np.partition(y, 2)[:2] ** 3),
        lambda y: np.sum(np.unwrap(y * 3) ** 2),
    ],
)
def test_hessians_agree_with_differences_of_the_gradient(f):
    y = np.array([0.3, 1.2, -0.5, 2.0])
    numeric = adcore.jacobian(adcore.grad(f), backend="numeric")(y)
    np.testing.assert_allclose(adcore.hessian(f)(y), numeric, atol=1e-8)
