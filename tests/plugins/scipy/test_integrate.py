"""adcore_scipy.integrate.odeint: SciPy's values; a damped oscillator's loss gradients by the adjoint
(reverse) against forward sensitivities, finite differences (numeric) and the closed-form solution
(differentiated by Richardson differences of its values); derivatives in every time of t; memory of the adjoint flat in the number
of outputs (tracemalloc); second order on every pair of backends; the refusals; scipy imported only when the op
runs (its conformance: tests/conformance/test_engine.py's full report)."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
import scipy.integrate
from adcore_scipy.integrate import odeint

import adcore
import adcore.numpy as anp
from adcore.errors import (
    AdcoreError,
    InvalidInputError,
    InvalidValueError,
    MissingRuleError,
    UnsupportedFunctionError,
)

RULE_BACKENDS = ["reverse", "forward"]
Y0 = np.array([1.0, -0.5])
K, C = 2.0, 0.3
TIMES = np.linspace(0.0, 3.0, 13)
TIGHT = {"rtol": 1e-12, "atol": 1e-12}


def oscillator(y, t, k, c):
    """y'' = -k y - c y' as (position, velocity)."""
    return anp.stack([y[1], -k * y[0] - c * y[1]])


def loss(y0, k, c, t=TIMES):
    ys = odeint(oscillator, y0, t, args=(k, c), **TIGHT)
    return anp.sum(ys[:, 0] ** 2 * anp.cos(t)) + anp.sum(ys[-1])


def closed_form_loss(y0, k, c, t=TIMES):
    """The same loss from the underdamped solution e^(-ct/2) (A cos wt + B sin wt), plain NumPy."""
    w = np.sqrt(k - c**2 / 4)
    a, b = y0[0], (y0[1] + c * y0[0] / 2) / w
    decay = np.exp(-c * t / 2)
    position = decay * (a * np.cos(w * t) + b * np.sin(w * t))
    velocity = -c / 2 * position + decay * w * (b * np.cos(w * t) - a * np.sin(w * t))
    return np.sum(position**2 * np.cos(t)) + position[-1] + velocity[-1]


def closed_form_gradient(y0, k, c):
    """The closed form's gradient by Richardson differences of its values: no rule involved, and
    within 6e-14 of autograd's exact derivative of the same closed form."""
    return adcore.grad(closed_form_loss, argnums=(0, 1, 2), backend="numeric", method="richardson")(y0, k, c)


def test_values_are_scipys():
    ys = odeint(oscillator, Y0, TIMES, args=(K, C))
    expected = scipy.integrate.odeint(lambda y, t: [y[1], -K * y[0] - C * y[1]], Y0, TIMES)
    np.testing.assert_array_equal(ys, expected)
    # tfirst, a non-float arg passed through as it is, a scalar y0 (shape (len(t), 1), as SciPy's)
    got = odeint(lambda t, y, r, n: -r * y**n, 2.0, TIMES, args=(0.5, 3), tfirst=True)
    assert got.shape == (13, 1)
    np.testing.assert_array_equal(got, scipy.integrate.odeint(lambda y, t: -0.5 * y**3, 2.0, TIMES))


def test_the_closed_form_agrees_with_the_solve():
    ys = odeint(oscillator, Y0, TIMES, args=(K, C), **TIGHT)
    direct = float(np.sum(ys[:, 0] ** 2 * np.cos(TIMES)) + np.sum(ys[-1]))
    assert abs(direct - closed_form_loss(Y0, K, C)) < 1e-10


@pytest.mark.parametrize("backend", [*RULE_BACKENDS, "numeric"])
def test_oscillator_gradients_against_the_closed_form(backend):
    expected = closed_form_gradient(Y0, K, C)
    got = adcore.grad(loss, argnums=(0, 1, 2), backend=backend)(Y0, K, C)
    tolerance = 1e-6 if backend == "numeric" else 1e-9
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=tolerance, atol=tolerance)


def _pair(y, t, kc):
    k, (c,) = kc
    return oscillator(y, t, k, c)


def _named(y, t, p, power):
    return oscillator(y, t, p["k"], p["c"] ** power)  # power, an int among the args, passes through


# the same oscillator with k and c nested in args: a tuple holding a list, a dict beside an int
NESTED = {
    "tuple": lambda y0, k, c: odeint(_pair, y0, TIMES, args=((k, [c]),), **TIGHT),
    "dict": lambda y0, k, c: odeint(_named, y0, TIMES, args=({"k": k, "c": c}, 1), **TIGHT),
}


@pytest.mark.parametrize("backend", [*RULE_BACKENDS, "numeric"])
@pytest.mark.parametrize("nesting", sorted(NESTED))
def test_values_nested_in_args_are_differentiated(backend, nesting):
    solve = NESTED[nesting]

    def nested_loss(y0, k, c):
        ys = solve(y0, k, c)
        return anp.sum(ys[:, 0] ** 2 * anp.cos(TIMES)) + anp.sum(ys[-1])

    expected = closed_form_gradient(Y0, K, C)
    tolerance = 1e-6 if backend == "numeric" else 1e-9
    for _ in range(2):  # and the next call works
        got = adcore.grad(nested_loss, argnums=(0, 1, 2), backend=backend)(Y0, K, C)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=tolerance, atol=tolerance)
    np.testing.assert_array_equal(solve(Y0, K, C), odeint(oscillator, Y0, TIMES, args=(K, C), **TIGHT))


def test_adjoint_against_forward_sensitivities_in_every_input_and_time():
    # reverse (the adjoint) and forward (sensitivities) agree to the solves' 1e-10, and numeric
    # (differences of the impl) to its step's error; the gradient in each time t_i included
    args = (Y0, K, C, TIMES)
    reverse = adcore.grad(loss, argnums=(0, 1, 2, 3))(*args)
    forward = adcore.grad(loss, argnums=(0, 1, 2, 3), backend="forward")(*args)
    numeric = adcore.grad(loss, argnums=(0, 1, 2, 3), backend="numeric")(*args)
    for r, f, n in zip(reverse, forward, numeric):
        np.testing.assert_allclose(r, f, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(r, n, rtol=1e-6, atol=1e-6)
    assert np.all(reverse[3] != 0)  # each time moves the loss: no silently zero time derivative


def test_a_jacobian_of_the_trajectory_backward_in_time_and_through_a_vector_arg():
    # t decreasing, a vector arg, a non-autonomous func: the full Jacobian on each backend
    def forced(y, t, w):
        return w[0] * y * (1 - y) + w[1] * anp.sin(3 * t)

    times = np.array([1.5, 1.2, 0.7, 0.1])

    def f(y0, w):
        return odeint(forced, y0, times, args=(w,), **TIGHT)

    y0, w = np.array([0.3, 0.6]), np.array([1.2, 0.4])
    reverse = adcore.jacobian(f, argnums=(0, 1))(y0, w)
    # (numeric's differences carry the solver's own error, 1e-12 over a step of ~1e-6)
    for backend, tolerance in (("forward", 1e-9), ("numeric", 1e-5)):
        got = adcore.jacobian(f, argnums=(0, 1), backend=backend)(y0, w)
        for r, g in zip(reverse, got):
            np.testing.assert_allclose(g, r, rtol=tolerance, atol=tolerance)


def test_a_traced_cotangent_of_value_zero_is_differentiated():
    # the adjoint starts at the last output with a nonzero cotangent; a traced one that is zero
    # there may still carry a derivative: the pullback's Jacobian in g (at g = 0) is J's transpose
    def f(y0):
        return odeint(oscillator, y0, TIMES[:4], args=(K, C), **TIGHT)

    def pulled_back(g):
        return adcore.vjp(f, Y0)[1](g)[0]

    got = adcore.jacobian(pulled_back, backend="forward")(np.zeros((4, 2)))
    expected = np.transpose(adcore.jacobian(f)(Y0), (2, 0, 1))
    assert np.all(expected[:, 1:] != 0)  # every output time moves y0's cotangent
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


OSCILLATORS = 50  # independent copies of the oscillator in one state: 800 bytes of output a time


def _peak_of_the_vjp(count: int) -> tuple[int, int]:
    """(tracemalloc's peak during the backward pass alone, the stored outputs' bytes) for `count`
    output times of OSCILLATORS oscillators y' = A y, A = [[0, 1], [-k, -c]] built from k and c."""

    def rate(y, t, a):
        return anp.ravel(anp.reshape(y, (OSCILLATORS, 2)) @ a.T)

    def f(y0, k, c):
        a = anp.stack([anp.stack([0.0 * k, 1.0 + 0.0 * k]), anp.stack([-k, -c])])
        return odeint(rate, y0, np.linspace(0.0, 1.0, count), args=(a,))

    ys, pullback = adcore.vjp(f, np.tile(Y0, OSCILLATORS), np.array(K), np.array(C))
    g = np.ones_like(ys) / count
    tracemalloc.start()
    try:
        pullback(g)
        return tracemalloc.get_traced_memory()[1], ys.nbytes
    finally:
        tracemalloc.stop()


def test_the_adjoints_memory_is_flat_in_the_number_of_outputs():
    # tracemalloc's peak during the VJP, after warm-up calls (they fill the interpreter's free
    # lists): from 30 to 300 output times it grows by less than 2.5 copies of the stored outputs
    # (m x 100 float64: 240 kB at 300); the op makes two (the seed's copy, the scaled cotangent).
    # Keeping a copy of each interval's adjoint would add one more, its whole state four, a tape
    # through the solver's steps far more. 100 states, not 2: the outputs' bytes then outweigh
    # the few tens of kB the interpreter's free lists and caches may take at any size
    for _ in range(2):
        _peak_of_the_vjp(30)
    small, _ = _peak_of_the_vjp(30)
    large, outputs = _peak_of_the_vjp(300)
    assert large - small < 2.5 * outputs, (small, large, outputs)


def test_stacked_directions_each_get_their_own_sensitivity():
    # forward mode solves every direction of a batch in one system, their products with the
    # rate's derivative from one pass: the Jacobian in s of odeint at (y0, k, c) + s·V, three
    # directions V (not the identity; two states, two args, so a mixed-up row or axis shows),
    # must be column by column the single-direction JVPs, reverse mode's and finite differences'
    directions = np.array([[0.3, -1.0, 0.5, 0.0], [0.0, 0.0, -0.7, 0.2], [1.0, 0.4, 0.0, 0.9]])
    point = np.array([*Y0, K, C])

    def trajectory(q):
        return odeint(oscillator, q[:2], TIMES[:5], args=(q[2], q[3]), **TIGHT)

    def along(s):
        return trajectory(point + s @ directions)

    s = np.zeros(3)
    stacked = adcore.jacobian(along, backend="forward")(s)
    assert stacked.shape == (5, 2, 3)
    singles = np.stack([adcore.jvp(trajectory, (point,), (v,))[1] for v in directions], axis=-1)
    np.testing.assert_allclose(stacked, singles, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(stacked, adcore.jacobian(along)(s), rtol=1e-9, atol=1e-9)
    numeric = adcore.jacobian(along, backend="numeric")(s)
    np.testing.assert_allclose(stacked, numeric, rtol=1e-6, atol=1e-6)
    assert np.all(np.abs(stacked[1:] - stacked[1:, :, [1, 2, 0]]) > 1e-3)  # no two columns alike


def test_forward_mode_through_args_of_every_rank():
    # each arg's share of a direction is its own columns of the stacked tangents: a matrix, a
    # scalar and a vector arg side by side, forward's Jacobian against reverse's
    def rate(y, t, a, s, v):
        return a @ y * s + v * anp.sin(t)

    def f(a, s, v):
        return odeint(rate, Y0, TIMES[:4], args=(a, s, v), **TIGHT)

    args = (np.array([[0.0, 1.0], [-2.0, -0.3]]), np.array(0.7), np.array([0.2, -0.1]))
    reverse = adcore.jacobian(f, argnums=(0, 1, 2))(*args)
    forward = adcore.jacobian(f, argnums=(0, 1, 2), backend="forward")(*args)
    for r, g in zip(reverse, forward):
        assert np.all(np.abs(r[1:]) > 1e-6)  # every entry of every arg moves every later output
        np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-9)


def test_second_derivatives_on_pairs_of_backends():
    # forward over reverse (the default Hessian) differentiates the adjoint, itself an odeint;
    # reverse over reverse the adjoint's adjoint; forward over forward the sensitivities'; reverse
    # over forward the sensitivities' adjoint (the directions traced by the outer level)
    def f(p):
        return loss(p[:2], p[2], p[3], TIMES[:3])

    p = np.array([1.0, 0.5, K, C])
    numeric = adcore.jacobian(adcore.grad(f), backend="numeric")(p)
    np.testing.assert_allclose(numeric, numeric.T, atol=1e-6)
    pairs = (("reverse", "forward"), ("reverse", "reverse"), ("forward", "forward"), ("forward", "reverse"))
    for inner, outer in pairs:
        got = adcore.hessian(f, inner=inner, outer=outer)(p)
        np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got, got.T, atol=1e-9)


# --- refusals -------------------------------------------------------------------------------------


def test_a_closure_over_a_value_being_differentiated_is_refused():
    def f(k):
        return anp.sum(odeint(lambda y, t: -k * y, np.array([1.0]), TIMES))

    with pytest.raises(UnsupportedFunctionError, match="args"):
        adcore.grad(f)(2.0)


def test_refusals_are_typed():
    with pytest.raises(InvalidValueError, match="monotonically"):
        odeint(oscillator, Y0, [0.0, 1.0, 0.5], args=(K, C))
    with pytest.raises(InvalidValueError, match="solver failed"):
        odeint(oscillator, Y0, [0.0, 100.0], args=(K, C), mxstep=2)
    with pytest.raises(InvalidInputError, match="Dfun"):
        odeint(oscillator, Y0, TIMES, args=(K, C), Dfun=lambda y, t, k, c: None)
    with pytest.raises(InvalidInputError, match="full_output"):
        odeint(oscillator, Y0, TIMES, args=(K, C), full_output=True)
    with pytest.raises(InvalidInputError, match="real"):
        odeint(oscillator, Y0 + 0j, TIMES, args=(K, C))
    with pytest.raises(AdcoreError, match="shape"):
        odeint(lambda y, t: y[:1], Y0, TIMES)
    with pytest.raises(MissingRuleError, match="odeint"):
        adcore.grad(loss, backend="symbolic")(Y0, K, C)


# --- conformance, lazy scipy ----------------------------------------------------------------------


# odeint and odeint_oscillator_loss agreeing on reverse, forward and numeric (every column but
# symbolic, in both real dtypes) is tests/conformance/test_engine.py's full report, one item a subject


def test_importing_the_module_and_loading_the_registry_imports_no_scipy():
    code = (
        "import sys, adcore, adcore_scipy.integrate; adcore.ops['odeint']; "
        "assert not [m for m in sys.modules if m.startswith('scipy')], 'scipy imported'"
    )
    env = {**os.environ, "ADCORE_BLOCK_PLUGINS": "special"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    code = (
        "import sys, adcore_scipy.integrate as I; I.odeint(lambda y, t: -y, [1.0], [0.0, 1.0]); "
        "assert 'scipy.integrate' in sys.modules"
    )
    assert subprocess.run([sys.executable, "-c", code], env=env, timeout=120).returncode == 0
