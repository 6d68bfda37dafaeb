"""GradBench's particle eval: the control w that makes a charged particle's path hit the origin.

The particle starts at (0, 8) with velocity (0.75, 0) in the field of unit charges at (10, 10 - w)
and (10, 0); naive Euler steps (dt = 0.1), the force the potential's gradient, run until the next
step would cross the x axis, and a linear interpolation to the axis gives where it lands. The
squared miss distance is minimised over w by saddle's gradient descent (`argmin`). The functions
`rr`, `rf`, `fr`, `ff` name the outer (over w) and inner (the force) differentiation's mode; as in
saddle, the adcore-reverse and adcore-forward tools map the letters to adcore's backends (r:
"reverse", f: "forward"), the source tools to the source backend's modes, and the symbolic and
numeric tools use their own backend at both levels.
The outer gradient goes through the whole trajectory loop, force evaluations included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore
import adcore.numpy as anp
from adcore_tool.saddle import ValueAndGradient, argmin, modes

UNSUPPORTED: dict[str, str] = {
    "symbolic": (
        "the outer gradient goes through the Euler loop, which runs until the traced position crosses "
        "y = 0, and through the descent's tests; symbolic traces f with sympy symbols, which have no number "
        "to test (SymbolicControlFlowError), and the force's gradient closes over the charge that w moves, "
        "which symbolic refuses (UnsupportedByBackendError)"
    )
}

TIME_STEP = 0.1


def miss(w: Any, value_and_gradient: ValueAndGradient) -> Any:
    """The squared distance from the origin at which the particle's path, for control w, crosses y = 0."""
    charges = anp.array([[10.0, 10.0 - w], [10.0, 0.0]])

    def potential(x: Any) -> Any:
        return np.sum(1 / np.sqrt(np.sum((x - charges) ** 2, axis=1)))

    potential_and_gradient = value_and_gradient(potential)
    x, velocity = np.array([0.0, 8.0]), np.array([0.75, 0.0])
    while True:
        x_next = x + TIME_STEP * velocity
        if adcore.concrete(x_next)[1] <= 0:  # the plain number: testing x_next would record an op
            break
        _, gradient = potential_and_gradient(x)  # the force is minus the potential's gradient
        x, velocity = x_next, velocity - TIME_STEP * gradient
    time_to_axis = -x[1] / velocity[1]
    return (x[0] + time_to_axis * velocity[0]) ** 2


def particle(outer: ValueAndGradient, inner: ValueAndGradient, w0: float) -> float:
    w = argmin(outer, lambda w: miss(w[0], inner), np.array([w0]))
    return float(w[0])


def prepare(input: dict[str, Any], backend: str) -> tuple[float, str]:
    return float(input["w"]), backend


def rr(prepared: tuple[float, str]) -> float:
    w0, backend = prepared
    return particle(*modes("rr", backend), w0)


def rf(prepared: tuple[float, str]) -> float:
    w0, backend = prepared
    return particle(*modes("rf", backend), w0)


def fr(prepared: tuple[float, str]) -> float:
    w0, backend = prepared
    return particle(*modes("fr", backend), w0)


def ff(prepared: tuple[float, str]) -> float:
    w0, backend = prepared
    return particle(*modes("ff", backend), w0)
