"""GradBench's kmeans eval: the k-means cost and the Newton direction J / diag(H) for the centroids.

cost(C) = sum_i min_j |P_i - C_j|^2. Away from ties each point i is assigned to one centroid a(i), and
the cost is sum_i |P_i - C_a(i)|^2 near C, a quadratic: its gradient for centroid j is
2 sum_{i: a(i)=j} (C_j - P_i) and its Hessian is block diagonal with 2 n_j I for centroid j (n_j
points assigned to it, no coupling between centroids or between coordinates). H is diagonal, so
H @ ones is its diagonal: one Hessian-vector product along ones gives every entry, and the forward
derivative of the gradient along ones gives the gradient and that product in one pass (as GradBench's
jax tool does). The eval guarantees every centroid has a point, so no diagonal entry is zero.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import adcore
from adcore_tool.backends import options as tool_options
from adcore_tool.gmm import forward_chunk

UNSUPPORTED: dict[str, str] = {
    "symbolic": (
        "sympy traces the cost element by element: the (k, n) distances at the smallest size (k=10, n=1000, "
        "d=8) are a matmul of n*k*d = 80000 products, past the backend's 10^5-node guard with the rest of "
        "the cost, and with the guard lifted the gradient alone had not finished after 200 s"
    ),
}

# The derivative of the gradient along ones: forward mode over the tool's backend's gradient, as
# adcore.hvp composes it; backends that do not trace take their own derivative of their gradient.
OUTER = {
    "reverse": "forward",
    "forward": "forward",
    "numeric": "numeric",
    "symbolic": "symbolic",
    "source": "forward",  # (the source backend cannot read adcore's gradient function's source)
    "source-compiled": "forward",
}


def cost_of(points: np.ndarray) -> Callable[[Any], Any]:
    """The k-means cost of these points as a function of the centroids."""
    squared_points = np.sum(points**2, axis=1)[None, :]

    def cost(centroids):
        # |p - c|^2 = |p|^2 + |c|^2 - 2 p.c for every pair, without an (n, k, d) array; laid out (k, n),
        # as GradBench's tools do, so the min runs across k rows of n (NumPy is slow along a short last axis)
        distances = squared_points + np.sum(centroids**2, axis=1)[:, None] - 2 * (centroids @ points.T)
        return np.sum(np.min(distances, axis=0))

    return cost


@dataclass
class Problem:
    """One kmeans input as arrays, with the cost and the gradient-and-curvature function built once."""

    centroids: np.ndarray
    cost: Callable[[Any], Any]
    gradient_and_curvature: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def prepare(input: dict[str, Any], backend: str) -> Problem:
    points = np.asarray(input["points"], dtype=np.float64)
    centroids = np.asarray(input["centroids"], dtype=np.float64)
    cost = cost_of(points)
    options = (
        {"chunk_size": forward_chunk(points.shape[0] * centroids.shape[0])} if backend == "forward" else {}
    )
    gradient = adcore.grad(cost, **tool_options(backend), **options)

    def gradient_and_curvature(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(grad cost, H @ ones) at c: the gradient and the Hessian's diagonal."""
        return adcore.jvp(gradient, (c,), (np.ones_like(c),), backend=OUTER[backend])

    return Problem(centroids, cost, gradient_and_curvature)


def cost(problem: Problem) -> float:
    return float(problem.cost(problem.centroids))


def dir(problem: Problem) -> np.ndarray:
    gradient, diagonal = problem.gradient_and_curvature(problem.centroids)
    return gradient / diagonal
