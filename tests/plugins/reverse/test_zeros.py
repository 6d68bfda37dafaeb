"""Structural zeros pass through every op that only moves elements (issue 32, class 6).

`where(m, log(x) moved by a shape op, 0)` at an x with zeros: the untaken positions are
-inf, and their cotangent must be 0, not 0 * inf = nan. The oracle is independent of adcore:
the shape op applied to basis vectors gives its 0/1 matrix W, and d/dx_j is
sum_p m[p] W[p, j] / x_j (0 where x_j = 0: every copy of it is masked out).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError

X = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 4.0]])

# each: a NumPy function of a (2, 3) array that only moves, copies or adds its elements
MOVES = {
    "reshape": lambda y: np.reshape(y, (1, 6)),
    "ravel": lambda y: np.ravel(y),
    "transpose": lambda y: np.transpose(y),
    "swapaxes": lambda y: np.swapaxes(y, 0, 1),
    "moveaxis": lambda y: np.moveaxis(y, 0, -1),
    "broadcast_to": lambda y: np.broadcast_to(y, (4, 2, 3)),
    "expand_dims": lambda y: np.expand_dims(y, 1),
    "squeeze": lambda y: np.squeeze(np.expand_dims(y, 0), 0),
    "atleast_3d": lambda y: np.atleast_3d(y),
    "tile": lambda y: np.tile(y, (2, 1)),
    "repeat": lambda y: np.repeat(y, 2, axis=1),
    "stack": lambda y: np.stack([y, 2 * y]),
    "concatenate": lambda y: np.concatenate([y, y], axis=1),
    "getitem": lambda y: y[:, 1:],
    "getitem_fancy": lambda y: y[[1, 0, 1]],
    "take": lambda y: np.take(y, [2, 0, 5, 3]),
    "take_along_axis": lambda y: np.take_along_axis(y, np.array([[2, 0], [1, 0]]), axis=1),
    "flip": lambda y: np.flip(y),
    "roll": lambda y: np.roll(y, 1),
    "rot90": lambda y: np.rot90(y),
    "pad": lambda y: np.pad(y, 1),
    "pad_edge": lambda y: np.pad(y, 1, mode="edge"),
    "diagonal": lambda y: np.diagonal(y, 1),
    "tril": lambda y: np.tril(y),
    "sum": lambda y: np.sum(y, axis=0),
    "mean": lambda y: np.mean(y, axis=1),
    "cumsum": lambda y: np.cumsum(y, axis=1),
}
BACKENDS = ("reverse", "forward", "symbolic", "numeric")


def _program(move):
    """sum(where(m, move(log x), 0)), m the finite positions of move(log X)."""
    with np.errstate(divide="ignore"):
        taken = np.isfinite(move(np.log(X)))

    def f(x):
        return np.sum(np.where(taken, move(np.log(x)), 0.0))

    return f, taken


def _expected(move, taken):
    """d f / d x from move's 0/1 matrix, built from NumPy on basis arrays."""
    grad = np.zeros(X.size)
    for j in range(X.size):
        basis = np.zeros(X.size)
        basis[j] = 1.0
        reach = np.sum(np.where(taken, move(basis.reshape(X.shape)), 0.0))
        grad[j] = reach / X.flat[j] if reach else 0.0
    return grad.reshape(X.shape)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(MOVES))
def test_a_masked_region_stays_zero_through_a_shape_op(name, backend):
    move = MOVES[name]
    f, taken = _program(move)
    assert not taken.all()  # the program does meet log(0) = -inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0) in the value, on purpose
        got = adcore.grad(f, backend=backend)(X)
    np.testing.assert_allclose(got, _expected(move, taken), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_issue_s_reshape_example(backend):
    m = np.array([True, False])

    def f(x):
        return np.sum(np.where(m, np.log(x.reshape(1, 2)).reshape(2), 0.0))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = adcore.grad(f, backend=backend)(np.array([1.0, 0.0]))
    assert got[1] == 0.0  # not nan
    np.testing.assert_allclose(got, [1.0, 0.0], rtol=1e-9)  # numeric's estimate: close, not exact


@pytest.mark.parametrize("backend", ["reverse", "symbolic"])  # forward: see the note below
def test_two_masks_meeting_at_a_stack_keep_their_own_zeros(backend):
    """log(x) is masked out at x1 = 0 by one where, sqrt(x) is taken there by another: x1 gets
    sqrt's infinite slope (inf, the one-sided derivative), not log's 0 * inf = nan added to it."""
    a, b = np.array([True, False]), np.array([False, True])

    def f(x):
        y = np.stack([np.where(a, np.log(x), 0.0), np.where(b, np.sqrt(x), 0.0)])
        return np.sum(np.transpose(np.transpose(y)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = adcore.grad(f, backend=backend)(np.array([2.0, 0.0]))
    assert got[0] == 0.5 and got[1] == np.inf


# forward is not in the test above: its tangent in the direction of x0 is 0 at x1, and sqrt's JVP
# multiplies that 0 by sqrt'(0) = inf (a structural zero of the seed, which forward does not track)


def test_second_derivative_through_a_masked_reshape():
    """forward-over-reverse: the structural zero survives the rules being differentiated again."""
    m = np.array([True, False, True])

    def f(x):
        return np.sum(np.where(m, np.log(x.reshape(3, 1)).reshape(3) ** 2, 0.0))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        h = adcore.hessian(f)(np.array([2.0, 0.0, 3.0]))
    # d2/dx2 log(x)^2 = 2 (1 - log x) / x^2 where taken, 0 elsewhere
    want = np.diag([2 * (1 - np.log(2.0)) / 4, 0.0, 2 * (1 - np.log(3.0)) / 9])
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=0)


def test_a_reduction_that_mixes_taken_and_untaken_positions_keeps_the_nan():
    """sum mixes the masked -inf column with taken ones only where a column has both; where it does
    not, no structural zero is claimed (the mask is exact, not a guess)."""

    def f(x):
        s = np.sum(np.log(x), axis=0)  # column 0 has log 0: -inf
        return np.sum(np.where(np.isfinite(np.array([-np.inf, 1.0])), s, 0.0))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = adcore.grad(f)(np.array([[0.0, 1.0], [2.0, 4.0]]))
    np.testing.assert_array_equal(got, [[0.0, 1.0], [0.0, 0.25]])


def test_an_error_in_a_rule_leaves_the_next_call_working():
    with pytest.raises(AdcoreError):
        adcore.grad(lambda x: np.where(x > 0, x, 0.0))(np.array([1, 2]))  # integer input
    f = MOVES["tile"]
    got = adcore.grad(lambda x: np.sum(np.where(True, f(x), 0.0)))(X)
    np.testing.assert_array_equal(got, np.full(X.shape, 2.0))


def test_under_vmap_examples_with_and_without_zeros_each_get_their_own_backward_pass():
    """A batch where one example's relu has zeros and the other's has none keeps the mask for both
    (no loop): the one without zeros gets no structural zero, not even at the slice's unreached
    position, where its own pass gives 0 * inf = nan (log at 0)."""

    def f(x):
        return np.sum(np.maximum(np.log(x)[:2], 0.0))

    rows = np.array([[0.5, 2.0, 0.0], [2.0, 3.0, 0.0]])  # relu is 0 at log(0.5) only
    df = adcore.grad(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        loop = np.stack([df(x) for x in rows])
        got = adcore.vmap(df, fallback="error")(rows)
    np.testing.assert_array_equal(loop, [[0.0, 0.5, 0.0], [0.5, 1 / 3, np.nan]])
    np.testing.assert_array_equal(got, loop)


def test_under_vmap_a_node_whose_every_position_is_zero_in_some_examples_only():
    """Past a matmul (not elementwise), an example whose cotangent is zero everywhere (its where
    took 0) passes zeros to all of the matmul's input, the others nothing: log(0)'s inf then
    reaches only the examples that use it, as in each example's own pass."""
    w = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])

    def f(x):
        taken = np.where(np.sum(x) > 3.0, np.log(x) @ w, 0.0)
        return np.sum(taken + np.where(x[:2] > 0.5, np.sqrt(x[:2]), 0.0))

    rows = np.array([[0.0, 1.0, 1.0], [0.0, 2.0, 3.0], [1.0, 1.0, 0.2], [0.0, 0.0, 5.0]])
    df = adcore.grad(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        loop = np.stack([df(x) for x in rows])
        got = adcore.vmap(df, fallback="error")(rows)
    assert loop[0, 0] == 0.0 and np.isinf(loop[1, 0])  # (row 0's where took 0: no inf)
    np.testing.assert_array_equal(got, loop)
