"""The optimizers' update kernels: one fused numba loop per optimizer, updating in place.

Imported by `adcore_kernels.optim` on an optimizer's first `.step()`, so that loading the
plugin never imports numba. A kernel takes the flat (1-D, C-contiguous) views of one
parameter `p`, its gradient `g` and its state arrays (an empty array for a state its
options leave unused), all of one dtype, then its scalars, already converted to that dtype
by the caller (so float32 arithmetic stays float32), and its options as booleans. It reads
and writes each element once: one pass over memory for the parameter and all of its state.

Each loop follows the operations of torch.optim's single-tensor update in torch's order
(so float64 agrees with torch to rounding), two rewritten to save work: Adam multiplies
sqrt(v) by 1/sqrt(1 − β2^t) where torch divides (a rounding apart), and `lerp` takes torch's
two formulas as one multiply (the same numbers). `sign` is -1 for `maximize`, else 1; weight
decay enters as `g + weight_decay * p` (0 when torch would skip it). An option is a
loop-invariant branch, which LLVM hoists out of the vectorized loop: one compiled kernel (serial
and parallel) per dtype, whatever the options. Formulas: the table in optim.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from adcore_kernels._numba import SerialOrParallel  # first: sets numba's threading layer

# Each kernel is compiled twice, each on its first use: on the calling thread for a parameter under
# 2^15 elements (where waking numba's threads costs more than they save: a parallel launch is
# ~0.1-0.3 ms), across numba's threads from there on.
kernel = SerialOrParallel


@njit(cache=True, inline="always")
def lerp(start, end, from_end, weight):
    """torch.lerp's formula: start + w·(end − start), or end − (1 − w)·(end − start) for w ≥ 0.5,
    as (end if from_end else start) + weight·(end − start) with `weight` w or −(1 − w): the same
    numbers, one multiply."""
    return (end if from_end else start) + weight * (end - start)


@kernel
def sgd(p, g, buf, sign, lr, weight_decay, momentum, one_minus_dampening, use_momentum, nesterov, first):
    for i in prange(p.size):
        gi = sign * g[i] + weight_decay * p[i]
        if use_momentum:
            b = gi if first else buf[i] * momentum + one_minus_dampening * gi
            buf[i] = b
            gi = gi + momentum * b if nesterov else b
        p[i] = p[i] - lr * gi


@kernel
def adam(
    p,
    g,
    exp_avg,
    exp_avg_sq,
    max_exp_avg_sq,
    sign,
    decay,
    weight_decay,
    from_end1,
    w1,
    beta2,
    w2,
    inv_bias_correction2_sqrt,
    step_size,
    eps,
    amsgrad,
):
    for i in prange(p.size):
        pi = p[i] * decay  # AdamW's decoupled decay 1 - lr·λ, else 1
        gi = sign * g[i] + weight_decay * pi  # Adam's L2 term, 0 for AdamW
        m = lerp(exp_avg[i], gi, from_end1, w1)
        v = exp_avg_sq[i] * beta2 + w2 * gi * gi
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if amsgrad:
            v = max(max_exp_avg_sq[i], v)
            max_exp_avg_sq[i] = v
        p[i] = pi - step_size * (m / (np.sqrt(v) * inv_bias_correction2_sqrt + eps))


@kernel
def adagrad(p, g, state_sum, sign, weight_decay, clr, eps):
    for i in prange(p.size):
        gi = sign * g[i] + weight_decay * p[i]
        s = state_sum[i] + gi * gi
        state_sum[i] = s
        p[i] = p[i] - clr * (gi / (np.sqrt(s) + eps))


@kernel
def rmsprop(
    p,
    g,
    square_avg,
    buf,
    grad_avg,
    sign,
    weight_decay,
    alpha,
    w,
    from_end,
    w_lerp,
    eps,
    lr,
    momentum,
    centered,
    use_momentum,
):
    for i in prange(p.size):
        gi = sign * g[i] + weight_decay * p[i]
        s = square_avg[i] * alpha + w * gi * gi
        square_avg[i] = s
        if centered:
            a = lerp(grad_avg[i], gi, from_end, w_lerp)
            grad_avg[i] = a
            s = s - a * a
        avg = np.sqrt(s) + eps
        if use_momentum:
            b = buf[i] * momentum + gi / avg
            buf[i] = b
            p[i] = p[i] - lr * b
        else:
            p[i] = p[i] - lr * (gi / avg)


@kernel
def adadelta(p, g, square_avg, acc_delta, sign, weight_decay, rho, one_minus_rho, eps, lr):
    for i in prange(p.size):
        gi = sign * g[i] + weight_decay * p[i]
        s = square_avg[i] * rho + one_minus_rho * gi * gi
        square_avg[i] = s
        delta = np.sqrt(acc_delta[i] + eps) / np.sqrt(s + eps) * gi
        acc_delta[i] = acc_delta[i] * rho + one_minus_rho * delta * delta
        p[i] = p[i] - lr * delta


@kernel
def adamax(p, g, exp_avg, exp_inf, sign, weight_decay, from_end1, w1, beta2, eps, clr):
    for i in prange(p.size):
        gi = sign * g[i] + weight_decay * p[i]
        m = lerp(exp_avg[i], gi, from_end1, w1)
        u = np.maximum(
            exp_inf[i] * beta2, abs(gi) + eps
        )  # NaN propagates, as torch.maximum; max() dropped it
        exp_avg[i] = m
        exp_inf[i] = u
        p[i] = p[i] - clr * (m / u)


@kernel
def rprop(p, g, prev, step_size, sign, eta_minus, eta_plus, step_min, step_max):
    for i in prange(p.size):
        gi = sign * g[i]
        agreement = gi * prev[i]
        a = step_size[i]
        if agreement > 0:
            a = a * eta_plus
        elif agreement < 0:
            a = a * eta_minus
        a = min(max(a, step_min), step_max)
        step_size[i] = a
        if agreement < 0:  # iRprop-: after a sign change no step, and nothing to compare with next time
            prev[i] = 0
        else:
            p[i] = p[i] - np.sign(gi) * a
            prev[i] = gi
