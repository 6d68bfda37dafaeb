"""Reverse-mode odeint of a stiff system: a typed error naming the way out (issue 32, class 10).

The adjoint solves y backwards in time, where y' = -k y grows like exp(k t): RK45's step size
underflows. The error path read the solver's `message`, which RK45 objects do not keep: an
AttributeError. Forward mode solves forwards and gives the derivative.

RK45 needs ~17,000 steps (seconds) to overflow on this system whatever k is: its steps shrink as
1/k. The test bounds the stepper at a few hundred steps, failing the way RK45 does (status
'failed' and the reason step() returns), so the same error path is checked in well under a second.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate
from adcore_scipy.integrate import odeint

import adcore
from adcore.errors import AdcoreError

T = np.linspace(0.0, 1.0, 5)
Y0 = np.array([1.0, 2.0])


def _decay(y, t, k):
    return -k * y


def _total(k):
    return np.sum(odeint(_decay, Y0, T, args=(k,)))


def _exact_derivative(k):
    # y = y0 exp(-k t): d/dk sum(y) = sum(-t y0 exp(-k t)), analytic
    return np.sum(-T[:, None] * Y0 * np.exp(-k * T[:, None]))


STEP_BOUND = 300


class _BoundedRK45(scipy.integrate.RK45):
    """SciPy's RK45, failing as it does (status 'failed', the reason returned) after STEP_BOUND steps."""

    steps_taken = 0

    def step(self):
        if self.steps_taken >= STEP_BOUND:
            self.status = "failed"
            return f"more than {STEP_BOUND} steps (the test's bound)"
        self.steps_taken += 1
        return super().step()


@pytest.fixture
def bounded_rk45(monkeypatch):
    monkeypatch.setattr(scipy.integrate, "RK45", _BoundedRK45)


def test_reverse_mode_on_a_stiff_system_is_refused_naming_forward_mode(bounded_rk45):
    with pytest.raises(AdcoreError, match=r"backward \(adjoint\) solve failed.*backend='forward'") as caught:
        adcore.grad(_total, backend="reverse")(1e6)
    assert isinstance(caught.value, ValueError)
    # the next call works, and forward mode is the way out the message names
    np.testing.assert_allclose(adcore.grad(_total, backend="reverse")(1.0), _exact_derivative(1.0), rtol=1e-6)
    np.testing.assert_allclose(
        adcore.grad(_total, backend="forward")(1e6), _exact_derivative(1e6), atol=1e-30
    )
