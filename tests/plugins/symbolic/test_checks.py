"""adcore_symbolic.checks: where NumPy refuses a matrix (singular, not positive definite), the
symbolic backend's compiled code raises LinearAlgebraError naming the op, never nan or inf."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from adcore_symbolic import checks
from adcore_symbolic import functions as F

import adcore
from adcore.errors import LinearAlgebraError

SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])  # row 2 = 2 row 1
B = np.array([1.0, -2.0, 0.5])
# an upper triangle with a 0 on its diagonal; its lower triangle (not read) is not 0
ZERO_PIVOT = np.array([[2.0, 1.0, 3.0], [5.0, 0.0, 1.0], [7.0, 8.0, 4.0]])


def _inv(a):
    return np.sum(np.linalg.inv(a) * np.arange(1.0, 1.0 + a.size).reshape(a.shape))


def _solve(a, b):
    return np.sum(np.linalg.solve(a, b) * np.arange(1.0, 1.0 + len(b)))


def _logabsdet(a):
    return np.linalg.slogdet(a)[1]


def _solve_triangular(a, b):
    return np.sum(adcore.numpy.solve_triangular(a, b, lower=False))


def _cho_solve(c, b):
    return np.sum(adcore.numpy.cho_solve(c, b, lower=False))


CASES = {
    "inv": (_inv, (SINGULAR,), "Singular matrix"),
    "solve": (_solve, (SINGULAR, B), "Singular matrix"),
    "logabsdet": (_logabsdet, (SINGULAR,), "log\\|det a\\| = -inf"),
    "solve_triangular": (_solve_triangular, (ZERO_PIVOT, B), "Singular matrix"),
    "cho_solve": (_cho_solve, (ZERO_PIVOT, B), "Singular matrix"),
}


@pytest.mark.parametrize("argnums", [0, 1], ids=["d/da", "d/db"])
@pytest.mark.parametrize("op", sorted(CASES))
def test_a_singular_matrix_raises_naming_the_op_as_reverse_does(op, argnums):
    f, args, words = CASES[op]
    argnums = min(argnums, len(args) - 1)
    with pytest.raises(np.linalg.LinAlgError):  # the reference: reverse refuses it too
        adcore.grad(f, argnums=argnums, backend="reverse")(*args)
    with pytest.raises(LinearAlgebraError, match=f"op '{op}': .*{words}"):
        adcore.grad(f, argnums=argnums, backend="symbolic")(*args)


def _nearly_singular() -> np.ndarray:
    """Singular but for 1e-9 on one entry: condition number about 1e10, an inverse about 1e9."""
    a = SINGULAR.copy()
    a[1, 1] += 1e-9
    return a


@pytest.mark.parametrize("op", ["inv", "solve", "logabsdet"])
def test_a_nearly_singular_matrix_gives_huge_values_as_numpy_does_not_an_error(op):
    f, args, _ = CASES[op]
    args = (_nearly_singular(), *args[1:])
    mine = adcore.grad(f, backend="symbolic")(*args)
    theirs = adcore.grad(f, backend="reverse")(*args)
    assert np.all(np.isfinite(mine)) and np.max(np.abs(mine)) > 1e8
    np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-6 * np.max(np.abs(theirs)))


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_a_determinant_that_overflows_is_an_error_not_a_zero_inverse():
    # det = 1e400 is inf in float64: adjugate / det would be 0 where the inverse is 1e-200
    with pytest.raises(LinearAlgebraError, match="op 'inv': .*overflows"):
        adcore.grad(_inv, backend="symbolic")(np.diag([1e200, 1e200]))


def test_a_determinant_that_underflows_is_an_error_not_inf():
    with pytest.raises(LinearAlgebraError, match="op 'inv': .*badly scaled"):
        adcore.grad(_inv, backend="symbolic")(np.diag([1e-200, 1e-200]))


def test_regular_matrices_agree_with_reverse():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    upper = np.triu(a)
    for f, args in [(_inv, (a,)), (_solve, (a, B)), (_logabsdet, (a,)), (_solve_triangular, (upper, B))]:
        for argnums in range(len(args)):
            mine = adcore.grad(f, argnums=argnums, backend="symbolic")(*args)
            theirs = adcore.grad(f, argnums=argnums, backend="reverse")(*args)
            np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_forward_over_symbolic_hessian_of_logabsdet_at_a_singular_matrix_raises():
    # the compiled derivative runs on forward's traced values: the check reads their numbers
    with pytest.raises(np.linalg.LinAlgError):
        adcore.jacobian(adcore.grad(_logabsdet, backend="symbolic"), backend="forward")(SINGULAR)


def test_nonsingular_is_its_argument_with_derivative_one():
    d = sp.Symbol("d", real=True)
    check = F.nonsingular_in("inv")
    assert check is F.nonsingular_in("inv") and check.op == "inv"
    assert sp.diff(check(d), d) == 1
    assert check(sp.Integer(2)) == 2  # a nonzero number needs no check
    assert isinstance(check(sp.S.Zero), F.nonsingular)  # zero is checked when the code runs
    assert check(d).subs(d, 0.5).evalf() == 0.5


def test_logabs_is_log_abs_with_the_derivative_checked():
    d = sp.Symbol("d", real=True)
    derivative = sp.diff(F.logabs(d), d)
    assert derivative == 1 / F.nonsingular_in("logabsdet")(d)
    assert abs(F.logabs(d).subs(d, -2.0).evalf() - np.log(2.0)) < 1e-15


def test_check_passes_nonzero_values_and_refuses_zero():
    assert checks.nonsingular(2.5, "solve") == 2.5
    np.testing.assert_array_equal(checks.nonsingular(np.array([1.0, -3.0]), "inv"), [1.0, -3.0])
    with pytest.raises(LinearAlgebraError, match="op 'solve': Singular matrix"):
        checks.nonsingular(np.array([1.0, 0.0]), "solve")
    with pytest.raises(LinearAlgebraError, match="op 'solve_triangular'"):
        checks.nonsingular(-0.0, "solve_triangular")
    assert checks.nonsingular(np.inf, "solve_triangular") == np.inf  # b / inf = 0 is right there
