"""The sparsity tracer: global patterns exact on the structured programs sparse Jacobians are for,
a superset on random programs, local vs global, what a global trace refuses to read."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity.trace import SparsityTracer
from hypothesis import given, settings
from hypothesis import strategies as st

import adcore
from adcore.core import _stack

RNG = np.random.default_rng(7)


def backend():
    return adcore.plugins.get_registry().backend("sparsity")


def pattern(f, x, *args, local=False):
    return backend().jacobian_pattern(f, (x, *args), 0, local=local).toarray()


def nonzeros(f, x, *args):
    """Where forward mode's Jacobian is non-zero, as (out.size, x.size)."""
    jac = adcore.jacobian(f, backend="forward")(x, *args)
    out_size = int(np.size(f(x, *args)))
    return np.asarray(jac).reshape(out_size, x.size) != 0


def assert_exact(f, x, *args):
    got, want = pattern(f, x, *args), nonzeros(f, x, *args)
    assert got.dtype == bool and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# --- exact global patterns ----------------------------------------------------------------------


def elementwise_program(x):
    return np.tanh(x) * np.exp(-(x**2)) + np.sqrt(np.abs(x) + 1.0) / (2.0 + np.sin(x))


def tridiagonal_slices(x):
    inner = x[:-2] - 2 * x[1:-1] + x[2:]
    return np.concatenate([x[:1] ** 2, inner + x[1:-1] ** 3, x[-1:] ** 2])


def tridiagonal_roll(x):  # periodic: the corners too
    return np.roll(x, 1) - 2 * x + np.roll(x, -1) + np.sin(x)


def laplacian_2d(x, shape=(6, 7)):
    u = np.pad(x.reshape(shape), 1)
    return (-4 * u[1:-1, 1:-1] + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]).reshape(-1)


def block_diagonal(x, block=4):
    blocks = x.reshape(-1, block)
    return (blocks * np.sum(blocks**2, axis=-1, keepdims=True)).reshape(-1)


def arrowhead(x):
    return x[0] * x + np.sum(x)


@pytest.mark.parametrize(
    "f, n",
    [
        (elementwise_program, 9),
        (tridiagonal_slices, 10),
        (tridiagonal_roll, 10),
        (laplacian_2d, 42),
        (block_diagonal, 12),
        (arrowhead, 8),
    ],
)
def test_global_patterns_are_exact_on_structured_programs(f, n):
    assert_exact(f, RNG.uniform(0.5, 1.5, n))


def test_known_patterns_analytically():
    n = 6
    tri = pattern(tridiagonal_roll, RNG.random(n))
    want = np.eye(n, dtype=bool) | np.eye(n, k=1, dtype=bool) | np.eye(n, k=-1, dtype=bool)
    want[0, -1] = want[-1, 0] = True
    np.testing.assert_array_equal(tri, want)
    arrow = pattern(arrowhead, RNG.random(n))
    np.testing.assert_array_equal(arrow, np.ones((n, n), dtype=bool))  # + sum(x) fills it
    head = pattern(lambda x: x[0] * x + x, RNG.random(n))
    want = np.eye(n, dtype=bool)
    want[:, 0] = True
    np.testing.assert_array_equal(head, want)


def test_block_diagonal_has_its_blocks_only():
    got = pattern(block_diagonal, RNG.random(12))
    np.testing.assert_array_equal(got, np.kron(np.eye(3), np.ones((4, 4))).astype(bool))


def test_a_function_of_one_element_and_a_constant_output():
    x = RNG.random(5)
    got = pattern(lambda x: np.stack([x[3] * 2.0, np.cos(x[1])]), x)
    np.testing.assert_array_equal(got, np.eye(5, dtype=bool)[[3, 1]])
    constant = pattern(lambda x: np.ones(3), x)
    assert constant.shape == (3, 5) and not constant.any()


def test_a_2d_argument_and_a_matrix_output_in_flat_c_order():
    x = RNG.random((3, 4))
    got = pattern(lambda x: x.T @ np.diag([1.0, 0.0, 2.0]), x)
    jac = adcore.jacobian(lambda x: x.T @ np.diag([1.0, 0.0, 2.0]), backend="forward")(x)
    np.testing.assert_array_equal(got, jac.reshape(12, 12) != 0)


# --- the superset property on random programs -------------------------------------------------

UNARY = [np.sin, np.exp, np.tanh, lambda v: v**2, lambda v: np.abs(v) + 1.0]
STEPS = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 4), st.integers(-2, 2)), min_size=1, max_size=6)


def random_program(steps):
    """A program of a few ops chosen by `steps`: elementwise, shifted products, reductions,
    rolls, where on comparisons, maximum; every value stays of the input's size (12)."""

    def f(x):
        y = x
        for kind, which, shift in steps:
            if kind == 0:
                y = UNARY[which](y)
            elif kind == 1:
                y = y * np.roll(x, shift)
            elif kind == 2:
                y = y + np.sum(y.reshape(3, 4), axis=which % 2, keepdims=True).reshape(-1)[: y.size].repeat(
                    y.size // (3 if which % 2 else 4)
                )
            elif kind == 3:
                y = np.where(x > 0.5, y, np.roll(y, shift))
            elif kind == 4:
                y = np.maximum(y, np.roll(x, shift))
            elif kind == 5:
                y = np.concatenate([y[shift % 3 :], y[: shift % 3] * 2.0])
            elif kind == 6:
                y = (y.reshape(3, 4) @ np.eye(4)[:, ::-1]).reshape(-1)
            else:
                y = y - np.max(y.reshape(4, 3), axis=1).repeat(3)
        return y

    return f


@settings(max_examples=40, deadline=None, derandomize=True)
@given(STEPS, st.integers(0, 2**16))
def test_random_programs_global_and_local_patterns_hold_every_nonzero(steps, seed):
    f = random_program(steps)
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, 12)
    want = nonzeros(f, x)
    glob, local = pattern(f, x), pattern(f, x, local=True)
    assert not (want & ~glob).any(), f"the global pattern misses {np.argwhere(want & ~glob)[:5]}"
    assert not (want & ~local).any(), f"the local pattern misses {np.argwhere(want & ~local)[:5]}"
    assert not (local & ~glob).any(), "the local pattern has an entry the global one lacks"


# --- local vs global ------------------------------------------------------------------------


X = np.array([-1.0, 2.0, -3.0, 4.0, 0.5])


@pytest.mark.parametrize(
    "f",
    [lambda x: np.where(x > 0, x, 0.0), lambda x: np.maximum(x, 0.0)],
    ids=["where", "maximum"],
)
def test_local_keeps_the_branch_taken_global_keeps_both(f):
    glob, local = pattern(f, X), pattern(f, X, local=True)
    np.testing.assert_array_equal(glob, np.eye(5, dtype=bool))
    np.testing.assert_array_equal(local, np.diag(X > 0))
    np.testing.assert_array_equal(local, nonzeros(f, X))


def test_where_between_two_traced_values():
    f = lambda x: np.where(x > 0, x[::-1], x)  # noqa: E731
    glob, local = pattern(f, X), pattern(f, X, local=True)
    np.testing.assert_array_equal(glob, np.eye(5, dtype=bool) | np.eye(5, dtype=bool)[::-1])
    np.testing.assert_array_equal(local, nonzeros(f, X))


def test_max_local_depends_on_the_argmax_only():
    glob, local = pattern(np.max, X), pattern(np.max, X, local=True)
    np.testing.assert_array_equal(glob, np.ones((1, 5), dtype=bool))
    np.testing.assert_array_equal(local, np.eye(5, dtype=bool)[[3]])


def branchy(x):
    if x[0] > 0:
        return x**2
    return np.sin(x[:2])


def test_an_if_on_a_traced_value_needs_local():
    with pytest.raises(adcore.ValueDependentError, match="local=True"):
        pattern(branchy, X)
    np.testing.assert_array_equal(pattern(branchy, X, local=True), np.eye(5, dtype=bool)[:2])
    np.testing.assert_array_equal(pattern(branchy, -X, local=True), np.eye(5, dtype=bool))


@pytest.mark.parametrize(
    "f",
    [
        lambda x: x[np.argmax(x)],
        lambda x: x[x.argmax()],
        lambda x: x * float(x[0]),
        lambda x: x * x[0].item(),
        lambda x: x[: int(x[0])],
        lambda x: x[x > 0],
        lambda x: x * np.asarray(x > 0, dtype=float),
        lambda x: np.where(np.array(x > 0), x, 0.0),
        lambda x: x @ np.diag(np.asarray(x > 0, dtype=float)),
        lambda x: x[np.sum(x > 0)],
        lambda x: x[np.nonzero(x > 0)],
        lambda x: x * (x > 0).any(),
        lambda x: x if np.all(x > 0) else -x,
        lambda x: x * np.count_nonzero(x > 0),
        lambda x: x if 2.0 in x else -x,
        lambda x: np.sum(x, where=x > 0),
    ],
    ids=[
        "argmax-index",
        "argmax-method",
        "float",
        "item",
        "int-slice",
        "mask",
        "asarray",
        "array-in-where",
        "asarray-in-matmul",
        "count-as-index",
        "nonzero",
        "any",
        "np-all",
        "count-nonzero",
        "in",
        "where-param",
    ],
)
def test_deciding_by_a_traced_value_is_value_dependent_globally(f):
    with pytest.raises(adcore.ValueDependentError):
        pattern(f, X)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.where((x > 0) & (x < 3), x, -x),
        lambda x: np.where(~(x > 0), x, 0.0),
        lambda x: x * (x > 0),
        lambda x: x * (x > 0).astype(x.dtype),
        lambda x: x * np.logical_or(x > 0, np.isnan(x)),
        lambda x: x * np.sum(x > 0),
        lambda x: x * (x[0] > x[1]),
    ],
    ids=["and", "invert", "times-mask", "astype", "logical-or", "count", "0-d"],
)
def test_a_comparison_used_as_a_value_keeps_every_branch_globally(f):
    np.testing.assert_array_equal(pattern(f, X), np.eye(5, dtype=bool))
    local, want = pattern(f, X, local=True), nonzeros(f, X)
    assert not (want & ~local).any() and not (local & ~np.eye(5, dtype=bool)).any()


def test_argmax_index_works_locally():
    np.testing.assert_array_equal(
        pattern(lambda x: x[np.argmax(x)], X, local=True), np.eye(5, dtype=bool)[[3]]
    )


def test_float_of_a_traced_value_is_refused_locally_too():
    with pytest.raises(adcore.TracerConversionError):
        pattern(lambda x: x * float(x[0]), X, local=True)


def test_the_error_says_what_read_the_value():
    with pytest.raises(adcore.ValueDependentError, match=r"np\.argmax"):
        pattern(lambda x: x[np.argmax(x)], X)
    with pytest.raises(adcore.ValueDependentError, match=r"float\(x\)"):
        pattern(lambda x: x * float(x[0]), X)


# --- the other arguments ----------------------------------------------------------------------


def test_float_arguments_not_differentiated_are_traced_with_empty_patterns():
    seen = {}

    def f(x, y, scale):
        seen["y"], seen["scale"] = y, scale
        return x * y[::-1] * scale + np.sum(y)

    x, y = RNG.random(4), RNG.random(4)
    got = pattern(f, x, y, 2.0)
    np.testing.assert_array_equal(got, np.eye(4, dtype=bool))
    assert isinstance(seen["y"], SparsityTracer) and seen["y"].pattern.nnz == 0
    assert isinstance(seen["scale"], SparsityTracer) and seen["scale"].pattern.nnz == 0


def test_a_global_pattern_cannot_read_an_undifferentiated_float_argument():
    def f(x, y):
        return x * 2.0 if y[0] > 0 else x[:2]

    y = np.array([1.0, -1.0])
    with pytest.raises(adcore.ValueDependentError):
        pattern(f, X, y)
    np.testing.assert_array_equal(pattern(f, X, y, local=True), np.eye(5, dtype=bool))
    np.testing.assert_array_equal(pattern(f, X, -y, local=True), np.eye(5, dtype=bool)[:2])


def test_int_arguments_are_passed_as_they_are():
    def f(x, index, k):
        assert isinstance(index, np.ndarray) and type(k) is int
        return x[index] * k + x[:k].sum()

    index = np.array([4, 0, 0, 2])
    got = pattern(f, X, index, 2)
    want = np.eye(5, dtype=bool)[index]
    want[:, :2] = True
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, nonzeros(f, X, index, 2))


def test_the_trace_state_is_clean_after_an_error():
    depth = len(_stack())
    for f in (branchy, lambda x: x[np.argmax(x)], lambda x: 1 / 0):
        with pytest.raises((adcore.ValueDependentError, ZeroDivisionError)):
            pattern(f, X)
        assert len(_stack()) == depth
    np.testing.assert_array_equal(pattern(np.sin, X), np.eye(5, dtype=bool))
