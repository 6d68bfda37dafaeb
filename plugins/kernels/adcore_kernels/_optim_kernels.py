"""The nine optimizers' update kernels: one fused numba loop each, updating in place.

Imported by `adcore_kernels.optim` on an optimizer's first `.step()`, so that loading the
plugin never imports numba. Every kernel takes the flat (1-D, C-contiguous) views of one
parameter `p`, its gradient `g` and its state arrays, all of one dtype (float32 or
float64), then the scalar hyperparameters already converted to that dtype by the caller
(so float32 arithmetic stays float32). It reads and writes each element once: one pass
over memory for the parameter and all of its state. Formulas: see the classes in optim.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from numba import get_num_threads, njit, prange, set_num_threads

from adcore_kernels._numba import PARALLEL_FROM  # first: sets numba's threading layer

kernel = njit(cache=True, parallel=True)


@contextmanager
def threads_for(size: int) -> Iterator[None]:
    """All of numba's threads for a parameter of `size` elements, or just this one if it is small."""
    if size >= PARALLEL_FROM:
        yield
        return
    threads = get_num_threads()
    set_num_threads(1)
    try:
        yield
    finally:
        set_num_threads(threads)


@kernel
def sgd(p, g, lr, weight_decay):
    for i in prange(p.size):
        p[i] = p[i] - lr * (g[i] + weight_decay * p[i])


@kernel
def momentum(p, g, delta, lr, rho, weight_decay):
    for i in prange(p.size):
        d = rho * delta[i] - g[i] - weight_decay * p[i]
        delta[i] = d
        p[i] = p[i] + lr * d


@kernel
def nesterov(p, g, delta, lr, rho, weight_decay):
    for i in prange(p.size):
        gi = g[i] + weight_decay * p[i]
        d = rho * delta[i] - gi
        delta[i] = d
        p[i] = p[i] + lr * (rho * d - gi)


@kernel
def rprop(p, g, previous, step_size, eta_minus, eta_plus, step_min, step_max):
    for i in prange(p.size):
        gi = g[i]
        agreement = gi * previous[i]
        a = step_size[i]
        if agreement > 0:
            a = min(a * eta_plus, step_max)
        elif agreement < 0:
            a = max(a * eta_minus, step_min)
        step_size[i] = a
        previous[i] = gi
        p[i] = p[i] - a * np.sign(gi)


@kernel
def rmsprop(p, g, mean_square, lr, alpha, one_minus_alpha, eps, weight_decay):
    for i in prange(p.size):
        gi = g[i] + weight_decay * p[i]
        ms = alpha * mean_square[i] + one_minus_alpha * (gi * gi)
        mean_square[i] = ms
        p[i] = p[i] - lr * (gi / (np.sqrt(ms) + eps))


@kernel
def adagrad(p, g, sum_square, lr, eps, weight_decay):
    for i in prange(p.size):
        gi = g[i] + weight_decay * p[i]
        s = sum_square[i] + gi * gi
        sum_square[i] = s
        p[i] = p[i] - lr * (gi / (np.sqrt(s) + eps))


@kernel
def adadelta(p, g, mean_square, mean_square_delta, lr, rho, one_minus_rho, eps, weight_decay):
    for i in prange(p.size):
        gi = g[i] + weight_decay * p[i]
        ms = rho * mean_square[i] + one_minus_rho * (gi * gi)
        d = np.sqrt(mean_square_delta[i] + eps) / np.sqrt(ms + eps) * gi
        mean_square[i] = ms
        mean_square_delta[i] = rho * mean_square_delta[i] + one_minus_rho * (d * d)
        p[i] = p[i] - lr * d


@kernel
def adam(p, g, m, v, step_size, beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay):
    for i in prange(p.size):
        gi = g[i] + weight_decay * p[i]
        mi = beta1 * m[i] + one_minus_beta1 * gi
        vi = beta2 * v[i] + one_minus_beta2 * (gi * gi)
        m[i] = mi
        v[i] = vi
        p[i] = p[i] - step_size * (mi / (np.sqrt(vi) + eps))


@kernel
def adamax(p, g, m, u, step_size, beta1, one_minus_beta1, beta2, eps, weight_decay):
    for i in prange(p.size):
        gi = g[i] + weight_decay * p[i]
        mi = beta1 * m[i] + one_minus_beta1 * gi
        ui = max(beta2 * u[i], abs(gi))
        m[i] = mi
        u[i] = ui
        p[i] = p[i] - step_size * (mi / (ui + eps))
