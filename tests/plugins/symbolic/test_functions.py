"""adcore_symbolic.functions: the sympy functions for ops sympy has no exact match for, with
the derivatives docs/conventions.md gives them, and compiled code that is stable at +-1e3."""

from __future__ import annotations

import math
import warnings
from itertools import product

import numpy as np
import pytest
import sympy as sp
from adcore_symbolic import functions as F
from adcore_symbolic.printing import compile_numpy
from adcore_symbolic.program import differentiate

import adcore
import adcore.numpy as anp

x, a, b, c = sp.symbols("x a b c", real=True)
ARGS = (a, b, c)


def _definition_of_sigmoid(u):
    return 1 / (1 + sp.exp(-u))


def _definition_of_softplus(u):
    return sp.log(1 + sp.exp(u))


def _definition_of_logsumexp(*us):
    return sp.log(sp.Add(*(sp.exp(u) for u in us)))


def _spelled_out(expr):
    """expr with sigmoid, softplus and logsumexp replaced by their textbook definitions."""
    return (
        expr.replace(F.logsumexp, _definition_of_logsumexp)
        .replace(F.softplus, _definition_of_softplus)
        .replace(F.sigmoid, _definition_of_sigmoid)
    )


class _Strict:
    """No NumPy warning and no floating-point error other than underflow (docs/conventions.md)."""

    def __enter__(self):
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("error")
        self._errstate = np.errstate(over="raise", invalid="raise", divide="raise")
        self._errstate.__enter__()

    def __exit__(self, *exc):
        self._errstate.__exit__(*exc)
        return self._warnings.__exit__(*exc)


# --- amax / amin: ties split equally -----------------------------------------------


@pytest.mark.parametrize("func, pick", [(F.amax, max), (F.amin, min)])
def test_extremum_value(func, pick):
    for point in [(3, 3, 1), (1, -2, 5), (sp.Rational(1, 3), sp.Rational(1, 2), 0)]:
        assert func(*point) == pick(point)
        assert func(*ARGS).xreplace(dict(zip(ARGS, point))) == pick(point)


@pytest.mark.parametrize(
    "point, weights",
    [
        ((3, 3, 1), (sp.S.Half, sp.S.Half, 0)),
        ((2, 2, 2), (sp.Rational(1, 3),) * 3),
        ((1, 5, 2), (0, 1, 0)),
        ((4, 0, 4), (sp.S.Half, 0, sp.S.Half)),
    ],
)
def test_amax_derivative_splits_among_ties(point, weights):
    at = dict(zip(ARGS, point))
    assert tuple(sp.diff(F.amax(*ARGS), s).xreplace(at) for s in ARGS) == weights
    # amin's ties are amax's ties of the negated point
    negated = {s: -v for s, v in at.items()}
    assert tuple(sp.diff(F.amin(*ARGS), s).xreplace(negated) for s in ARGS) == weights


@pytest.mark.parametrize("func", [F.amax, F.amin])
def test_extremum_weights_sum_to_one(func):
    for point in product([-1, 0, sp.Rational(1, 2), 2], repeat=3):
        at = dict(zip(ARGS, point))
        weights = [sp.diff(func(*ARGS), s).xreplace(at) for s in ARGS]
        assert sum(weights) == 1, point
        assert all(w >= 0 for w in weights)


@pytest.mark.parametrize("func", [F.amax, F.amin])
def test_extremum_of_one_arg_is_the_identity(func):
    assert func(x) == x
    assert sp.diff(func(sp.sin(x)), x) == sp.cos(x)


def test_compiled_extremum_derivatives_split_ties():
    program = differentiate([F.amax(*ARGS), F.amin(*ARGS)], list(ARGS), list(ARGS))
    fn, source = compile_numpy(list(ARGS), program.definitions, program.values + sum(program.derivatives, []))
    assert "amax" not in source and "select" not in source
    pa, pb, pc = (np.array(v, dtype=float) for v in zip((3, 3, 1), (2, 2, 2), (1, 5, 2), (0, 0, 7)))
    big, small, *d = fn(pa, pb, pc)
    np.testing.assert_array_equal(big, np.max([pa, pb, pc], axis=0))
    np.testing.assert_array_equal(small, np.min([pa, pb, pc], axis=0))
    d_max, d_min = np.array(d[:3]), np.array(d[3:])
    np.testing.assert_allclose(d_max[:, 0], [0.5, 0.5, 0])
    np.testing.assert_allclose(d_max[:, 1], [1 / 3] * 3)
    np.testing.assert_allclose(d_min[:, 3], [0.5, 0.5, 0])
    np.testing.assert_allclose(d_max.sum(axis=0), 1)
    np.testing.assert_allclose(d_min.sum(axis=0), 1)


def test_max_of_a_broadcast_scalar_has_derivative_one():
    f = lambda v: anp.max(anp.broadcast_to(v, (3,)))  # noqa: E731
    assert adcore.grad(f, backend="symbolic")(1.5) == adcore.grad(f, backend="reverse")(1.5) == 1.0


# --- sigmoid, softplus, logsumexp --------------------------------------------------


def test_sigmoid_derivative_is_the_analytic_one():
    d = sp.diff(F.sigmoid(x), x)
    assert sp.simplify(_spelled_out(d) - sp.diff(_definition_of_sigmoid(x), x)) == 0
    for v in (-3.5, 0.0, 0.25, 7.0):
        s = 1 / (1 + math.exp(-v))
        assert float(_spelled_out(d).xreplace({x: v})) == pytest.approx(s * (1 - s), rel=1e-14)


def test_softplus_derivative_is_the_sigmoid():
    d = sp.diff(F.softplus(x), x)
    assert sp.simplify(_spelled_out(d) - sp.diff(_definition_of_softplus(x), x)) == 0
    for v in (-3.5, 0.0, 2.0):
        assert float(_spelled_out(d).xreplace({x: v})) == pytest.approx(1 / (1 + math.exp(-v)), rel=1e-14)


def test_logsumexp_derivative_is_the_softmax():
    lse = F.logsumexp(*ARGS)
    point = {a: 0.5, b: -1.25, c: 2.0}
    total = math.log(sum(math.exp(v) for v in point.values()))
    assert float(_spelled_out(lse).xreplace(point)) == pytest.approx(total, rel=1e-15)
    for s in ARGS:
        d = sp.diff(lse, s)
        assert sp.simplify(_spelled_out(d) - sp.diff(_definition_of_logsumexp(*ARGS), s)) == 0
        assert float(_spelled_out(d).xreplace(point)) == pytest.approx(math.exp(point[s] - total), rel=1e-14)


def test_logsumexp_of_one_arg_is_the_arg():
    assert F.logsumexp(x) == x


def test_compiled_sigmoid_softplus_logsumexp_are_stable_at_1e3():
    lse = F.logsumexp(*ARGS)
    outputs = [F.sigmoid(x), F.softplus(x), lse]
    derivatives = [sp.diff(F.sigmoid(x), x), sp.diff(F.softplus(x), x)] + [sp.diff(lse, s) for s in ARGS]
    fn, source = compile_numpy([x, *ARGS], [], outputs + derivatives)
    assert "ops.sigmoid(" in source and "ops.softplus(" in source and "ops.logsumexp(" in source
    v = np.array([-1e3, 1e3, -1e3, 0.0])
    w = np.array([1e3, -1e3, -1e3, 0.0])
    with _Strict():
        sig, soft, lse_value, d_sig, d_soft, *d_lse = fn(v, v, w, v)
    for r in [sig, soft, lse_value, d_sig, d_soft, *d_lse]:
        assert np.all(np.isfinite(r))
    np.testing.assert_allclose(sig, [0.0, 1.0, 0.0, 0.5])
    np.testing.assert_allclose(soft, [0.0, 1e3, 0.0, math.log(2)])
    np.testing.assert_allclose(d_sig, [0.0, 0.0, 0.0, 0.25])
    np.testing.assert_allclose(d_soft, sig)
    # logsumexp of (-1e3, 1e3, -1e3), (1e3, -1e3, 1e3), (-1e3, -1e3, -1e3), (0, 0, 0)
    np.testing.assert_allclose(
        lse_value, [1e3, 1e3 + math.log(2), -1e3 + math.log(3), math.log(3)], rtol=1e-15
    )
    np.testing.assert_allclose(np.array(d_lse).T, [[0, 1, 0], [0.5, 0, 0.5], [1 / 3] * 3, [1 / 3] * 3])


def test_the_backend_differentiates_sigmoid_softplus_logsumexp_at_1e3_without_warnings():
    v = np.array([-1e3, -1.0, 0.0, 2.0, 1e3])

    def f(u):
        return anp.sum(anp.sigmoid(u) + anp.softplus(u)) + anp.logsumexp(u)

    with _Strict():
        g = adcore.grad(f, backend="symbolic")(v)
    s = np.array([0.0, 1 / (1 + math.e), 0.5, 1 / (1 + math.exp(-2)), 1.0])
    softmax = np.array([0, 0, 0, 0, 1.0])
    np.testing.assert_allclose(g, s * (1 - s) + s + softmax, rtol=1e-14, atol=1e-300)


# --- floor, round, stop_gradient: zero derivative ----------------------------------

STEPS = {
    "floor": (F.floor(x), np.floor),
    "round": (F.Round(x, 0), np.round),
    "round to 1 decimal": (F.Round(x, 1), lambda v: np.round(v, 1)),
    "stop_gradient": (F.stop_gradient(x), lambda v: v),
}


@pytest.mark.parametrize("name", STEPS)
def test_step_derivative_is_zero(name):
    expr, _ = STEPS[name]
    assert sp.diff(expr, x) == 0
    assert sp.diff(expr * x, x) == expr
    program = differentiate([sp.sin(expr) + x], [x], [x])
    assert program.closed_form(program.derivatives[0]) == [1]


def test_sympys_own_floor_has_no_derivative_to_compare():
    assert isinstance(sp.diff(sp.floor(x), x), sp.Derivative)  # why functions.floor exists
    assert F.floor(sp.Rational(5, 2)) == 2 and F.floor(sp.Rational(-1, 2)) == -1


@pytest.mark.parametrize("name", STEPS)
def test_step_compiled_values_are_numpys(name):
    expr, reference = STEPS[name]
    fn, _ = compile_numpy([x], [], [expr])
    v = np.array([-2.5, -1.5, -0.5, 0.25, 0.5, 1.5, 2.5, 3.75, 0.35])
    np.testing.assert_array_equal(fn(v)[0], reference(v))


def test_round_is_half_to_even():
    fn, source = compile_numpy([x], [], [F.Round(x, 0)])
    assert "ops.round(" in source
    assert fn(2.5)[0] == 2.0 and fn(3.5)[0] == 4.0 and fn(-0.5)[0] == 0.0


# --- expm1, log1p ----------------------------------------------------------------


def test_expm1_and_log1p_derivatives():
    assert sp.simplify(sp.diff(F.expm1(x), x) - sp.diff(sp.exp(x) - 1, x)) == 0
    assert sp.simplify(sp.diff(F.log1p(x), x) - sp.diff(sp.log(1 + x), x)) == 0
    program = differentiate([F.expm1(F.log1p(x) * 2)], [x], [x])
    (d,) = program.closed_form(program.derivatives[0])
    d = d.replace(F.log1p, lambda u: sp.log(1 + u)).replace(F.expm1, lambda u: sp.exp(u) - 1)
    assert sp.simplify(d - sp.diff((1 + x) ** 2 - 1, x)) == 0


def test_expm1_and_log1p_print_as_numpys_and_keep_small_arguments():
    fn, source = compile_numpy([x], [], [F.expm1(x), F.log1p(x), sp.diff(F.log1p(x), x)])
    assert "numpy.expm1(" in source and "numpy.log1p(" in source
    v = np.array([1e-20, -0.5, 3.0])
    e, lg, dl = fn(v)
    np.testing.assert_array_equal(e, np.expm1(v))
    np.testing.assert_array_equal(lg, np.log1p(v))
    np.testing.assert_allclose(dl, 1 / (1 + v), rtol=1e-15)
    assert e[0] == 1e-20 and lg[0] == 1e-20  # where exp(x) - 1 and log(1 + x) give 0


def test_constant_op_calls_evaluate_so_sympy_can_compare_them():
    # found by the fuzzer: maximum(log(softplus(x - x) + 0.56), softplus(x - x) + 0.56) made
    # sympy's Max compare constants it could not evaluate
    from adcore_symbolic.functions import logsumexp, sigmoid, softplus, stop_gradient

    assert float(sp.N(sigmoid(0))) == 0.5
    assert float(sp.N(softplus(0))) == pytest.approx(np.log(2), rel=1e-15)
    assert float(sp.N(logsumexp(0, 0))) == pytest.approx(np.log(2), rel=1e-15)
    assert float(sp.N(stop_gradient(sp.Rational(3, 2)))) == 1.5
    assert sp.Max(sigmoid(1), softplus(0)) == sigmoid(1)  # 0.731 > 0.693


def test_maximum_of_constants_built_from_op_calls_differentiates():
    def f(x):
        c = adcore.ops.softplus(x - x) + 0.56
        return adcore.ops.maximum(adcore.ops.log(c), c) + x

    assert adcore.grad(f, backend="symbolic")(np.array(2.5)) == 1.0
