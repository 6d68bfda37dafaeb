"""GradBench's saddle eval: min over x of max over y of |x|^2 - |y|^2, by nested gradient descent.

The functions `rr`, `rf`, `fr`, `ff` name the outer (argmin) and inner (argmax) differentiation's
mode. For the adcore-reverse and adcore-forward tools the letters pick adcore's backends
(r: "reverse", f: "forward"), so both tools answer all four with the same nested computation; the
source tools pick the source backend's modes (mode="reverse" / "forward", its generated adjoint or
tangent code); the symbolic and numeric tools use their own backend at both levels. The outer gradient goes through
the inner argmax's whole descent loop: adcore differentiates the loop as it ran.

`argmin` is Siskind and Pearlmutter's descent, as GradBench's tools write it (Futhark's solver.fut):
steps of eta times the gradient, eta doubled after ten improving steps and halved after a step that
does not improve, until the gradient or the step is shorter than 1e-5.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import adcore
from adcore_tool.backends import options

UNSUPPORTED: dict[str, str] = {
    "symbolic": (
        "the outer gradient goes through the inner argmax's descent loop, whose while and if test traced "
        "values (is f(x - eta * g) < f(x)?), and symbolic traces f with sympy symbols, which have no number "
        "to test (SymbolicControlFlowError); the inner gradient also closes over the outer point, which "
        "symbolic refuses (UnsupportedByBackendError). A descent unrolled a fixed number of times, with "
        "np.where for the tests, could be traced, but it is not the eval's algorithm"
    )
}

MODES = {"r": "reverse", "f": "forward"}
TOLERANCE = 1e-5

ValueAndGradient = Callable[[Callable[[Any], Any]], Callable[[Any], tuple[Any, Any]]]


def value_and_gradient_by(backend: dict[str, Any]) -> ValueAndGradient:
    """f -> the function computing f's value and gradient together with this adcore backend (and its
    options: adcore_tool.backends.options)."""
    return lambda f: adcore.value_and_grad(f, **backend)


def argmin(value_and_gradient: ValueAndGradient, f: Callable[[Any], Any], x: Any) -> Any:
    """The x where f stops decreasing, by gradient descent with an adaptive step from x.

    Each candidate's value and gradient come from one call: the gradient is needed whenever the
    step is accepted, which on these evals is every time (a rejected step would waste one). The
    tests read the plain numbers (adcore.concrete): inside an outer gradient, testing the traced
    values would record ops no result depends on (a third of the inner descent's)."""
    f_and_df = value_and_gradient(f)
    (fx, dfx), eta, improving_steps = f_and_df(x), 1e-5, 0
    while np.sqrt(np.sum(adcore.concrete(dfx) ** 2)) > TOLERANCE:
        if improving_steps == 10:
            eta, improving_steps = 2 * eta, 0
            continue
        x_next = x - eta * dfx
        if np.sqrt(np.sum((adcore.concrete(x) - adcore.concrete(x_next)) ** 2)) <= TOLERANCE:
            break
        fx_next, dfx_next = f_and_df(x_next)
        if adcore.concrete(fx_next) < adcore.concrete(fx):
            x, fx, dfx, improving_steps = x_next, fx_next, dfx_next, improving_steps + 1
        else:
            eta, improving_steps = eta / 2, 0
    return x


def argmax(value_and_gradient: ValueAndGradient, f: Callable[[Any], Any], x: Any) -> Any:
    return argmin(value_and_gradient, lambda y: -f(y), x)


def objective(x: Any, y: Any) -> Any:
    return np.sum(x**2) - np.sum(y**2)


def saddle(outer: ValueAndGradient, inner: ValueAndGradient, start: np.ndarray) -> np.ndarray:
    """x minimising max_y objective(x, y) (the max by an inner descent), then the y maximising it."""

    def max_over_y(x: Any) -> Any:
        return objective(x, argmax(inner, lambda y: objective(x, y), start))

    x = argmin(outer, max_over_y, start)
    y = argmax(outer, lambda y: objective(x, y), start)
    return np.concatenate([x, y])


def prepare(input: dict[str, Any], backend: str) -> tuple[np.ndarray, str]:
    return np.asarray(input["start"], dtype=float), backend


def modes(letters: str, backend: str) -> tuple[ValueAndGradient, ValueAndGradient]:
    """The outer and inner gradient for a function name ("rf": reverse over forward) on a tool's backend."""
    if backend in ("reverse", "forward"):
        return value_and_gradient_by(options(MODES[letters[0]])), value_and_gradient_by(
            options(MODES[letters[1]])
        )
    tool = options(backend)
    if tool["backend"] == "source":  # one backend with both modes
        return value_and_gradient_by(tool | {"mode": MODES[letters[0]]}), value_and_gradient_by(
            tool | {"mode": MODES[letters[1]]}
        )
    return value_and_gradient_by(tool), value_and_gradient_by(tool)


def rr(prepared: tuple[np.ndarray, str]) -> np.ndarray:
    start, backend = prepared
    return saddle(*modes("rr", backend), start)


def rf(prepared: tuple[np.ndarray, str]) -> np.ndarray:
    start, backend = prepared
    return saddle(*modes("rf", backend), start)


def fr(prepared: tuple[np.ndarray, str]) -> np.ndarray:
    start, backend = prepared
    return saddle(*modes("fr", backend), start)


def ff(prepared: tuple[np.ndarray, str]) -> np.ndarray:
    start, backend = prepared
    return saddle(*modes("ff", backend), start)
