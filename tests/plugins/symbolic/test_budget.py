"""adcore_symbolic.budget and issue 15 class 11: every traced op gets its own definition, so
the long chains that hung finish with work linear in their length and equal to reverse; the
budget bounds work and stops a derivative at the op that passed it, naming reverse; the
where-trap stays closed through the definitions."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from adcore_symbolic import ExpressionTooLargeError, derivative_expr
from adcore_symbolic.budget import WorkBudget, tree_size

import adcore
import adcore.numpy as anp


def square_plus_sine(n):
    """x = x*x + sin(x), n times: hung symbolic at n = 20 (issue 15)."""

    def f(x):
        for _ in range(n):
            x = x * x + anp.sin(x)
        return x

    return f


def damped_sine(n):
    """x = sin(x)*0.5 + x*0.5, n times: hung symbolic at n = 100 (issue 15)."""

    def f(x):
        for _ in range(n):
            x = anp.sin(x) * 0.5 + x * 0.5
        return x

    return f


def _by_hand(step, dstep, x, n):
    """The chain's derivative by the chain rule on numbers: the reference."""
    d = 1.0
    for _ in range(n):
        x, d = step(x), dstep(x) * d
    return d


def test_tree_size_counts_shared_subtrees_each_time():
    x = sp.Symbol("x")
    assert tree_size(x) == 1
    assert (
        tree_size(sp.sin(x) * sp.sin(x) + x) == tree_size(sp.Pow(sp.sin(x), 2)) + 2
    )  # Add, Pow(sin x, 2), x


def test_the_budget_refuses_past_max_nodes_naming_the_op_and_reverse():
    budget = WorkBudget(10)
    budget.charge(10, "sin", "tracing")
    with pytest.raises(ExpressionTooLargeError) as info:
        budget.charge(1, "matmul", "differentiating")
    message = str(info.value)
    for word in ["'matmul'", "differentiating", "max_nodes=10 ", 'backend="reverse"', "max_nodes=..."]:
        assert word in message, f"{word!r} not in {message!r}"
    assert isinstance(info.value, adcore.AdcoreError)


@pytest.mark.parametrize(
    "chain, n, step, dstep, x",
    [
        (square_plus_sine, 40, lambda x: x * x + np.sin(x), lambda x: 2 * x + np.cos(x), -0.5),
        (damped_sine, 300, lambda x: np.sin(x) * 0.5 + x * 0.5, lambda x: np.cos(x) * 0.5 + 0.5, 0.3),
    ],
    ids=["x*x+sin(x)", "sin(x)*0.5+x*0.5"],
)
def test_the_chains_that_hung_are_exact_and_linear(chain, n, step, dstep, x):
    g = adcore.grad(chain(n), backend="symbolic")(x)
    assert g == pytest.approx(_by_hand(step, dstep, x, n), rel=1e-12)
    assert g == pytest.approx(adcore.grad(chain(n), backend="reverse")(x), rel=1e-12)
    # linear: twice the chain, twice the work (the old trees doubled per level)
    half, whole = derivative_expr(chain(n // 2), ()).work, derivative_expr(chain(n), ()).work
    assert 1.9 * half <= whole <= 2.1 * half, (half, whole)


def test_a_chain_past_the_budget_stops_at_an_op_of_the_chain_and_the_next_call_works():
    with pytest.raises(ExpressionTooLargeError) as info:
        adcore.grad(damped_sine(300), backend="symbolic", max_nodes=2000)(0.3)
    message = str(info.value)
    assert any(f"at op '{op}'" in message for op in ("sin", "multiply", "add")), message
    assert 'backend="reverse"' in message
    # as the message says: reverse takes it; symbolic, with a larger budget, agrees
    reverse = adcore.grad(damped_sine(300), backend="reverse")(0.3)
    assert adcore.grad(damped_sine(300), backend="symbolic", max_nodes=10**5)(0.3) == pytest.approx(
        reverse, rel=1e-12
    )


def test_a_sum_or_mean_over_many_elements_costs_linear_work():
    # one Add of n terms, differentiated by each of its n symbols: n small derivatives, not n^2
    def f(v):
        return anp.mean(v[1:] * v[:-1]) + anp.sum(v[::2])

    work = {n: derivative_expr(f, (n,)).work for n in (200, 400)}
    assert work[400] <= 2.1 * work[200], work
    x = np.random.default_rng(1).uniform(-1, 1, 400)
    np.testing.assert_allclose(
        adcore.grad(f, backend="symbolic")(x), adcore.grad(f, backend="reverse")(x), rtol=1e-13
    )


def test_a_matmul_past_the_budget_is_refused_at_tracing():
    a = np.random.default_rng(0).uniform(-1, 1, (569, 30))  # the breast-cancer data's shape
    with pytest.raises(ExpressionTooLargeError, match=r"at op 'matmul' \(tracing\)"):
        adcore.grad(lambda w: anp.sum(anp.tanh(a @ w)), backend="symbolic", max_nodes=20_000)(np.ones(30))
    w = np.full(30, 0.01)
    small = a[:20]
    np.testing.assert_allclose(
        adcore.grad(lambda w: anp.sum(anp.tanh(small @ w)), backend="symbolic")(w),
        adcore.grad(lambda w: anp.sum(anp.tanh(small @ w)), backend="reverse")(w),
        rtol=1e-13,
    )


def test_rk4_steps_are_linear_and_agree_with_reverse():
    def rk4(steps, dt=0.1):
        def field(y):
            return anp.stack([y[1], -9.81 * anp.sin(y[0])])

        def run(y):
            for _ in range(steps):
                k1 = field(y)
                k2 = field(y + dt / 2 * k1)
                k3 = field(y + dt / 2 * k2)
                k4 = field(y + dt * k3)
                y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            return y

        return run

    y0 = np.array([1.0, 0.0])
    np.testing.assert_allclose(
        adcore.jacobian(rk4(10), backend="symbolic")(y0),
        adcore.jacobian(rk4(10), backend="reverse")(y0),
        rtol=1e-12,
    )
    five, ten = derivative_expr(rk4(5), y0).work, derivative_expr(rk4(10), y0).work
    assert ten <= 2.1 * five, (five, ten)


@pytest.mark.parametrize(
    "f",
    [
        lambda v: anp.sum(anp.exp(v) * anp.where(v > 0, anp.log(v), 0.0)),  # the adjoint is not 1
        lambda v: anp.sum(3.0 * anp.where(v > -1, anp.where(v > 0, anp.sqrt(v), 0.0), 0.0)),  # nested
        lambda v: anp.sum(anp.where(v > 0, anp.log(v), 0.0) + anp.where(v > 0.5, anp.log(v), 1.0)),  # twice
    ],
    ids=["scaled", "nested", "two-wheres"],
)
def test_an_untaken_branch_gives_zero_through_the_definitions(f):
    x = np.array([0.0, 2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        g = adcore.grad(f, backend="symbolic")(x)
    assert g[0] == 0.0
    h = 1e-6  # the taken branch at x = 2 by a central difference
    e = np.array([0.0, h])
    with np.errstate(divide="ignore", invalid="ignore"):
        assert g[1] == pytest.approx((f(x + e) - f(x - e)) / (2 * h), rel=1e-6)


def test_nothing_is_differentiated_through_stop_gradient():
    v = np.random.default_rng(2).uniform(-1, 1, 24)
    cut = lambda x: anp.sum(x * adcore.ops.stop_gradient(anp.max(x)))  # noqa: E731
    whole = lambda x: anp.sum(x * anp.max(x))  # noqa: E731
    np.testing.assert_array_equal(adcore.grad(cut, backend="symbolic")(v), np.full(24, v.max()))
    # the max's tie-splitting derivative (24 Piecewise per element) is never built
    assert derivative_expr(cut, v).work < derivative_expr(whole, v).work / 3
