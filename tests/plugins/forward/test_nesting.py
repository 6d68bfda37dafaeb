"""Nested derivatives without perturbation confusion, for every mix of forward and reverse.

Each transformation opens its own level (DESIGN.md, Tracing), so the perturbation of an
outer derivative is a constant to an inner one. The classic test (Siskind & Pearlmutter,
"Perturbation confusion and referential transparency"):

    d/dx [ x · (d/dy (x + y))(y=1) ] at x = 2

is 1, since d/dy (x + y) = 1; an implementation that mixes up the two perturbations
counts x's tangent in the inner derivative as well and returns 2.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.core import _stack

BACKENDS = ["forward", "reverse"]
PAIRS = list(itertools.product(BACKENDS, repeat=2))
TRIPLES = list(itertools.product(BACKENDS, repeat=3))


def _ids(combo):
    return "-over-".join(combo)


PAIR_IDS = [_ids(c) for c in PAIRS]
TRIPLE_IDS = [_ids(c) for c in TRIPLES]


def D(f, backend):
    """The derivative of a scalar function of one scalar, by `backend`."""
    return adcore.grad(f, backend=backend)


def Djvp(f, backend):
    """The same derivative, as a JVP along 1."""
    return lambda x: adcore.jvp(f, (x,), (1.0,), backend=backend)[1]


@pytest.fixture(autouse=True)
def _stack_is_clean_around_each_test():
    assert len(_stack()) == 0
    yield
    assert len(_stack()) == 0


# --- the classic test -----------------------------------------------------------------------------


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
def test_classic_perturbation_confusion(outer, inner):
    def g(x):
        return x * D(lambda y: x + y, inner)(1.0)

    assert D(g, outer)(2.0) == 1.0


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("x", [-1.5, 0.0, 2.0, 7.25])
def test_classic_perturbation_confusion_at_other_points(outer, inner, x):
    # the answer is 1 wherever it is taken; a confused 2 would not depend on x either
    def g(x):
        return x * D(lambda y: x + y, inner)(1.0)

    assert D(g, outer)(x) == 1.0
    assert g(x) == x  # and the primal is undisturbed


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
def test_classic_the_other_way_round(outer, inner):
    # d/dy [ y · (d/dx (x·y))(x=1) ] = d/dy [y · y] = 2y: the inner derivative depends on the outer variable
    def g(y):
        return y * D(lambda x: x * y, inner)(1.0)

    assert D(g, outer)(3.0) == pytest.approx(6.0, rel=1e-15)


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
def test_classic_through_jvp(outer, inner):
    def g(x):
        return x * Djvp(lambda y: x + y, inner)(1.0)

    assert Djvp(g, outer)(2.0) == 1.0


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("outer_kind, inner_kind", [("grad", "jvp"), ("jvp", "grad")])
def test_classic_mixing_grad_and_jvp(outer, inner, outer_kind, inner_kind):
    kinds = {"grad": D, "jvp": Djvp}

    def g(x):
        return x * kinds[inner_kind](lambda y: x + y, inner)(1.0)

    assert kinds[outer_kind](g, outer)(2.0) == 1.0


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
def test_inner_function_returning_the_outer_variable_untouched(outer, inner):
    # d/dy x = 0 although the inner function's output is the outer tracer itself
    def g(x):
        return x + x * D(lambda y: x, inner)(1.0)

    assert D(g, outer)(2.0) == 1.0


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
def test_inner_identity_at_the_outer_variable(outer, inner):
    # d/dy y = 1 at y = x: g(x) = x, whatever the point is a tracer of
    assert D(lambda x: x * D(lambda y: y, inner)(x), outer)(2.0) == 1.0


# --- three levels ---------------------------------------------------------------------------------


@pytest.mark.parametrize("b1, b2, b3", TRIPLES, ids=TRIPLE_IDS)
def test_three_levels_of_the_classic(b1, b2, b3):
    # d/dx [ x · d/dy [ y · d/dz (x + y + z) ] ] = d/dx [ x · d/dy [ y ] ] = 1
    def h(x):
        def g(y):
            return y * D(lambda z: x + y + z, b3)(1.0)

        return x * D(g, b2)(1.0)

    assert D(h, b1)(2.0) == 1.0


@pytest.mark.parametrize("b1, b2, b3", TRIPLES, ids=TRIPLE_IDS)
def test_three_levels_where_each_derivative_depends_on_the_outer_variables(b1, b2, b3):
    # d/dz (x y z) = x y;  d/dy [y · x y] = 2 x y, at y = 1: 2x;  d/dx [x · 2x] = 4x
    def h(x):
        def g(y):
            return y * D(lambda z: x * y * z, b3)(1.0)

        return x * D(g, b2)(1.0)

    assert D(h, b1)(2.0) == pytest.approx(8.0, rel=1e-15)
    assert D(h, b1)(-0.75) == pytest.approx(-3.0, rel=1e-15)


@pytest.mark.parametrize("b1, b2, b3", TRIPLES, ids=TRIPLE_IDS)
def test_three_levels_through_jvp(b1, b2, b3):
    # the same as above with every derivative a JVP
    def h(x):
        def g(y):
            return y * Djvp(lambda z: x * y * z, b3)(1.0)

        return x * Djvp(g, b2)(1.0)

    assert Djvp(h, b1)(2.0) == pytest.approx(8.0, rel=1e-15)


@pytest.mark.parametrize("b1, b2, b3", TRIPLES, ids=TRIPLE_IDS)
def test_third_derivative_by_three_nested_backends(b1, b2, b3):
    # d³/dx³ sin(x) = -cos(x): the same variable at every level
    d3 = D(D(D(anp.sin, b3), b2), b1)
    assert d3(0.9) == pytest.approx(-np.cos(0.9), rel=1e-14)


# --- the inner variable closes over the outer one -------------------------------------------------


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("x", [-1.0, 0.5, 3.0])
def test_inner_derivative_taken_at_the_outer_variable(outer, inner, x):
    # d/dx [ x · (d/dy (x·y))(y=x) ] = d/dx [x · x] = 2x: the inner point is the outer tracer
    def g(x):
        return x * D(lambda y: x * y, inner)(x)

    assert D(g, outer)(x) == pytest.approx(2 * x, rel=1e-15)


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("x", [-1.0, 0.5, 3.0])
def test_inner_derivative_depends_on_both_at_the_outer_variable(outer, inner, x):
    # d/dy (x y²) = 2 x y, at y = x: 2x², whose derivative is 4x (a confused one gives 6x)
    def g(x):
        return D(lambda y: x * y**2, inner)(x)

    assert D(g, outer)(x) == pytest.approx(4 * x, rel=1e-15)


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
def test_inner_jvp_at_the_outer_variable(outer, inner):
    def g(x):
        return x * Djvp(lambda y: x * y, inner)(x)

    assert D(g, outer)(3.0) == pytest.approx(6.0, rel=1e-15)
    assert Djvp(g, outer)(3.0) == pytest.approx(6.0, rel=1e-15)


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
def test_nested_on_vectors(outer, inner):
    # g(x) = sum(x * ∇_y (x·y)) at y = x, = sum(x * x): gradient 2x
    x = np.array([0.5, -2.0, 1.5])

    def g(x):
        return anp.sum(x * adcore.grad(lambda y: anp.sum(x * y), backend=inner)(x))

    np.testing.assert_allclose(adcore.grad(g, backend=outer)(x), 2 * x, rtol=1e-15)


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
def test_nested_jacobian_of_gradient_is_the_hessian(outer, inner):
    # f = sum(x**3) + x0 x1: H = diag(6x) + [[0, 1], [1, 0]]
    x = np.array([0.7, -1.2])
    gradient = adcore.grad(lambda v: anp.sum(v**3) + v[0] * v[1], backend=inner)
    hess = adcore.jacobian(gradient, backend=outer)(x)
    np.testing.assert_allclose(hess, np.diag(6 * x) + np.array([[0.0, 1.0], [1.0, 0.0]]), rtol=1e-14)


# --- the trace stack after an error ---------------------------------------------------------------


class Boom(Exception):
    pass


def _raise(_):
    raise Boom


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
def test_stack_is_clean_after_the_inner_function_raises(outer, inner):
    def g(x):
        return x * D(_raise, inner)(1.0)

    with pytest.raises(Boom):
        D(g, outer)(2.0)
    assert len(_stack()) == 0

    # the next nested call works and gets the right answer
    def ok(x):
        return x * D(lambda y: x + y, inner)(1.0)

    assert D(ok, outer)(2.0) == 1.0


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
def test_stack_is_clean_after_the_outer_function_raises_after_an_inner_call(outer, inner):
    def g(x):
        x * D(lambda y: x * y, inner)(1.0)
        raise Boom

    with pytest.raises(Boom):
        D(g, outer)(2.0)
    assert len(_stack()) == 0
    assert D(lambda x: x * D(lambda y: x * y, inner)(x), outer)(1.5) == pytest.approx(3.0)


@pytest.mark.parametrize("b1, b2, b3", TRIPLES, ids=TRIPLE_IDS)
def test_stack_is_clean_after_the_innermost_of_three_raises(b1, b2, b3):
    depth = []

    def innermost(z):
        depth.append(len(_stack()))
        raise Boom

    def h(x):
        return x * D(lambda y: y * D(innermost, b3)(1.0), b2)(1.0)

    with pytest.raises(Boom):
        D(h, b1)(2.0)
    assert depth == [3]  # three transformations were open when it raised
    assert len(_stack()) == 0

    def h_ok(x):
        return x * D(lambda y: y * D(lambda z: x + y + z, b3)(1.0), b2)(1.0)

    assert D(h_ok, b1)(2.0) == 1.0


@pytest.mark.parametrize("outer, inner", PAIRS, ids=PAIR_IDS)
def test_stack_is_clean_after_an_error_caught_inside_the_outer_function(outer, inner):
    # the inner derivative fails and f recovers: the outer derivative still comes out right
    def g(x):
        try:
            D(_raise, inner)(1.0)
        except Boom:
            pass
        return x * D(lambda y: x * y, inner)(1.0)  # x², derivative 2x

    assert D(g, outer)(2.5) == pytest.approx(5.0, rel=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_stack_depth_seen_from_inside_each_level(backend):
    depths = []

    def f(x):
        depths.append(len(_stack()))

        def g(y):
            depths.append(len(_stack()))
            return x * y

        return D(g, backend)(x)

    D(f, backend)(1.0)
    assert depths == [1, 2]
    assert len(_stack()) == 0


def test_stack_is_clean_after_a_jvp_raises():
    with pytest.raises(Boom):
        adcore.jvp(lambda x: x * Djvp(_raise, "forward")(x), (1.0,), (1.0,))
    assert len(_stack()) == 0
    assert adcore.jvp(lambda x: x * x, (3.0,), (1.0,))[1] == 6.0
