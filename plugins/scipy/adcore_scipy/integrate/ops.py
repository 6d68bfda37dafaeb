"""The scipy.integrate ops: what each computes and where the conformance checks draw its inputs.

`odeint(y0, t, theta, dynamics=..., rtol=..., atol=..., options=...)` is SciPy's odeint of
dy/dt = dynamics(y, t, theta) from y(t[0]) = y0, the solution at every time of t, shape
(len(t), len(y0)). The right-hand side is a static param (a Python callable has no
derivative); y0, t and theta, the flat vector of func's differentiable args, are the inputs.
Users call `adcore_scipy.integrate.odeint(func, y0, t, args)`, which builds dynamics and theta.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.spec import Case, Domain, OpSpec, Sample
from adcore_scipy.integrate.dynamics import UserDynamics
from adcore_scipy.integrate.solve import solve

# The derivative's own solves (the adjoint system backward, the sensitivities forward) use this
# rtol and atol, or the caller's where those are tighter: a derivative is only as accurate as
# the solves it comes from, and SciPy's default (1.49e-8) would leave it at about 1e-7.
DERIVATIVE_TOLERANCE = 1e-10

# SciPy's options that only make sense for the call's own solve (a band of its Jacobian, its
# first step, the critical times ahead of it), not for an augmented system or a backward solve
PRIMAL_ONLY = frozenset({"ml", "mu", "h0", "tcrit"})


def _odeint(
    y0: Any,
    t: Any,
    theta: Any,
    *,
    dynamics: Any,
    rtol: Any = None,
    atol: Any = None,
    options: tuple = (),
    method: str = "lsoda",
) -> np.ndarray:
    """SciPy's odeint (or RK45, solve.py), in the inputs' float dtype (SciPy computes in float64)."""
    dtype = np.result_type(y0, t, theta)
    ys = solve(dynamics, y0, t, theta, rtol, atol, dict(options), method)
    return ys.astype(dtype if dtype.kind == "f" else np.float64, copy=False)


def derivative_solve(rtol: Any, atol: Any, options: tuple, method: str) -> dict:
    """The params of a derivative's solve by `method`: tight tolerances, the options that carry over
    (LSODA's: RK45 takes none)."""
    tight = {
        key: DERIVATIVE_TOLERANCE if value is None else min(DERIVATIVE_TOLERANCE, float(np.min(value)))
        for key, value in (("rtol", rtol), ("atol", atol))
    }
    return {
        **tight,
        "options": () if method == "rk45" else tuple((k, v) for k, v in options if k not in PRIMAL_ONLY),
        "method": method,
    }


# --- where the checks draw inputs -------------------------------------------------------


def damped_oscillator(y: Any, t: Any, k: Any, c: Any) -> Any:
    """y'' = -k y - c y' as a first-order system (position, velocity)."""
    return anp.stack([y[1], -k * y[0] - c * y[1]])


def forced_logistic(y: Any, t: Any, r: Any, a: Any) -> Any:
    """Logistic growth with a periodic forcing: depends on t, nonlinear in y."""
    return r * y * (1 - y) + a * anp.sin(3 * t)


def van_der_pol(y: Any, t: Any) -> Any:
    """The Van der Pol oscillator (mu = 1): no parameters."""
    return anp.stack([y[1], (1 - y[0] ** 2) * y[1] - y[0]])


def scalar_args(func: Any, count: int) -> UserDynamics:
    """Dynamics for func(y, t, *args) whose `count` args are scalars, theta = their values."""
    return UserDynamics(func, (None,) * count, tuple((i, ()) for i in range(count)))


OSCILLATOR = scalar_args(damped_oscillator, 2)
LOGISTIC = scalar_args(forced_logistic, 2)
VAN_DER_POL = scalar_args(van_der_pol, 0)
TIGHT = {"rtol": 1e-12, "atol": 1e-12}  # the impl's solve as exact as finite differences need


def _times(rng: np.random.Generator, count: int, start: float, direction: float, dtype: Any) -> np.ndarray:
    return np.asarray(start + direction * np.cumsum(rng.uniform(0.1, 0.3, count)), dtype=dtype)


def _samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    """An oscillator forward in time, a forced logistic backward in time (t decreasing), Van der
    Pol without parameters (theta empty)."""
    return [
        Sample(
            (
                Domain(-1.0, 1.0).draw(rng, (2,), dtype),
                _times(rng, 5, -0.1, 1.0, dtype),
                np.asarray([rng.uniform(0.5, 3.0), rng.uniform(0.1, 1.0)], dtype=dtype),
            ),
            {"dynamics": OSCILLATOR, **TIGHT},
        ),
        Sample(
            (
                Domain(0.2, 0.8).draw(rng, (1,), dtype),
                _times(rng, 3, 1.5, -1.0, dtype),
                np.asarray([rng.uniform(0.5, 2.0), rng.uniform(-0.5, 0.5)], dtype=dtype),
            ),
            {"dynamics": LOGISTIC, **TIGHT},
        ),
        Sample(
            (Domain(-1.0, 1.0).draw(rng, (2,), dtype), _times(rng, 3, 0.0, 1.0, dtype), np.zeros(0, dtype)),
            {"dynamics": VAN_DER_POL, **TIGHT},
        ),
    ]


odeint = OpSpec(
    "odeint",
    _odeint,
    nin=3,
    samples=_samples,
    params=("dynamics", "rtol", "atol", "options", "method"),
    doc="scipy.integrate.odeint: y at the times t of dy/dt = dynamics(y, t, theta), y(t[0]) = y0",
)


def oscillator_loss(y0: Any, k: Any, c: Any) -> Any:
    """A least-squares loss of a damped oscillator's positions, k and c packed as theta."""
    times = np.linspace(0.0, 2.0, 5, dtype=y0.dtype)
    ys = odeint(y0, times, anp.stack([k, c]), dynamics=OSCILLATOR, **TIGHT)
    return anp.sum((ys[:, 0] - anp.cos(times)) ** 2)


def _loss_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    return [
        Sample(
            (
                Domain(-1.0, 1.0).draw(rng, (2,), dtype),
                Domain(0.5, 3.0).draw(rng, (), dtype),
                Domain(0.1, 1.0).draw(rng, (), dtype),
            )
        )
    ]


OSCILLATOR_LOSS = Case(
    "odeint_oscillator_loss",
    oscillator_loss,
    samples=_loss_samples,
    argnums=(0, 1, 2),
    doc=oscillator_loss.__doc__ or "",
)

OPS: tuple[OpSpec, ...] = (odeint,)
CASES: tuple[Case, ...] = (OSCILLATOR_LOSS,)
