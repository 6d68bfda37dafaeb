"""Plain NumPy code differentiates as written; `adcore.numpy` is the ops, NumPy for everything else."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp

X = np.array([0.5, -1.0, 2.0])
A = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]])


# --- NumPy calls on tracers inside a differentiated function -----------------------------


def test_sum_of_squared_sin():
    g = adcore.grad(lambda x: np.sum(np.sin(x) ** 2))(X)
    np.testing.assert_allclose(g, 2 * np.sin(X) * np.cos(X))  # d/dx sin^2 x = 2 sin x cos x


def test_maximum_with_zero():
    x = np.array([-1.5, 0.7, 2.0])
    g = adcore.grad(lambda x: np.sum(np.maximum(x, 0)))(x)
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0])  # relu' = [x > 0] away from 0


def test_maximum_tie_splits_the_gradient():
    g = adcore.grad(lambda x: np.sum(np.maximum(x, 0.0)))(np.array([0.0]))
    np.testing.assert_array_equal(g, [0.5])  # DESIGN.md: maximum/minimum ties split equally


def test_sum_over_axis_0():
    jac = adcore.jacobian(lambda x: np.sum(x, axis=0))(A)
    assert jac.shape == (3, 2, 3)
    expected = np.zeros((3, 2, 3))  # d (sum_i x_ij) / d x_kl = [j == l]
    for j in range(3):
        expected[j, :, j] = 1.0
    np.testing.assert_array_equal(jac, expected)


def test_concatenate():
    a, b = X, np.array([3.0, -4.0])
    ga, gb = adcore.grad(lambda a, b: np.sum(np.concatenate([a, b]) ** 2), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, 2 * a)  # d/dv sum(v^2) = 2v, split back into the pieces
    np.testing.assert_allclose(gb, 2 * b)


def test_concatenate_with_a_constant_and_axis():
    jac = adcore.jacobian(lambda x: np.concatenate((x, np.zeros((2, 1))), axis=1))(A)
    assert jac.shape == (2, 4, 2, 3)
    np.testing.assert_array_equal(jac[:, :3], np.eye(6).reshape(2, 3, 2, 3))  # identity on x's block
    np.testing.assert_array_equal(jac[:, 3], 0.0)  # the constant column


def test_transpose_attribute():
    w = np.arange(6.0).reshape(3, 2)
    g = adcore.grad(lambda x: np.sum(x.T * w))(A)
    np.testing.assert_array_equal(g, w.T)  # d/dx sum(x^T * w) = w^T


def test_slice():
    g = adcore.grad(lambda x: np.sum(x[1:] ** 2))(X)
    np.testing.assert_allclose(g, [0.0, 2 * X[1], 2 * X[2]])


def test_comparison_gives_a_plain_bool_mask():
    masks = []

    def f(x):
        mask = x > 0
        masks.append(mask)
        return np.sum(x * mask)

    g = adcore.grad(f)(X)
    assert type(masks[0]) is np.ndarray
    assert masks[0].dtype == bool
    np.testing.assert_array_equal(g, [1.0, 0.0, 1.0])  # the mask is a constant factor


def test_where_with_a_comparison():
    g = adcore.grad(lambda x: np.sum(np.where(x > 0, x**2, -x)))(X)
    np.testing.assert_allclose(g, np.where(X > 0, 2 * X, -1.0))


def test_shape_and_zeros_like():
    seen = {}

    def f(x):
        seen["shape"] = np.shape(x)
        zeros = np.zeros_like(x)
        seen["zeros"] = zeros
        return np.sum((x + zeros) ** 2)

    g = adcore.grad(f)(A)
    assert seen["shape"] == (2, 3)
    assert type(seen["zeros"]) is np.ndarray
    np.testing.assert_array_equal(seen["zeros"], np.zeros((2, 3)))
    np.testing.assert_allclose(g, 2 * A)


def test_mean_and_size():
    g = adcore.grad(lambda x: np.sum(x) / np.size(x) + np.mean(x))(X)
    np.testing.assert_allclose(g, np.full(3, 2 / 3))  # two means, each d/dx_i = 1/n


def test_exp_log_and_sqrt_compose():
    x = np.array([0.5, 1.0, 4.0])
    g = adcore.grad(lambda x: np.sum(np.log(np.exp(x)) + np.sqrt(x)))(x)
    np.testing.assert_allclose(g, 1.0 + 0.5 / np.sqrt(x))


def test_matmul_and_reshape():
    w = np.array([1.0, 2.0])
    g = adcore.grad(lambda x: np.sum(np.reshape(x, (3, 2)) @ w))(A)
    # sum_i (r @ w)_i = sum_i sum_j r_ij w_j, so d/dr = w on every row, reshaped back
    np.testing.assert_allclose(g, np.tile(w, 3).reshape(2, 3))


def test_stack():
    g = adcore.grad(lambda x: np.sum(np.stack([x, 2 * x, 3 * x])))(X)
    np.testing.assert_allclose(g, np.full(3, 6.0))


def test_abs_at_zero_is_zero():
    g = adcore.grad(lambda x: np.sum(np.abs(x)))(np.array([-1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(g, [-1.0, 0.0, 1.0])  # DESIGN.md: abs'(0) = 0


# --- adcore.numpy -------------------------------------------------------------------------


def test_adcore_numpy_names_are_the_ops():
    assert anp.sin is adcore.ops.sin
    assert anp.sum is adcore.ops.sum
    assert anp.matmul is adcore.ops.matmul


def test_adcore_numpy_aliases():
    assert anp.absolute is adcore.ops.abs
    assert anp.true_divide is adcore.ops.divide
    assert anp.amax is adcore.ops.max
    assert anp.amin is adcore.ops.min


def test_adcore_numpy_falls_through_to_numpy():
    assert anp.float32 is np.float32
    assert anp.zeros is np.zeros
    assert anp.pi == np.pi
    np.testing.assert_array_equal(anp.zeros(2), np.zeros(2))


def test_adcore_numpy_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = anp.no_such_name


def test_adcore_numpy_functions_differentiate():
    g = adcore.grad(lambda x: anp.sum(anp.tanh(x)))(X)
    np.testing.assert_allclose(g, 1 - np.tanh(X) ** 2)  # tanh' = 1 - tanh^2


def test_adcore_numpy_on_plain_arrays_is_numpy():
    np.testing.assert_allclose(anp.sin(X), np.sin(X))
    np.testing.assert_allclose(anp.sum(A, axis=0), np.sum(A, axis=0))


def test_adcore_numpy_finds_plugin_ops(register_plugin):
    class Plugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec("triple_np_demo", lambda x: 3 * x))

    register_plugin(Plugin(), "np_demo")
    assert anp.triple_np_demo is adcore.ops.triple_np_demo
    assert anp.triple_np_demo(2.0) == 6.0


# --- lists of traced values, stacks of one array, einsum's sublists (issue 32, class 11) ----------

BACKENDS = ("reverse", "forward", "symbolic")


@pytest.mark.parametrize("backend", BACKENDS)
def test_adcore_numpy_functions_take_lists_of_traced_values(backend):
    x = np.array([3.0, 4.0, 2.0])
    cases = [
        (lambda x: anp.mean([x[0], x[1]]), [0.5, 0.5, 0.0]),
        (lambda x: anp.sum((x[0], 2.0, x[2])), [1.0, 0.0, 1.0]),
        (lambda x: anp.linalg.norm([x[0], x[1]]), [0.6, 0.8, 0.0]),  # 3-4-5
        (lambda x: anp.sum(anp.append([x[0]], x)), [2.0, 1.0, 1.0]),
        (lambda x: anp.dot([x[0], x[1]], x[1:]), [4.0, 3.0 + 2.0, 4.0]),
        (lambda x: anp.trapezoid([x[0], x[1], 1.0]), [0.5, 1.0, 0.0]),
        (lambda x: anp.average([x[0], x[1], x[2]], weights=[1.0, 2.0, 1.0]), [0.25, 0.5, 0.25]),
        (lambda x: anp.split([x[0], x[1], x[2], 1.0], 2)[1][0], [0.0, 0.0, 1.0]),
        (lambda x: anp.slogdet([[x[0], 1.0], [1.0, x[2]]])[1], [2.0 / 5.0, 0.0, 3.0 / 5.0]),  # det 5
    ]
    for f, expected in cases:
        np.testing.assert_allclose(adcore.grad(f, backend=backend)(x), expected, rtol=1e-15)
    # a list that is the inputs themselves (multi_dot's, concatenate's) is not stacked
    m = np.ones((1, 3))
    g = adcore.grad(lambda x: anp.sum(anp.linalg.multi_dot([m, anp.diag(x), x])), backend=backend)(x)
    np.testing.assert_allclose(g, 2 * x, rtol=1e-15)
    g = adcore.grad(lambda x: anp.sum(anp.concatenate([x, [x[0]]]) ** 2), backend=backend)(x)
    np.testing.assert_allclose(g, 2 * x * [2.0, 1.0, 1.0], rtol=1e-15)
    value = adcore.value_and_grad(lambda x: anp.linalg.norm([x[0], x[1]]), backend=backend)(x)[0]
    assert value == np.linalg.norm([3.0, 4.0])


@pytest.mark.parametrize("name", ["vstack", "hstack", "column_stack", "dstack"])
@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_stacking_a_single_array_iterates_over_its_rows_as_numpy(name, shape):
    stack = getattr(np, name)
    x = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    expected = stack(x)
    weights = np.arange(expected.size, dtype=float).reshape(expected.shape)
    # the stack moves elements: each output's weight goes back to the element it came from
    sources = stack(np.arange(x.size).reshape(shape)).ravel()
    pulled_back = np.zeros(x.size)
    pulled_back[sources] = weights.ravel()
    assert np.array_equal(adcore.vjp(stack, x)[0], expected)
    out, tangent = adcore.jvp(stack, (x,), (x,), backend="forward")
    assert np.array_equal(out, expected) and np.array_equal(tangent, expected)  # linear: J x = f(x)
    for backend in ("reverse", "forward", "symbolic"):
        g = adcore.grad(lambda x: np.sum(stack(x) * weights), backend=backend)(x)
        np.testing.assert_array_equal(g, pulled_back.reshape(shape))


def test_stacking_a_0d_traced_array_is_refused_by_name_then_works():
    with pytest.raises(adcore.InvalidValueError, match="vstack: a 0-d array"):
        adcore.grad(lambda x: np.sum(anp.vstack(x[0])))(X)
    with pytest.raises(adcore.UnsupportedFunctionError, match="0-d"):  # NumPy's dispatch takes len()
        adcore.grad(lambda x: np.sum(np.vstack(x[0])))(X)
    assert adcore.grad(lambda x: np.sum(np.vstack(x)))(X).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("backend", [*BACKENDS, "numeric"])
def test_einsum_sublist_form_is_numpys_value_and_derivative(backend):
    b = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])

    def f(a):
        return np.einsum(a, [0, 1], b, [1, 2], [0, 2])

    expected = f(A)
    assert np.array_equal(adcore.jvp(f, (A,), (A,), backend=backend)[0], expected)
    np.testing.assert_allclose(adcore.jvp(f, (A,), (A,), backend=backend)[1], A @ b, rtol=1e-8)  # linear
    g = adcore.grad(lambda a: anp.einsum(a, [Ellipsis, 0], [Ellipsis]).sum() + f(a).sum(), backend=backend)(A)
    np.testing.assert_allclose(g, np.broadcast_to(1.0 + b.sum(axis=1), A.shape), rtol=1e-8)
