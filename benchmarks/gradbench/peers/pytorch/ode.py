"""ode for GradBench's pytorch tool. Not GradBench's: written for adcore's comparison.

Runge-Kutta with s steps of y' = f(y), f(y)_0 = x_0 and f(y)_i = x_i y_{i-1}, from y(0) = 0 to
t = 2, as GradBench's C++ reference and jax tool do; the gradient is that of the last element.
"""

import numpy as np
import torch
from gradbench import wrap
from torch.autograd.functional import vjp


def ode_fun(x, y):
    return x * torch.cat((torch.ones(1, dtype=y.dtype), y[:-1]))


def runge_kutta(x, s):
    h = 2.0 / s
    y = torch.zeros_like(x)
    for _ in range(s):
        k1 = ode_fun(x, y)
        k2 = ode_fun(x, y + h / 2 * k1)
        k3 = ode_fun(x, y + h / 2 * k2)
        k4 = ode_fun(x, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def prepare_input(input):
    return torch.tensor(np.array(input["x"], dtype=np.float64)), input["s"]


@wrap.multiple_runs(pre=prepare_input, post=lambda x: x.tolist())
def primal(input):
    x, s = input
    return runge_kutta(x, s)


@wrap.multiple_runs(pre=prepare_input, post=lambda x: x.tolist())
def gradient(input):
    x, s = input
    return vjp(lambda x: runge_kutta(x, s)[-1], x, v=torch.tensor(1.0, dtype=torch.float64))[1]


# Force graph compilation, as GradBench's lse does.
vjp(
    lambda x: runge_kutta(x, 1)[-1],
    torch.ones(2, dtype=torch.float64),
    v=torch.tensor(1.0, dtype=torch.float64),
)
