"""The functional reverse backend: state captured during tracing (issue 15, class 5).

The tape keeps copies of the arrays it reads again in the backward pass, so changing a
constant or an argument in place after f used it (inside f, or between a vjp and its
pullback) does not change the derivative of the computation that ran.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.errors import StateChangedError

X = np.array([0.1, 0.2, 0.3])


def test_a_constant_changed_in_place_inside_f_after_use_keeps_the_gradient():
    # the example: d/dx sum(sin(x * k)) with k = 1 at the time of use is cos(x)
    k = np.ones(3)

    def f(x):
        y = anp.sum(anp.sin(x * k))
        k[...] *= 10  # the same as `k *= 10` on the closure's array
        return y

    np.testing.assert_allclose(adcore.grad(f)(X), np.cos(X), rtol=1e-15)
    # the next call sees k = 10 when it runs, and differentiates that: 10 cos(10 x)
    np.testing.assert_allclose(adcore.grad(f)(X), 10 * np.cos(10 * X), rtol=1e-15)


def test_a_jacobian_and_a_hessian_see_the_constant_as_it_was_used():
    k = np.ones(3)

    def f(x):
        y = anp.sin(x * k)
        k[...] = 5.0
        return y

    np.testing.assert_allclose(adcore.jacobian(f)(X), np.diag(np.cos(X)), rtol=1e-15)  # one sweep per row
    k[...] = 1.0
    hessian = adcore.hessian(lambda x: anp.sum(f(x)))(X)  # forward over reverse: -sin(x) on the diagonal
    np.testing.assert_allclose(hessian, np.diag(-np.sin(X)), rtol=1e-15)


def test_constant_and_argument_changed_between_vjp_and_its_pullback():
    k, x = np.ones(3), X.copy()
    out, pullback = adcore.vjp(lambda v: anp.sin(v * k) * v, x)
    k *= 10
    x *= 3
    # d/dv sin(v) v = cos(v) v + sin(v), at the v and k of the forward computation
    (g,) = pullback(np.ones(3))
    np.testing.assert_allclose(g, np.cos(X) * X + np.sin(X), rtol=1e-15)
    np.testing.assert_allclose(out, np.sin(X) * X, rtol=1e-15)


def test_the_argument_changed_through_a_closure_inside_f_is_refused():
    # the argument is the caller's array itself, frozen for the call (a copy per call costs more
    # than a small MLP's sweep): a write to it from f would change the point of the derivative
    x0 = X.copy()

    def f(x):
        y = anp.sum(x * x)
        x0[...] = 100.0  # the caller's array, which is also the argument
        return y

    with pytest.raises(StateChangedError, match="backend 'reverse'.*differentiated with respect to"):
        adcore.grad(f)(x0)
    np.testing.assert_array_equal(x0, X)  # the write did not happen
    x0[0] = X[0]  # and the caller's array is writable again
    np.testing.assert_allclose(adcore.grad(lambda x: anp.sum(x * x))(x0), 2 * X, rtol=1e-15)


def test_a_view_of_the_argument_cannot_be_written_either():
    base = np.concatenate([X, X])
    view = base[:3]

    def f(x):
        base[0] = 100.0  # through the array the argument is a view of
        return anp.sum(x * x)

    with pytest.raises(StateChangedError):
        adcore.grad(f)(view)
    assert base.flags.writeable and view.flags.writeable


def test_vjp_keeps_a_copy_so_the_caller_may_change_its_array_before_the_pullback():
    x0 = X.copy()
    _, pullback = adcore.vjp(lambda x: anp.sum(x * x), x0)
    x0[...] = 100.0
    np.testing.assert_allclose(pullback(1.0)[0], 2 * X, rtol=1e-15)


def test_a_mask_given_to_where_and_changed_after_use():
    c = np.array([True, False, True])

    def f(x):
        y = anp.sum(anp.where(c, x * x, 0.0))
        c[...] = False
        return y

    np.testing.assert_allclose(adcore.grad(f)(X), [0.2, 0.0, 0.6], rtol=1e-15)


def test_detach_inside_f_is_stop_gradient_and_the_gradient_is_a_plain_array():
    # d/dx (c x) with c = x held constant is c; before, detach() made an eager Tensor that leaked
    # out as the "gradient"
    g = adcore.grad(lambda x: x.detach() * x)(0.7)
    assert type(g) is np.ndarray and g == 0.7
    assert adcore.hessian(lambda x: x.detach() * x * x)(0.7) == 1.4  # d²/dx² (c x²) = 2c


def test_the_value_vjp_returned_changed_in_place_before_the_pullback():
    # exp's rule reads its output: the caller's copy of it may change, the tape's may not
    out, pullback = adcore.vjp(anp.exp, X.copy())
    out *= 2
    np.testing.assert_allclose(pullback(np.ones(3))[0], np.exp(X), rtol=1e-15)


def test_the_contract_pullback_is_none_for_an_output_that_does_not_depend_on_the_inputs():
    be = adcore.get_backend("reverse")
    x, c = np.array([0.5, 1.5]), np.array([2.0, -1.0])
    value, pullback = be.vjp(lambda x, c: anp.sin(c), (x, c), (0,))
    np.testing.assert_array_equal(value, np.sin(c))
    assert pullback is None
    value, pullback = be.vjp(lambda x, c: x * c + c, (x, c), (0,))
    (g,) = pullback(np.array([1.0, 10.0]), final=True)
    np.testing.assert_array_equal(g, [2.0, -10.0])  # ct * c
