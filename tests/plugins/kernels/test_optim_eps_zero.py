"""Optimizers with eps = 0 and a zero gradient, and Adamax with a NaN one (issue 32, class 10).

With eps = 0, a zero gradient where the state is still zero makes a 0/0: torch writes NaN into
the parameter, and the numba kernel raised ZeroDivisionError halfway through it. adcore refuses
with an InvalidValueError before anything changes; a step that divides by nothing runs as before.
"""

from __future__ import annotations

import numpy as np
import pytest
from adcore_kernels import optim

from adcore.errors import AdcoreError

DIVIDING = ["Adam", "AdamW", "Adamax", "RMSprop", "Adagrad", "Adadelta"]


def _snapshot(opt) -> tuple:
    """Every parameter and state array, copied."""
    state = opt.state_dict()["state"]
    return [a.copy() for a in _params(opt)], {
        i: {k: np.copy(v) for k, v in s.items()} for i, s in state.items()
    }


def _params(opt) -> list:
    return [p for g in opt.param_groups for p in g["params"]]


def _assert_same(before: tuple, after: tuple) -> None:
    for a, b in zip(before[0], after[0]):
        np.testing.assert_array_equal(a, b)
    assert before[1].keys() == after[1].keys()
    for i in before[1]:
        assert before[1][i].keys() == after[1][i].keys()
        for k in before[1][i]:
            np.testing.assert_array_equal(before[1][i][k], after[1][i][k])


@pytest.mark.parametrize("name", DIVIDING)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eps_zero_and_a_zero_gradient_is_refused_before_anything_changes(name, dtype):
    w, b = np.array([1.0, 2.0, 3.0], dtype), np.array([0.5, -0.5], dtype)
    opt = getattr(optim, name)([w, b], eps=0.0)
    nonzero = [np.array([0.1, -0.2, 0.3], dtype), np.array([1.0, 2.0], dtype)]
    opt.step(nonzero)  # a step that divides by nothing runs, and fills w's and b's state
    fresh = np.array([4.0, 5.0], dtype)  # a new parameter, whose state starts at 0
    opt.add_param_group({"params": [fresh]})
    before = _snapshot(opt)
    with pytest.raises(AdcoreError, match=rf"{name}\.step: parameter 2: eps=0\.0.*0 by 0.*eps > 0") as caught:
        opt.step([*nonzero, np.array([0.0, 1.0], dtype)])
    assert isinstance(caught.value, ValueError)
    _assert_same(before, _snapshot(opt))  # parameters 0 and 1 were not stepped either
    opt.param_groups[1]["eps"] = 1e-8  # the way out the message names
    opt.step([*nonzero, np.array([0.0, 1.0], dtype)])
    assert all(np.isfinite(p).all() for p in _params(opt))
    assert [opt.state[i]["step"] for i in range(3)] == [2.0, 2.0, 1.0]  # the step ran, for all three


def test_an_eps_that_rounds_to_zero_in_float32_is_refused_too():
    w = np.zeros(2, np.float32)
    opt = optim.Adam([w], eps=1e-50)  # a float64 number, 0 in float32
    with pytest.raises(AdcoreError, match="eps=1e-50, 0 in float32"):
        opt.step([np.zeros(2, np.float32)])
    assert opt.state == {} and np.array_equal(w, [0.0, 0.0])
    opt.step([np.ones(2, np.float32)])  # a nonzero gradient divides by sqrt(v) > 0
    np.testing.assert_allclose(w, [-1e-3, -1e-3], rtol=1e-5)  # Adam's first step is -lr * sign(g)


def test_eps_zero_with_nonzero_gradients_is_still_the_seeds_formula():
    w = np.array([1.0, -2.0])
    opt = optim.Adagrad([w], lr=0.1, eps=0.0)
    opt.step([np.array([3.0, -4.0])])
    # Adagrad's first step: w - lr * g / sqrt(g^2) = w - lr * sign(g)
    np.testing.assert_allclose(w, [0.9, -1.9], rtol=1e-15)


@pytest.mark.parametrize("eps", [1e-8, 0.0])
def test_adamax_with_a_nan_gradient_writes_nan_as_torch_and_does_not_raise(eps):
    # torch: exp_inf = maximum(beta2 * exp_inf, |g| + eps), which propagates NaN; max() dropped it
    # and divided by the 0 left in the state
    w = np.array([1.0, 2.0, 3.0])
    opt = optim.Adamax([w], lr=0.1, eps=eps)
    opt.step([np.array([1.0, np.nan, -2.0])])
    assert np.isnan(w[1]) and np.isnan(opt.state[0]["exp_inf"][1])
    # the other elements: Adamax's first step is w - lr * g / (|g| + eps) = w - lr * sign(g)
    np.testing.assert_allclose(w[[0, 2]], [0.9, 3.1], rtol=1e-7)
