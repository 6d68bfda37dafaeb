"""Jacobians by forward mode: one pass per chunk of input directions (seed 001: J·e_i per pass).

Checked against closed forms and the reverse backend for the two extreme shapes the seed
discusses (R -> R^m, forward's good case; R^n -> R, reverse's), for matrix shapes, for
every chunk size, for functions that ignore their input, for empty inputs, and for
tuple argnums, where the identity is split between the arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp

RNG = np.random.default_rng(3)


def forward(f, argnums=0, **options):
    return adcore.jacobian(f, argnums=argnums, backend="forward", **options)


def reverse(f, argnums=0):
    return adcore.jacobian(f, argnums=argnums, backend="reverse")


# --- the two extremes -------------------------------------------------------------------------------

M = 500
FREQS = np.linspace(0.1, 5.0, M)


def one_to_many(x):
    # R^1 -> R^500: y_k = sin(w_k x_0) · x_0²
    return anp.sin(FREQS * x[0]) * x[0] ** 2


def test_one_input_many_outputs_closed_form_and_reverse():
    x = np.array([0.8])
    jac = forward(one_to_many)(x)
    assert jac.shape == (M, 1)
    t = x[0]
    expected = FREQS * np.cos(FREQS * t) * t**2 + 2 * t * np.sin(FREQS * t)
    np.testing.assert_allclose(jac[:, 0], expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(jac, reverse(one_to_many)(x), rtol=1e-13, atol=1e-15)


def test_scalar_input_many_outputs():
    # a 0-d input: Jacobian of shape (500,)
    def f(t):
        return anp.exp(-FREQS * t)

    jac = forward(f)(0.3)
    assert jac.shape == (M,)
    np.testing.assert_allclose(jac, -FREQS * np.exp(-FREQS * 0.3), rtol=1e-14)
    np.testing.assert_allclose(jac, reverse(f)(0.3), rtol=1e-14)


N = 500
W = RNG.normal(size=N)


def many_to_one(x):
    # R^500 -> R: sum(w · x²) + log(sum(exp(x)))
    return anp.sum(W * x**2) + anp.log(anp.sum(anp.exp(x)))


def test_many_inputs_one_output_closed_form_and_reverse():
    x = RNG.normal(size=N)
    jac = forward(many_to_one)(x)
    assert jac.shape == (N,)
    expected = 2 * W * x + np.exp(x) / np.sum(np.exp(x))
    np.testing.assert_allclose(jac, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(jac, reverse(many_to_one)(x), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(jac, adcore.grad(many_to_one, backend="forward")(x), rtol=0)


def test_many_inputs_one_output_with_a_1_element_output():
    # output of shape (1,): Jacobian (1, 500)
    x = RNG.normal(size=N)
    jac = forward(lambda v: anp.reshape(many_to_one(v), (1,)))(x)
    assert jac.shape == (1, N)
    np.testing.assert_allclose(jac[0], reverse(many_to_one)(x), rtol=1e-12, atol=1e-15)


# --- matrix shapes ----------------------------------------------------------------------------------

P = RNG.normal(size=(4, 3))
Q = RNG.normal(size=(2, 5))


def matrix_function(x):
    # (3, 2) -> (4, 5): P @ tanh(x) @ Q, elementwise-squared
    return (P @ anp.tanh(x) @ Q) ** 2


def test_matrix_input_and_output_matches_reverse_and_closed_form():
    x = RNG.normal(size=(3, 2))
    jac = forward(matrix_function)(x)
    assert jac.shape == (4, 5, 3, 2)
    np.testing.assert_allclose(jac, reverse(matrix_function)(x), rtol=1e-12, atol=1e-14)
    # with Z = P tanh(x) Q the un-squared value: dY_kl / dx_ij = 2 Z_kl P_ki (1 - tanh² x_ij) Q_jl
    z = P @ np.tanh(x) @ Q
    expected = 2 * np.einsum("kl,ki,ij,jl->klij", z, P, 1 - np.tanh(x) ** 2, Q)
    np.testing.assert_allclose(jac, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((5, 4), (4, 3)), ((2, 5, 4), (4, 3)), ((4,), (4, 3)), ((5, 4), (4,)), ((5, 4), (2, 4, 3))],
)
def test_matmul_with_one_matrix_operand_matches_reverse(a_shape, b_shape):
    # one operand a single matrix: the tangents of the other go through one 2-d product (jvps/linalg.py)
    a, b = RNG.normal(size=a_shape), RNG.normal(size=b_shape)

    def f(a, b):
        return anp.sin(a) @ anp.cos(b)

    for jf, jr in zip(forward(f, argnums=(0, 1))(a, b), reverse(f, argnums=(0, 1))(a, b)):
        np.testing.assert_allclose(jf, jr, rtol=1e-13, atol=1e-14)


def test_matrix_to_matrix_transpose_is_a_permutation():
    x = RNG.normal(size=(2, 3))
    jac = forward(lambda m: anp.transpose(m))(x)
    assert jac.shape == (3, 2, 2, 3)
    expected = np.zeros((3, 2, 2, 3))
    for i in range(2):
        for j in range(3):
            expected[j, i, i, j] = 1.0
    np.testing.assert_array_equal(jac, expected)


def test_three_dimensional_input_matches_reverse():
    x = RNG.normal(size=(2, 3, 4))

    def f(t):
        return anp.sum(anp.sin(t) * t, axis=1)  # (2, 4)

    np.testing.assert_allclose(forward(f)(x), reverse(f)(x), rtol=1e-14)


# --- chunk_size ---------------------------------------------------------------------------------------

CHUNKED = [
    ("R^1->R^500", one_to_many, np.array([0.8])),
    ("R^500->R", many_to_one, RNG.normal(size=N)),
    ("(3,2)->(4,5)", matrix_function, RNG.normal(size=(3, 2))),
]


def _chunk_sizes(x):
    n = x.size
    return sorted({1, 2, 7, max(1, n - 1), n, n + 1, 10 * n})


@pytest.mark.parametrize("name, f, x", CHUNKED, ids=[c[0] for c in CHUNKED])
def test_chunk_size_gives_identical_results(name, f, x):
    default = forward(f)(x)
    for chunk in _chunk_sizes(x):
        jac = forward(f, chunk_size=chunk)(x)
        assert jac.shape == default.shape and jac.dtype == default.dtype
        np.testing.assert_array_equal(jac, default, err_msg=f"chunk_size={chunk}")


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 5, 6, 100])
def test_chunk_size_with_tuple_argnums_crossing_the_argument_boundary(chunk):
    # 2 + 4 = 6 directions: chunks of 3, 4, 5 straddle x and y
    x, y = RNG.normal(size=2), RNG.normal(size=(2, 2))

    def f(a, b):
        return anp.sin(a) * anp.sum(b**2) + b[0] * a[1]

    jx, jy = forward(f, argnums=(0, 1), chunk_size=chunk)(x, y)
    rx, ry = reverse(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(jx, rx, rtol=1e-14)
    np.testing.assert_allclose(jy, ry, rtol=1e-14)


def test_chunk_size_counts_the_passes():
    calls = []

    def f(x):
        calls.append(None)
        return anp.sin(x)

    x = RNG.normal(size=10)
    for chunk, passes in [(1, 10), (3, 4), (5, 2), (10, 1), (11, 1), (None, 1)]:
        calls.clear()
        forward(f, chunk_size=chunk)(x) if chunk else forward(f)(x)
        assert len(calls) == passes, chunk


@pytest.mark.parametrize("bad", [0, -3, 2.5, "4"])
def test_chunk_size_must_be_a_positive_int(bad):
    with pytest.raises(adcore.InvalidInputError, match="chunk_size"):
        forward(anp.sin, chunk_size=bad)(np.ones(3))


# --- functions that ignore their input ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "f, out_shape",
    [
        (lambda x: np.ones((4, 2)), (4, 2)),
        (lambda x: 3.0, ()),
        (lambda x: anp.sin(np.arange(5.0)), (5,)),
    ],
    ids=["ones(4,2)", "3.0", "sin(arange)"],
)
def test_constant_function_gives_zeros(f, out_shape, dtype):
    x = np.ones((3, 2), dtype=dtype)
    jac = forward(f)(x)
    assert jac.shape == out_shape + (3, 2)
    assert jac.dtype == dtype
    assert not np.any(jac)
    rev = reverse(f)(x)
    assert rev.shape == jac.shape and rev.dtype == jac.dtype


@pytest.mark.parametrize("chunk", [1, 4, 100])
def test_constant_function_gives_zeros_with_chunks(chunk):
    jac = forward(lambda x: np.ones(3), chunk_size=chunk)(np.ones(6))
    assert jac.shape == (3, 6) and jac.dtype == np.float64
    assert not np.any(jac)


def test_function_ignoring_one_of_two_arguments():
    x, y = RNG.normal(size=3), RNG.normal(size=(2, 2))
    jx, jy = forward(lambda a, b: a**2, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(jx, np.diag(2 * x), rtol=1e-15)
    assert jy.shape == (3, 2, 2) and not np.any(jy)


# --- empty arrays -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_empty_input_elementwise(dtype):
    x = np.zeros((0,), dtype=dtype)
    jac = forward(anp.sin)(x)
    assert jac.shape == (0, 0) and jac.dtype == dtype


def test_empty_input_to_a_reduction():
    # sum over nothing is 0 with a (0,)-shaped gradient
    x = np.zeros((0,))
    jac = forward(lambda v: anp.sum(v**2))(x)
    assert jac.shape == (0,) and jac.dtype == np.float64
    assert reverse(lambda v: anp.sum(v**2))(x).shape == (0,)


def test_empty_input_with_a_non_empty_output():
    x = np.zeros((2, 0))
    jac = forward(lambda v: anp.sum(v, axis=1) + 1.0)(x)
    assert jac.shape == (2, 2, 0)
    np.testing.assert_array_equal(jac, reverse(lambda v: anp.sum(v, axis=1) + 1.0)(x))


def test_empty_argument_next_to_a_non_empty_one():
    x, e = RNG.normal(size=3), np.zeros((0, 2))
    jx, je = forward(lambda a, b: a * anp.sum(b) + a**2, argnums=(0, 1))(x, e)
    np.testing.assert_allclose(jx, np.diag(2 * x), rtol=1e-15)
    assert je.shape == (3, 0, 2)


# --- tuple argnums --------------------------------------------------------------------------------------


def two_args(x, y):
    # x: (3,), y: (2, 4) -> (2, 3): out_ij = x_j² · sum_k y_ik + x_j · y_i0
    return x**2 * anp.sum(y, axis=1, keepdims=True) + x * y[:, :1]


def two_args_jacobians(x, y):
    s = y.sum(axis=1)
    jx = np.zeros((2, 3, 3))
    jy = np.zeros((2, 3, 2, 4))
    for i in range(2):
        for j in range(3):
            jx[i, j, j] = 2 * x[j] * s[i] + y[i, 0]
            jy[i, j, i, :] = x[j] ** 2
            jy[i, j, i, 0] += x[j]
    return jx, jy


@pytest.mark.parametrize("chunk", [None, 1, 5, 11])
def test_tuple_argnums_splits_the_identity(chunk):
    x, y = RNG.normal(size=3), RNG.normal(size=(2, 4))
    options = {} if chunk is None else {"chunk_size": chunk}
    jx, jy = forward(two_args, argnums=(0, 1), **options)(x, y)
    ex, ey = two_args_jacobians(x, y)
    assert jx.shape == (2, 3, 3) and jy.shape == (2, 3, 2, 4)
    np.testing.assert_allclose(jx, ex, rtol=1e-14)
    np.testing.assert_allclose(jy, ey, rtol=1e-14)
    rx, ry = reverse(two_args, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(jx, rx, rtol=1e-14)
    np.testing.assert_allclose(jy, ry, rtol=1e-14)


def test_tuple_argnums_in_reverse_order_and_single():
    x, y = RNG.normal(size=3), RNG.normal(size=(2, 4))
    ex, ey = two_args_jacobians(x, y)
    jy, jx = forward(two_args, argnums=(1, 0))(x, y)
    np.testing.assert_allclose(jx, ex, rtol=1e-14)
    np.testing.assert_allclose(jy, ey, rtol=1e-14)
    np.testing.assert_allclose(forward(two_args, argnums=1)(x, y), ey, rtol=1e-14)
    np.testing.assert_allclose(forward(two_args, argnums=-2)(x, y), ex, rtol=1e-14)


def test_tuple_argnums_with_mixed_dtypes_keeps_each():
    x = RNG.normal(size=3).astype(np.float32)
    y = RNG.normal(size=(2, 4))
    jx, jy = forward(two_args, argnums=(0, 1))(x, y)
    assert jx.dtype == np.float32 and jy.dtype == np.float64
    ex, ey = two_args_jacobians(x.astype(float), y)
    np.testing.assert_allclose(jx, ex, rtol=1e-5)
    np.testing.assert_allclose(jy, ey, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dtype_is_kept(dtype):
    x = RNG.normal(size=(3, 2)).astype(dtype)
    jac = forward(matrix_function)(x)
    assert jac.dtype == dtype
    rtol = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(jac, reverse(matrix_function)(x.astype(float)), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("outer_chunk", [None, 1, 2, 3])
@pytest.mark.parametrize("inner_chunk", [None, 1, 2, 4])
def test_chunked_jacobian_of_chunked_jacobian_is_the_hessian(outer_chunk, inner_chunk):
    # forward over forward with the directions split differently at each level
    a = RNG.normal(size=(5, 5))
    x = np.linspace(-1.0, 1.0, 5)

    def f(v):
        return 0.5 * (v @ (a @ v)) + anp.sum(anp.sin(v))

    inner = {} if inner_chunk is None else {"chunk_size": inner_chunk}
    outer = {} if outer_chunk is None else {"chunk_size": outer_chunk}
    hess = forward(forward(f, **inner), **outer)(x)
    np.testing.assert_allclose(hess, (a + a.T) / 2 - np.diag(np.sin(x)), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize(
    "shapes", [((3,), (5, 3)), ((5, 3), (3,)), ((4, 5, 3), (5, 3)), ((2,), (2,)), ((5, 2), (5, 3))]
)
def test_cross_jacobians_equal_reverse_mode_for_broadcast_3_and_2_vectors(shapes):
    """cross's JVP is one batched cross for 3-vectors (the tangent lifted under the output), else einsum."""
    rng = np.random.default_rng(0)
    a, b = (rng.normal(size=s) for s in shapes)
    for k in (0, 1):
        forward = adcore.jacobian(np.cross, argnums=k, backend="forward")(a, b)
        np.testing.assert_array_equal(forward, adcore.jacobian(np.cross, argnums=k, backend="reverse")(a, b))
