"""GradBench's gmm eval: the log posterior of a Gaussian mixture with a Wishart prior, and its gradient.

The objective is written vectorized over the n points and k components, as the eval's README writes it:
each component's triangular factor Q_k has exp(q_k) on its diagonal and l_k below it (column by
column), beta[k, i] = alpha_k + sum(q_k) - |Q_k (x_i - mu_k)|^2 / 2, and the likelihood of each point
is a logsumexp over the components. The points are laid out last, (d, n), so Q_k (x_i - mu_k) for all
i is one matrix product per component and every reduction runs along a long axis (NumPy reduces
slowly along a short last axis: 30x slower over d=2 than over n=1000).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import multigammaln

import adcore
import adcore.numpy as anp
from adcore_tool.backends import options as tool_options

UNSUPPORTED: dict[str, str] = {
    "symbolic": (
        "sympy traces the objective element by element: already at the smallest size (d=2, k=5, n=1000) "
        "the n*k*d^2 terms pass the backend's 10^5-node guard, and with the guard lifted tracing and "
        "compiling take 34 s; the work grows with k*d^2"
    ),
}


def lower_index(d: int) -> np.ndarray:
    """(d, d) indices into [0, l_1, l_2, ...]: l fills the strictly lower triangle column by column, 0 elsewhere."""
    index = np.zeros((d, d), dtype=np.intp)
    rows = [row for column in range(d) for row in range(column + 1, d)]
    columns = [column for column in range(d) for _ in range(column + 1, d)]
    index[rows, columns] = np.arange(1, len(rows) + 1)
    return index


def log_posterior(alpha, mu, q, lower, points: np.ndarray, m: int, gamma: float, index: np.ndarray):
    """The eval's objective F_X(alpha, mu, q, l) for the points as columns, (d, n), as its README's
    Implementation writes it; `lower` is l, the entries below Q's diagonal."""
    d, n = points.shape
    k = alpha.shape[0]
    sum_q = np.sum(q, axis=1)  # log det Q_k
    below = np.concatenate([np.zeros((k, 1)), lower], axis=1)[:, index]  # gathered from [0, l_k]
    factors = below + np.exp(q)[:, :, None] * np.eye(d)  # (k, d, d): Q_k
    centered = points - mu[:, :, None]  # (k, d, n): x_i - mu_k
    squared_norms = np.sum((factors @ centered) ** 2, axis=1)  # (k, n): |Q_k (x_i - mu_k)|^2
    beta = (alpha + sum_q)[:, None] - 0.5 * squared_norms
    log_likelihood = np.sum(anp.logsumexp(beta, axis=0)) - n * (
        0.5 * d * np.log(2 * np.pi) + anp.logsumexp(alpha)
    )
    dof = d + m + 1
    log_prior = (
        k * (dof * d * np.log(gamma / np.sqrt(2)) - multigammaln(0.5 * dof, d))
        - 0.5 * gamma**2 * np.sum(factors**2)  # |Q_k|_F^2, summed over k
        + m * np.sum(sum_q)
    )
    return log_likelihood + log_prior


def forward_chunk(largest: int) -> int:
    """Tangent directions per forward pass, so an intermediate of `largest` numbers carries at most
    2^24 tangent numbers (128 MiB): forward mode's default takes every direction at once."""
    return max(1, 2**24 // largest)


@dataclass
class Problem:
    """One gmm input as arrays: the independents, the data and the gradient built once."""

    independent: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    fixed: tuple[np.ndarray, int, float, np.ndarray]
    gradient: Callable[..., tuple[np.ndarray, ...]]


def prepare(input: dict[str, Any], backend: str) -> Problem:
    d, k = input["d"], input["k"]
    independent = (
        np.asarray(input["alpha"], dtype=np.float64),
        np.asarray(input["mu"], dtype=np.float64).reshape(k, d),
        np.asarray(input["q"], dtype=np.float64).reshape(k, d),
        np.asarray(input["l"], dtype=np.float64).reshape(k, d * (d - 1) // 2),
    )
    points = np.ascontiguousarray(np.asarray(input["x"], dtype=np.float64).reshape(input["n"], d).T)
    fixed = (points, int(input["m"]), float(input["gamma"]), lower_index(d))
    options = {"chunk_size": forward_chunk(input["n"] * k * d)} if backend == "forward" else {}
    gradient = adcore.grad(log_posterior, argnums=(0, 1, 2, 3), **tool_options(backend), **options)
    return Problem(independent, fixed, gradient)


def objective(problem: Problem) -> float:
    return float(log_posterior(*problem.independent, *problem.fixed))


def jacobian(problem: Problem) -> dict[str, np.ndarray]:
    alpha, mu, q, lower = problem.gradient(*problem.independent, *problem.fixed)
    return {"alpha": alpha, "mu": mu, "q": q, "l": lower}
