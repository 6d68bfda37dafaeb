"""adcore.results: what a derivative call hands back (here: detached, the eager values out of it)."""

from __future__ import annotations

import numpy as np
import pytest

import adcore

X = np.array([1.0, 2.0])


@pytest.mark.parametrize("outer", ["reverse", "forward"])
@pytest.mark.parametrize("inner", ["reverse", "forward"])
def test_a_nested_value_and_grad_hands_both_its_value_and_its_gradient_to_the_outer_derivative(outer, inner):
    # detached takes a (value, gradient) tuple of tracers apart without tree.map: neither may lose
    # the outer trace, or the outer derivative would miss its share
    def f(w):
        value, gradient = adcore.value_and_grad(lambda x: np.sum(w * x**2), backend=inner)(X)
        return value + np.sum(gradient)  # w sum(x^2) + sum(2 w x)

    assert adcore.grad(f, backend=outer)(np.array(3.0)) == 5.0 + 6.0
