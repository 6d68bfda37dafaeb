"""The reductions of issue 17 (adcore/ops/reductions.py): var, std, ptp, average, nansum, nanmean,
median, quantile, percentile, sum/mean's dtype= and where=, amax/amin. Derivatives against
closed forms and torch on every backend, at second order, at ties and NaNs; and the refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidValueError, UnsupportedFunctionError

BACKENDS = ["reverse", "forward", "symbolic", "numeric"]
RULE_BACKENDS = ["reverse", "forward", "symbolic"]  # the ones that must follow the tie conventions
RNG = np.random.default_rng(17)
X = RNG.normal(size=(3, 4))


def grad(f, backend, *args, argnums=0):
    return adcore.grad(f, argnums=argnums, backend=backend)(*args)


def close(backend: str) -> dict:
    """numeric estimates: looser than the exact backends' rounding."""
    return {"rtol": 1e-6, "atol": 1e-8} if backend == "numeric" else {"rtol": 1e-12, "atol": 1e-12}


# --- var and std: closed forms ----------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_and_std_gradients_are_the_closed_forms(backend, ddof):
    # d var / dx = 2 (x - mean) / (n - ddof); d std / dx = (x - mean) / ((n - ddof) std), per row
    n = X.shape[1]
    centred = X - X.mean(axis=1, keepdims=True)
    weights = np.array([1.0, -2.0, 0.5])
    dvar = grad(lambda x: anp.sum(anp.var(x, axis=1, ddof=ddof) * weights), backend, X)
    np.testing.assert_allclose(dvar, weights[:, None] * 2 * centred / (n - ddof), **close(backend))
    std = X.std(axis=1, ddof=ddof, keepdims=True)
    dstd = grad(lambda x: anp.sum(np.std(x, axis=1, ddof=ddof) * weights), backend, X)
    np.testing.assert_allclose(dstd, weights[:, None] * centred / ((n - ddof) * std), **close(backend))


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic"])
def test_var_hessian_is_the_centring_matrix(backend):
    # var(x) = |x - mean|^2 / (n - ddof): its Hessian is 2 (I - 1/n) / (n - ddof)
    x = RNG.normal(size=5)
    hessian = adcore.hessian(lambda v: anp.var(v, ddof=1), backend=backend)(x)
    np.testing.assert_allclose(hessian, 2 * (np.eye(5) - 1 / 5) / 4, atol=1e-12)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_std_of_equal_values_has_derivative_zero_not_nan(backend):
    # std is |.|-like at a constant input; the convention is abs'(0) = 0 (docs/conventions.md)
    x = np.full(4, 1.5)
    np.testing.assert_array_equal(grad(lambda v: anp.std(v), backend, x), np.zeros(4))
    rows = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    g = grad(lambda v: anp.sum(anp.std(v, axis=1)), backend, rows)
    centred = rows[1] - rows[1].mean()
    np.testing.assert_allclose(g, [np.zeros(3), centred / (3 * rows[1].std())], atol=1e-12)


def test_var_and_std_against_torch():
    torch = pytest.importorskip("torch")
    t = torch.tensor(X, requires_grad=True)
    (torch.var(t, dim=0, correction=1).sum() + 3 * torch.std(t, dim=1, correction=0).sum()).backward()
    f = lambda x: anp.sum(anp.var(x, axis=0, ddof=1)) + 3 * anp.sum(anp.std(x, axis=1))  # noqa: E731
    for backend in ["reverse", "forward", "symbolic"]:
        np.testing.assert_allclose(grad(f, backend, X), t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("op", [anp.var, anp.std])
def test_ddof_at_or_past_the_count_is_refused_naming_op_and_ddof(op):
    for call in (
        lambda: op(X, axis=0, ddof=3),
        lambda: adcore.grad(lambda x: anp.sum(op(x, axis=0, ddof=4)))(X),
    ):
        with pytest.raises(InvalidValueError) as info:
            call()
        assert f"op {op.name!r}" in str(info.value) and "ddof=" in str(info.value)


# --- ptp and amax/amin: ties split ------------------------------------------------------------


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_ptp_splits_the_gradient_among_ties_of_max_and_of_min(backend):
    x = np.array([3.0, 1.0, 3.0, 1.0, 2.0])
    np.testing.assert_allclose(grad(lambda v: anp.ptp(v), backend, x), [0.5, -0.5, 0.5, -0.5, 0.0])
    np.testing.assert_allclose(
        grad(lambda v: np.ptp(v), backend, X), _one_hot(X.argmax()) - _one_hot(X.argmin())
    )


def _one_hot(flat_index: int) -> np.ndarray:
    out = np.zeros(X.size)
    out[flat_index] = 1
    return out.reshape(X.shape)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_amax_and_amin_are_max_and_min(backend):
    assert anp.amax is anp.max and anp.amin is anp.min
    g = grad(lambda v: np.amax(v) - 2 * np.amin(v), backend, X)
    np.testing.assert_array_equal(g, _one_hot(X.argmax()) - 2 * _one_hot(X.argmin()))


# --- average -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_average_gradients_by_values_and_by_weights(backend):
    # avg = sum(a w) / sum(w): d/da = w / sum(w), d/dw = (a - avg) / sum(w)
    w = RNG.uniform(0.5, 2.0, size=X.shape)
    da, dw = adcore.grad(
        lambda a, w: anp.sum(np.average(a, axis=1, weights=w)), argnums=(0, 1), backend=backend
    )(X, w)
    total = w.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(da, w / total, **close(backend))
    np.testing.assert_allclose(dw, (X - np.average(X, axis=1, weights=w)[:, None]) / total, **close(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_average_with_one_dimensional_weights_along_the_axis(backend):
    w = np.array([1.0, 2.0, 3.0])
    dw = grad(lambda w: anp.sum(np.average(X, axis=0, weights=w)), backend, w)
    avg = np.average(X, axis=0, weights=w)
    np.testing.assert_allclose(dw, ((X - avg) / w.sum()).sum(axis=1), **close(backend))
    da = grad(lambda a: anp.sum(adcore.ops.average(a, w, axis=0)), backend, X)  # the op itself
    np.testing.assert_allclose(da, np.broadcast_to((w / w.sum())[:, None], X.shape), **close(backend))


def test_np_average_without_weights_is_the_mean_and_returned_is_refused():
    for average in (np.average, anp.average):  # anp.average has NumPy's signature
        g = adcore.grad(lambda x: anp.sum(average(x, axis=0)))(X)  # noqa: B023
        np.testing.assert_allclose(g, np.full(X.shape, 1 / 3))
        g = adcore.grad(lambda x: average(x, None, X[0] ** 2 + 1))(X[0])  # noqa: B023
        np.testing.assert_allclose(g, (X[0] ** 2 + 1) / np.sum(X[0] ** 2 + 1))
    with pytest.raises(InvalidValueError, match="returned=True"):
        adcore.grad(lambda x: anp.sum(np.average(x, weights=np.ones(4), axis=1, returned=True)[0]))(X)


# --- sum and mean: dtype= and where= -----------------------------------------------------------


MASK = X > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_where_masks_the_derivative(backend):
    g = grad(lambda x: anp.sum(np.sum(x**2, axis=0, where=MASK)), backend, X)
    np.testing.assert_allclose(g, np.where(MASK, 2 * X, 0.0), **close(backend))
    counts = MASK.sum(axis=1, keepdims=True)
    g = grad(lambda x: anp.sum(np.mean(x, axis=1, where=MASK)), backend, X[counts[:, 0] > 0])
    np.testing.assert_allclose(g, np.where(MASK, 1 / counts, 0.0)[counts[:, 0] > 0], **close(backend))


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_mean_of_a_slice_masked_out_whole_has_derivative_zero(backend):
    # NumPy's value there is nan (a RuntimeWarning); the value does not depend on x: derivative 0
    mask = np.array([[True, False], [False, False]])
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's, for the nan value
        jac = adcore.jacobian(lambda v: anp.mean(v, axis=1, where=mask), backend=backend)(x)
    assert not np.isnan(jac).any()
    np.testing.assert_array_equal(jac, [[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]])


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic"])
def test_float_dtype_computes_in_it_and_the_gradient_keeps_the_input_dtype(backend):
    g = grad(lambda x: anp.sum(np.sum(anp.sin(x), dtype=np.float32)), backend, X)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, np.cos(X), rtol=1e-6)


@pytest.mark.parametrize("dtype", [int, np.int32, bool])
def test_a_dtype_that_is_not_float_is_refused_naming_op_and_dtype(dtype):
    for op in (anp.sum, anp.mean, anp.cumsum):
        with pytest.raises(InvalidValueError) as info:
            adcore.grad(lambda x: anp.sum(op(x, dtype=dtype)))(X)  # noqa: B023
        assert f"op {op.name!r}" in str(info.value) and "dtype=" in str(info.value)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_a_complex_dtype_is_a_complex_result_and_a_float_dtype_of_complex_x_is_refused(backend):
    for op in (anp.sum, anp.mean, anp.cumsum):
        g = grad(lambda x: anp.sum(anp.real(op(x, dtype=np.complex128) * (1 - 2j))), backend, X)  # noqa: B023
        np.testing.assert_allclose(g, grad(lambda x: anp.sum(op(x)), backend, X), rtol=1e-12)  # noqa: B023
        with pytest.raises(InvalidValueError, match="imaginary part"):
            adcore.grad(lambda x: anp.sum(op(x * 1j, dtype=np.float64)), backend=backend)(X)  # noqa: B023


# --- nansum, nanmean ---------------------------------------------------------------------------


NANS = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [2.0, 5.0, np.nan]])


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_nan_reductions_have_derivative_zero_at_nans_never_nan(backend):
    numbers = ~np.isnan(NANS)
    w = np.array([1.0, 2.0, -3.0])
    g = grad(lambda x: anp.sum(np.nansum(x, axis=1) * w), backend, NANS)
    np.testing.assert_array_equal(g, np.where(numbers, w[:, None], 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "Mean of empty slice", for the nan value
        jac = adcore.jacobian(lambda x: np.nanmean(x, axis=1), backend=backend)(NANS)
    expected = np.zeros((3, 3, 3))
    for row in (0, 2):
        expected[row, row] = numbers[row] / numbers[row].sum()
    np.testing.assert_array_equal(jac, expected)  # the all-NaN row: 0, not nan


def test_nansum_against_torch():
    torch = pytest.importorskip("torch")
    t = torch.tensor(NANS, requires_grad=True)
    (torch.nansum(t * t, dim=0) * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    g = adcore.grad(lambda x: anp.sum(anp.nansum(x * x, axis=0) * np.array([1.0, 2.0, 3.0])))(NANS)
    numbers = ~np.isnan(
        NANS
    )  # torch's backward sends nan to the nan entries (2 * nan * 1); adcore's is 0 there
    np.testing.assert_array_equal(g[numbers], t.grad.numpy()[numbers])
    assert np.isnan(t.grad.numpy()[~numbers]).all() and (g[~numbers] == 0).all()


# --- median, quantile, percentile --------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_median_derivative_is_the_interpolation_weights(backend):
    x = np.array([4.0, 1.0, 3.0, 2.0])  # the middle two, 2 and 3, half each
    np.testing.assert_allclose(grad(lambda v: np.median(v), backend, x), [0, 0, 0.5, 0.5], **close(backend))
    x = np.array([5.0, 1.0, 3.0])
    np.testing.assert_allclose(grad(lambda v: np.median(v), backend, x), [0, 0, 1], **close(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_quantile_methods_weigh_their_order_statistics(backend):
    x = np.array([0.3, 2.0, -1.0, 1.2, 0.7])  # sorted slots: -1 (2), 0.3 (0), 0.7 (4), 1.2 (3), 2 (1)
    # linear q = 0.3: virtual slot 1.2, so 0.8 of slot 1 (element 0) and 0.2 of slot 2 (element 4)
    expected = {
        "linear": [0.8, 0, 0, 0, 0.2],
        "lower": [1, 0, 0, 0, 0],
        "higher": [0, 0, 0, 0, 1],
        "nearest": [1, 0, 0, 0, 0],
        "midpoint": [0.5, 0, 0, 0, 0.5],
    }
    for method, weights in expected.items():
        g = grad(lambda v: np.quantile(v, 0.3, method=method), backend, x)  # noqa: B023
        np.testing.assert_allclose(g, weights, atol=1e-7, err_msg=method)
    g = grad(lambda v: np.percentile(v, 30.0), backend, x)
    np.testing.assert_allclose(g, expected["linear"], atol=1e-7)


def test_quantile_with_array_q_and_axes_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.normal(size=(3, 5, 2))
    q = np.array([0.1, 0.5, 0.85])
    cot = RNG.normal(size=(3, 3, 2))
    t = torch.tensor(x, requires_grad=True)
    (torch.quantile(t, torch.tensor(q), dim=1) * torch.tensor(cot)).sum().backward()
    f = lambda v: anp.sum(np.quantile(v, q, axis=1) * cot)  # noqa: E731
    for backend in ["reverse", "forward", "symbolic"]:
        np.testing.assert_allclose(grad(f, backend, x), t.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_median_of_ties_follows_the_stable_sort(backend):
    # three equal values: the median is the one of stable rank 1, the middle one
    np.testing.assert_array_equal(grad(lambda v: np.median(v), backend, np.full(3, 2.0)), [0, 1, 0])
    # 1, 1 (ranks 0 and 1), 5: the median is the second 1
    np.testing.assert_array_equal(grad(lambda v: np.median(v), backend, np.array([1.0, 5.0, 1.0])), [0, 0, 1])


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic"])
def test_quantile_second_derivative_is_zero(backend):
    x = RNG.normal(size=6)
    np.testing.assert_array_equal(adcore.hessian(lambda v: np.quantile(v, 0.4), backend=backend)(x), 0)


def test_an_unsupported_quantile_method_is_refused_naming_it():
    with pytest.raises(InvalidValueError, match="method='inverted_cdf'"):
        adcore.grad(lambda v: np.quantile(v, 0.5, method="inverted_cdf"))(X)
    with pytest.raises(UnsupportedFunctionError, match="weights"):
        adcore.grad(lambda v: np.quantile(v, 0.5, weights=np.ones(X.shape)))(X)


def test_a_where_mask_computed_from_a_traced_value_is_refused_typed_on_symbolic():
    # symbolic's x > 0 is a sympy condition with no number: the mask cannot pick elements
    from adcore.errors import UnsupportedByBackendError

    for reduce in (np.sum, np.mean):
        with pytest.raises(UnsupportedByBackendError):
            adcore.grad(lambda x: reduce(x**2, where=x > 0), backend="symbolic")(X)  # noqa: B023
        g = adcore.grad(lambda x: reduce(x**2, where=x > 0), backend="reverse")(X)  # noqa: B023
        assert np.all(g[X <= 0] == 0) and np.all(g[X > 0] != 0)


def test_median_of_an_odd_count_against_torch():
    # torch.median takes the lower middle of an even count (NumPy the mean of the two): odd here
    torch = pytest.importorskip("torch")
    x = RNG.normal(size=(4, 5))
    cot = RNG.normal(size=4)
    t = torch.tensor(x, requires_grad=True)
    (torch.median(t, dim=1).values * torch.tensor(cot)).sum().backward()
    for backend in RULE_BACKENDS:
        g = grad(lambda v: anp.sum(np.median(v, axis=1) * cot), backend, x)
        np.testing.assert_array_equal(g, t.grad.numpy())


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float32, np.float64, np.complex128])
def test_sum_of_a_plain_array_is_numpys_sum_exactly(dtype):
    """sum's impl calls np.add.reduce for an ndarray (np.sum's own call, without its wrapper): the same
    value, dtype, type and shape as np.sum, with axis, keepdims and where=; a NumPy scalar takes np.sum."""
    from adcore.ops import reductions

    for shape in [(), (0,), (3,), (2, 3)]:
        x = (RNG.normal(size=shape) * 3).astype(dtype)
        masks = [True] + ([RNG.random(shape) > 0.5] if shape else [])
        for axis in [None, 0, -1, (0, -1)] if len(shape) == 2 else [None]:
            for keepdims, where in [(k, w) for k in (False, True) for w in masks]:
                want = np.sum(x, axis=axis, keepdims=keepdims, where=where)
                got = reductions.sum(x, axis=axis, keepdims=keepdims, where=where)
                assert type(got) is type(want) and got.dtype == want.dtype and np.shape(got) == np.shape(want)
                assert np.array_equal(got, want)
    scalar = np.float64(2.5)
    assert reductions.sum(scalar) == 2.5 and type(reductions.sum(scalar)) is np.float64
