"""One solve on plain arrays, the impl of the odeint op: SciPy's odeint (LSODA) or its RK45.

"lsoda" is scipy.integrate.odeint, what users call. "rk45" (Dormand-Prince, SciPy's RK45
stepper, from t[0] to t[-1] through each time, its first step the first interval) is for the
adjoint's backward solves, one per output interval: LSODA restarts at order 1 on each and
takes ~30 evaluations of the adjoint system per interval at 1e-10 where the outputs are dense,
a one-step method starting with the whole interval takes 7. It is explicit: on a stiff system
it takes small steps (slow, not wrong).

SciPy is imported when a solve first runs, not when the plugin loads. A solver failure
(LSODA's "excess work done", RK45's step size underflow, ...) is an InvalidValueError, because
the values it leaves behind are not the solution.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.core import Tracer
from adcore.errors import InvalidValueError, UnsupportedFunctionError
from adcore.extend import LazyModule
from adcore_scipy.integrate.dynamics import Dynamics

integrate = LazyModule("scipy.integrate")

DEFAULT_TOLERANCE = 1.49012e-8  # odeint's rtol and atol when none is given

# the advice for a func that closes over a value being differentiated
CLOSURE_ADVICE = (
    "odeint's derivative covers y0, t and args only, so that value's derivative would be lost. "
    "Pass the value through args=(...) and take it as an argument of func: func(y, t, *args)."
)


def solve(
    dynamics: Dynamics,
    y0: Any,
    t: Any,
    theta: Any,
    rtol: Any,
    atol: Any,
    options: dict,
    method: str = "lsoda",
) -> np.ndarray:
    """y at each time of `t` (shape (len(t), len(y0))), float64, for dy/dt = dynamics(y, t, theta)."""
    y0 = np.asarray(y0, dtype=np.float64).reshape(-1)
    t = np.asarray(t, dtype=np.float64).reshape(-1)
    theta = np.asarray(theta, dtype=np.float64)
    steps = np.diff(t)
    if not (np.all(steps >= 0) or np.all(steps <= 0)) or not np.all(np.isfinite(t)):
        raise InvalidValueError(
            f"odeint: t must be finite and monotonically increasing or decreasing (SciPy's contract), got {t}"
        )

    parts = dynamics.unpack(theta)  # theta is constant through the solve: split it once

    def rhs(y: np.ndarray, s: float) -> Any:
        out = dynamics.rate(y, s, parts)
        if isinstance(out, Tracer):
            raise UnsupportedFunctionError(
                f"odeint: func returned a traced value for plain y, t and args: it uses a value being "
                f"differentiated that is not one of its arguments (a closure, or a global). {CLOSURE_ADVICE}"
            )
        return out

    if method == "rk45":
        return _rk45(rhs, y0, t, *(DEFAULT_TOLERANCE if x is None else np.asarray(x) for x in (rtol, atol)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", integrate.ODEintWarning)
        try:
            return integrate.odeint(rhs, y0, t, rtol=rtol, atol=atol, **options)
        except integrate.ODEintWarning as e:
            raise InvalidValueError(
                f"odeint: the solver failed ({e}); its values would not be the solution. Give it more "
                "steps per output interval (mxstep=...), loosen rtol/atol, or check func for a "
                "singularity in the interval"
            ) from None


def _rk45(
    rhs: Callable[[np.ndarray, float], Any], y0: np.ndarray, t: np.ndarray, rtol: Any, atol: Any
) -> np.ndarray:
    """y at each time of t by SciPy's RK45, each interval begun with its own length as the step."""
    out = np.empty((t.shape[0], y0.shape[0]))
    out[0] = y = y0
    for i in range(1, t.shape[0]):
        if t[i] != t[i - 1]:
            stepper = integrate.RK45(
                lambda s, z: rhs(z, s),
                t[i - 1],
                y,
                t[i],
                rtol=rtol,
                atol=atol,
                first_step=abs(t[i] - t[i - 1]),
            )
            message = None
            while stepper.status == "running":
                message = stepper.step()  # the reason, when it fails (a solver keeps none)
            if stepper.status == "failed":
                raise InvalidValueError(
                    f"odeint: reverse mode's backward (adjoint) solve failed between t = {t[i - 1]} and "
                    f"{t[i]} ({message}); its values would not be the derivative. A stiff or strongly "
                    "damped system grows without bound when solved backwards in time: differentiate it "
                    "with backend='forward' (forward sensitivities, solved forwards as the call is)"
                )
            y = stepper.y
            # a SciPy solver refers to itself through its fun closures: dropping its attributes
            # frees it (its stage arrays) now, not at the cycle collector's next run, one per interval
            vars(stepper).clear()
        out[i] = y
    return out
