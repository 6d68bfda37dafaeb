"""Hessian patterns by second-order tracing: exact on the classic structures, symmetric, a superset
of adcore.hessian's non-zeros on random programs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adcore

N = 7
EYE = np.eye(N, dtype=bool)
BAND = np.eye(N, k=1, dtype=bool) | np.eye(N, k=-1, dtype=bool)
ARROW = np.zeros((N, N), dtype=bool)
ARROW[0, :] = ARROW[:, 0] = True
CROSS = np.zeros((N, N), dtype=bool)
CROSS[:3, 3:] = CROSS[3:, :3] = True


def hessian_pattern(f, x, local=False):
    h = adcore.plugins.get_registry().backend("sparsity").hessian_pattern(f, (x,), 0, local=local)
    assert h.shape == (x.size, x.size) and h.dtype == bool
    dense = h.toarray()
    np.testing.assert_array_equal(dense, dense.T)
    return dense


def hessian_nonzeros(f, x):
    """Where the Hessian of sum(f) (the union over f's elements, for a generic f) is non-zero."""
    return adcore.hessian(lambda x: np.sum(f(x)))(x).reshape(x.size, x.size) != 0


@pytest.mark.parametrize(
    "f, want",
    [
        (lambda x: np.sum(x**2), EYE),
        (lambda x: np.sum(x[1:] * x[:-1]), BAND),
        (lambda x: x[0] * np.sum(x), ARROW),
        (lambda x: np.sum(np.sin(x[:-1] + x[1:])), EYE | BAND),
        (lambda x: np.sum(x[:3]) * np.sum(x[3:]), CROSS),
        (lambda x: np.sum(x * x), EYE),
        (lambda x: np.sum(x) * np.sum(x**2), np.ones((N, N), dtype=bool)),
        (lambda x: 3.0 * x + np.sum(x), np.zeros((N, N), dtype=bool)),
    ],
    ids=[
        "squares",
        "neighbour-products",
        "arrowhead",
        "sin-of-pairs",
        "product-of-two-sums",
        "x-times-x",
        "dense",
        "linear",
    ],
)
def test_exact_hessian_patterns(f, want):
    x = np.random.default_rng(3).uniform(0.5, 1.5, N)
    got = hessian_pattern(f, x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, hessian_nonzeros(f, x))


def test_a_vector_output_gives_the_union_of_its_elements_hessians():
    x = np.random.default_rng(4).random(N)
    got = hessian_pattern(lambda x: np.stack([x[0] * x[1], x[2] ** 3, x[4]]), x)
    want = np.zeros((N, N), dtype=bool)
    want[0, 1] = want[1, 0] = want[2, 2] = True
    np.testing.assert_array_equal(got, want)


def test_local_hessian_pattern_keeps_the_branch():
    x = np.array([-1.0, 2.0, -3.0, 4.0])
    f = lambda x: np.sum(np.maximum(x, 0.0) ** 2)  # noqa: E731
    np.testing.assert_array_equal(hessian_pattern(f, x), np.eye(4, dtype=bool))
    np.testing.assert_array_equal(hessian_pattern(f, x, local=True), np.diag(x > 0))


def test_a_dense_op_gives_its_inputs_every_pair():
    x = np.random.default_rng(5).random(6) + np.arange(6)
    got = hessian_pattern(lambda x: np.linalg.det(x[:4].reshape(2, 2)) + x[5] ** 2, x)
    want = np.zeros((6, 6), dtype=bool)
    want[:4, :4] = True
    want[5, 5] = True
    assert not (hessian_nonzeros(lambda x: np.linalg.det(x[:4].reshape(2, 2)) + x[5] ** 2, x) & ~got).any()
    assert not (got & ~want).any()


UNARY = [np.sin, np.exp, lambda v: v**2, lambda v: 2.0 * v, np.tanh]
STEPS = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(-2, 2)), min_size=1, max_size=5)


def random_program(steps):
    def f(x):
        y = x
        for kind, which, shift in steps:
            if kind == 0:
                y = UNARY[which](y)
            elif kind == 1:
                y = y * np.roll(x, shift)
            elif kind == 2:
                y = y + np.sum(y[: which + 1])
            elif kind == 3:
                y = np.roll(y, shift) - y / (2.0 + x**2)
            elif kind == 4:
                y = (y.reshape(2, 4) @ np.arange(16.0).reshape(4, 4)).reshape(-1)
            else:
                y = np.concatenate([y[: shift % 4] * y[-1], y[shift % 4 :]])
        return y

    return f


@settings(max_examples=30, deadline=None, derandomize=True)
@given(STEPS, st.integers(0, 2**16))
def test_random_programs_hessian_pattern_holds_every_nonzero(steps, seed):
    f = random_program(steps)
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, 8)
    got, want = hessian_pattern(f, x), hessian_nonzeros(f, x)
    assert not (want & ~got).any(), f"the Hessian pattern misses {np.argwhere(want & ~got)[:5]}"


def test_a_long_program_and_shared_terms():
    x = np.random.default_rng(6).random(5)

    def chain(x):
        y = x
        for _ in range(2000):
            y = np.sin(y) + np.cos(y) * 0.5
        return np.sum(y[1:] * y[:-1])

    got = hessian_pattern(chain, x)
    np.testing.assert_array_equal(
        got, np.eye(5, dtype=bool) | np.eye(5, k=1, dtype=bool) | np.eye(5, k=-1, dtype=bool)
    )


@pytest.mark.parametrize(
    "f",
    [
        lambda v: v[:3] @ v[3:],  # a zero factor cuts the first derivative, not the cross second one
        lambda v: np.sum(v[:3] ** 2 * v[3:]),
        lambda v: np.sum(np.einsum("i,i->i", v[:3], v[3:]) ** 2),
    ],
)
def test_local_hessian_pattern_keeps_what_a_zero_factor_cuts_from_the_first_derivative(f):
    x = np.array([1.0, 2.0, 3.0, 0.0, 0.0, 0.0])
    want = hessian_nonzeros(f, x)
    got = hessian_pattern(f, x, local=True)
    assert want.any() and not (want & ~got).any()


@pytest.mark.parametrize(
    "f",
    [
        lambda x: (x[1:] - x[:-1] ** 2) @ (x[1:] - x[:-1] ** 2),  # a least-squares objective as r @ r
        lambda x: np.einsum("i,i->", x, x),
        lambda x: np.sum(np.reshape(x[:6], (2, 3)) @ np.reshape(x[1:7], (3, 2))),
        lambda x: np.sum(np.cross(x[:6].reshape(2, 3), x[1:7].reshape(2, 3)) ** 2),
    ],
    ids=["r@r", "einsum-dot", "matmul", "cross"],
)
def test_a_contraction_pairs_only_the_elements_that_meet_in_one_term(f):
    """r @ r's Hessian pattern is sum(r**2)'s, not every pair of r's elements."""
    x = np.random.default_rng(3).normal(size=N + 1)
    np.testing.assert_array_equal(hessian_pattern(f, x), hessian_nonzeros(f, x))
