"""Tier-2 calls (call_vjp / call_jvp): every input of a variadic op differentiated, an active param
refused rather than taken as a constant, and zeros (not None) for an active argument the
derivative does not reach. Checked against the tape and adcore.grad on the source backend."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_source.runtime import plain
from adcore_source.tier2 import call_jvp, call_vjp

import adcore
from adcore.errors import AdcoreError

RNG = np.random.default_rng(3)
A, B, C = RNG.normal(size=3), RNG.normal(size=(3, 4)), RNG.normal(size=4)


def _tape_vjp(fn, *args):
    out, vjp_fn = adcore.vjp(fn, *args, backend="reverse")
    return vjp_fn(np.ones_like(out))


@pytest.mark.parametrize(
    ("callee", "args", "kwargs"),
    [
        (adcore.ops.multi_dot, (A, B, C), {}),
        (adcore.ops.stack, (A, 2.0 * A, A * A), {"axis": 1}),
        (adcore.ops.concatenate, (A, C), {}),
        (adcore.ops.einsum, ("i,ij,j->", A, B, C), {}),
    ],
)
def test_every_input_of_a_variadic_op_called_positionally_gets_its_cotangent(callee, args, kwargs):
    floats = [k for k, a in enumerate(args) if not isinstance(a, str)]

    def of_floats(*values):
        full = list(args)
        for k, v in zip(floats, values):
            full[k] = v
        return callee(*full, **kwargs)

    out, pullback = call_vjp(callee, args, kwargs)
    got = pullback(np.ones_like(out))
    want = _tape_vjp(of_floats, *(args[k] for k in floats))
    for k, w in zip(floats, want):
        np.testing.assert_allclose(got[k], w, rtol=1e-12)
    tangents = tuple(None if isinstance(a, str) else np.ones_like(a) for a in args)
    _, dout = call_jvp(callee, args, tangents, kwargs)
    _, want_dout = adcore.jvp(
        of_floats, tuple(args[k] for k in floats), tuple(np.ones_like(args[k]) for k in floats)
    )
    np.testing.assert_allclose(dout, want_dout, rtol=1e-12)


def test_a_variadic_ops_list_argument_gets_a_list_of_cotangents():
    out, pullback = call_vjp(np.linalg.multi_dot, ([A, B, C],), {})
    (got,) = pullback(1.0)
    want = _tape_vjp(lambda a, b, c: np.linalg.multi_dot([a, b, c]), A, B, C)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def multi_dot_of_three(a, b, c):
    return adcore.ops.multi_dot(a, b, c)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_the_source_backend_differentiates_every_array_of_multi_dot(mode):
    got = adcore.grad(multi_dot_of_three, argnums=(0, 1, 2), backend="source", mode=mode)(A, B, C)
    want = adcore.grad(multi_dot_of_three, argnums=(0, 1, 2), backend="reverse")(A, B, C)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert np.abs(got[2]).max() > 0  # the third array's gradient, once dropped


def test_an_active_param_is_refused_by_name_not_taken_as_a_constant():
    x = np.array([1.0, np.nan])
    with pytest.raises(AdcoreError, match="nan_to_num.*'nan'"):
        call_vjp(np.nan_to_num, (x,), {"nan": 2.0})  # no flags: every float is active
    _, pullback = call_vjp(np.nan_to_num, (x,), {"nan": 2.0}, active=(True, False))
    np.testing.assert_array_equal(plain(pullback(np.ones(2))[0]), [1.0, 0.0])  # Masked: a step


def nan_to_num_with_active_fill(x, a):
    return np.sum(np.nan_to_num(x * a, nan=a))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_the_source_backend_refuses_an_active_param_of_a_tier_two_call(mode):
    x = np.array([1.0, 2.0])
    with pytest.raises(AdcoreError, match="nan"):
        adcore.grad(nan_to_num_with_active_fill, argnums=(0, 1), backend="source", mode=mode)(x, 2.0)


def test_an_active_argument_the_derivative_does_not_reach_gets_zeros_not_none():
    cond, x, y = np.array([1.0, 0.0]), np.array([2.0, 3.0]), np.array([4.0, 5.0])
    _, pullback = call_vjp(np.where, (cond, x, y), {})
    got = pullback(np.ones(2))
    np.testing.assert_array_equal(plain(got[0]), np.zeros(2))  # the condition: no derivative, but zeros
    _, pullback = call_vjp(adcore.ops.stop_gradient, (x,), {})
    np.testing.assert_array_equal(pullback(np.ones(2))[0], np.zeros(2))


def stopped_plus_square(x):
    y = adcore.ops.stop_gradient(x) * 3.0
    return np.sum(y + x * x)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_the_source_backend_gives_a_stopped_value_zero_gradient(mode):
    x = np.array([1.0, -2.0])
    got = adcore.grad(stopped_plus_square, backend="source", mode=mode)(x)
    np.testing.assert_allclose(got, 2.0 * x)


def test_unbroadcast_keeps_the_structural_zeros_of_every_copy():
    from adcore_source.runtime import Masked, unbroadcast

    g = Masked(np.array([[0.0, 2.0], [0.0, 3.0]]), np.array([[True, False], [True, False]]))
    summed = unbroadcast(g, np.ones(2))
    np.testing.assert_array_equal(summed.cotangent, [0.0, 5.0])
    np.testing.assert_array_equal(summed.zeros, [True, False])
    assert unbroadcast(g, np.ones((2, 2))) is g
    assert unbroadcast(g, 1.0) == 5.0  # no position of a scalar is zero in every copy: plain


def scaled_triangle_solve(a, b):
    m = 0.25 * np.tanh(a) + np.eye(3)
    return adcore.ops.solve_triangular(m, b, lower=True)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_triangle_solves_masked_cotangent_flows_through_arithmetic(mode):
    # fuzz seed 7: the unread triangle's structural zeros came back Masked into `bv * 0.25`
    a, b = RNG.normal(size=(3, 3)), RNG.normal(size=3)
    got = adcore.jacobian(scaled_triangle_solve, argnums=(0, 1), backend="source", mode=mode)(a, b)
    want = adcore.jacobian(scaled_triangle_solve, argnums=(0, 1), backend="reverse")(a, b)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def test_a_rules_structural_zeros_are_dropped_only_for_a_callee_not_known_to_mask():
    a, b = np.tril(RNG.normal(size=(3, 3))) + 3 * np.eye(3), RNG.normal(size=3)
    _, pullback = call_vjp(adcore.ops.solve_triangular, (a, b), {"lower": True})
    ga = pullback(np.ones(3))[0]  # solve_triangular is listed as masking: its zeros kept, as on the tape
    assert ga.__class__.__name__ == "Masked" and ga.zeros[0, 2]
    _, pullback = call_vjp(lambda m, v: adcore.ops.solve_triangular(m, v, lower=True), (a, b), {})
    assert all(ct.__class__ is np.ndarray for ct in pullback(np.ones(3)))  # through the tape: plain


def cho_solve_lower(a, b):
    return adcore.ops.cho_solve(a, b, lower=True)


def test_a_masking_callees_structural_zeros_are_found_under_an_outer_transformation():
    # forward over the source backend's reverse: the pullback of ones is traced (it was np.asarray'd)
    a, b = np.tril(RNG.normal(size=(3, 3))) + 3 * np.eye(3), RNG.normal(size=3)
    directions = (np.ones((3, 3)), np.ones(3))

    def gradient_of_a(backend):
        return lambda a, b: adcore.vjp(cho_solve_lower, a, b, backend=backend)[1](np.ones(3))[0]

    _, got = adcore.jvp(gradient_of_a("source"), (a, b), directions, backend="forward")
    _, want = adcore.jvp(gradient_of_a("reverse"), (a, b), directions, backend="forward")
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
