"""One call of SciPy's odeint (LSODA) on plain arrays: the impl of the odeint op.

SciPy is imported when a solve first runs, not when the plugin loads. A solver failure
(LSODA's "excess work done", "repeated error test failures", ...) is SciPy's ODEintWarning:
here it is an InvalidValueError, because the values it leaves behind are not the solution.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.core import Tracer
from adcore.errors import InvalidValueError, UnsupportedFunctionError
from adcore.extend import LazyModule

integrate = LazyModule("scipy.integrate")

# the advice for a func that closes over a value being differentiated
CLOSURE_ADVICE = (
    "odeint's derivative covers y0, t and args only, so that value's derivative would be lost. "
    "Pass the value through args=(...) and take it as an argument of func: func(y, t, *args)."
)


def solve(
    dynamics: Callable[[Any, float, Any], Any],
    y0: Any,
    t: Any,
    theta: Any,
    rtol: Any,
    atol: Any,
    options: dict,
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

    def rhs(y: np.ndarray, s: float) -> Any:
        out = dynamics(y, s, theta)
        if isinstance(out, Tracer):
            raise UnsupportedFunctionError(
                f"odeint: func returned a traced value for plain y, t and args: it uses a value being "
                f"differentiated that is not one of its arguments (a closure, or a global). {CLOSURE_ADVICE}"
            )
        return out

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
