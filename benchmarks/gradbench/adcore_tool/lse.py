"""GradBench's lse eval: LogSumExp of a vector, with the max trick, and its gradient."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import adcore
from adcore_tool.backends import options

UNSUPPORTED: dict[str, str] = {
    "symbolic": "the derivative of np.max over n symbols is, per element, its tie indicator over the sum of all n "
    "(a Piecewise each), O(n^2) sympy work: n=40 takes 3.5 s, n=100 passes the 100000-node guard, n=400 takes 91 s to be refused, "
    "and the eval's smallest size, n=2500, has no answer after 120 s",
}


def logsumexp(x: np.ndarray) -> Any:
    """log(sum(exp(x))), computed as max(x) + log(sum(exp(x - max(x)))) so no exp overflows."""
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


def prepare(input: dict[str, Any], backend: str) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    return np.asarray(input["x"], dtype=np.float64), adcore.grad(logsumexp, **options(backend))


def primal(prepared: tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]) -> float:
    x, _ = prepared
    return float(logsumexp(x))


def gradient(prepared: tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]) -> np.ndarray:
    x, grad_logsumexp = prepared
    return grad_logsumexp(x)
