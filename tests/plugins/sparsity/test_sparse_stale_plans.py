"""A prepared sparse Jacobian or Hessian is never reused on a pattern that no longer holds (issue 32,
class 4): a non-float argument written into or appended to, or a constant f read when the pattern
was detected (a closure's matrix, an index array) written into since, is a typed error, and the
prepared derivative works again once the value is back. Oracle: the dense Jacobian or Hessian."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError, InvalidInputError, StateChangedError

X = np.array([1.0, 2.0])


def _checked(prep, f, *args, tol=1e-12):
    """prep(*args), asserted equal to the dense Jacobian (forward mode's, exact)."""
    found = prep(*args).toarray()
    np.testing.assert_allclose(found, adcore.jacobian(f, backend="forward")(*args), rtol=tol, atol=tol)
    return found


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric", "symbolic"])
def test_an_array_in_a_dict_argument_written_into_is_refused_and_then_works(backend):
    def f(x, p):
        return p["A"] @ x

    p = {"A": np.array([[1.0, 0.0], [0.0, 0.0]])}
    tol = 1e-8 if backend == "numeric" else 1e-12  # finite differences: within their error
    prep = adcore.prepare_jacobian(f, X, p, backend=backend)
    _checked(prep, f, X, p, tol=tol)
    p["A"][:] = 1  # the example: it gave the one-column pattern
    with pytest.raises(InvalidInputError, match="argument 1 differs"):
        prep(X, p)
    again = adcore.prepare_jacobian(f, X, p, backend=backend)
    np.testing.assert_allclose(again(X, p).toarray(), np.ones((2, 2)), rtol=tol)
    p["A"][:] = [[1.0, 0.0], [0.0, 0.0]]
    _checked(prep, f, X, p, tol=tol)  # the next call works


def test_a_list_argument_appended_to_is_refused():
    def f(x, rows):
        return x[rows]

    rows = [0]
    prep = adcore.prepare_jacobian(f, X, rows)
    _checked(prep, f, X, rows)
    rows.append(1)
    with pytest.raises(InvalidInputError, match="list"):
        prep(X, rows)
    rows.pop()
    _checked(prep, f, X, rows)


def test_a_closure_matrix_written_into_is_refused_and_then_works():
    a = np.array([[1.0, 0.0], [0.0, 0.0]])

    def f(x):
        return a @ x

    prep = adcore.prepare_jacobian(f, X)
    _checked(prep, f, X)
    a[:] = 1
    with pytest.raises(StateChangedError, match="'matmul'"):
        prep(X)
    a[:] = [[1.0, 0.0], [0.0, 0.0]]
    _checked(prep, f, X)


@pytest.mark.parametrize("kind", ["array", "list"])
def test_a_closure_index_written_into_is_refused(kind):
    index = np.array([0, 0]) if kind == "array" else [0, 0]

    def f(x):
        return x[index] * 2.0

    prep = adcore.prepare_jacobian(f, X)
    _checked(prep, f, X)
    index[1] = 1
    with pytest.raises(StateChangedError, match="param 'index' of op 'getitem'"):
        prep(X)
    index[1] = 0
    _checked(prep, f, X)


def test_a_prepared_hessian_checks_its_constants_too():
    weights = np.array([1.0, 0.0])

    def f(x):
        return (weights * x**3).sum()

    prep = adcore.prepare_hessian(f, X)
    np.testing.assert_allclose(prep(X).toarray(), adcore.hessian(f)(X), rtol=1e-12)
    weights[1] = 1.0
    with pytest.raises(AdcoreError, match="has changed since"):
        prep(X)
    weights[1] = 0.0
    np.testing.assert_allclose(prep(X).toarray(), adcore.hessian(f)(X), rtol=1e-12)


def test_float_arguments_may_change_between_calls():
    def f(x, a):
        return a * x

    prep = adcore.prepare_jacobian(f, X, np.array([1.0, 0.0]))
    a = np.array([3.0, 4.0])  # the pattern never read a float argument's values
    _checked(prep, f, X, a)
