"""GradBench's ode eval: s fixed steps of classic Runge-Kutta on y0' = x0, yi' = xi * y(i-1), y(0) = 0,
to t = 2; the gradient is that of the last component of y(2) with respect to x."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore
from adcore_tool.backends import options

UNSUPPORTED: dict[str, str] = {}

T_FINAL = 2.0


def ode_fun(x: Any, y: Any) -> Any:
    """The right-hand side: x0 for the first component, xi * y(i-1) for the others."""
    return x * np.concatenate((np.ones(1), y[:-1]))


def runge_kutta(x: Any, s: int) -> Any:
    """y(2) after s steps of RK4 from y(0) = 0."""
    h = T_FINAL / s
    y = np.zeros(len(x))
    for _ in range(s):
        k1 = ode_fun(x, y)
        k2 = ode_fun(x, y + h / 2 * k1)
        k3 = ode_fun(x, y + h / 2 * k2)
        k4 = ode_fun(x, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def last_component(x: Any, s: int) -> Any:
    return runge_kutta(x, s)[-1]


def prepare(input: dict[str, Any], backend: str) -> tuple[np.ndarray, int, Any]:
    gradient_of_last = adcore.grad(last_component, **options(backend))
    return np.asarray(input["x"], dtype=np.float64), int(input["s"]), gradient_of_last


def primal(prepared: tuple[np.ndarray, int, Any]) -> np.ndarray:
    x, s, _ = prepared
    return runge_kutta(x, s)


def gradient(prepared: tuple[np.ndarray, int, Any]) -> np.ndarray:
    x, s, gradient_of_last = prepared
    return gradient_of_last(x, s)
