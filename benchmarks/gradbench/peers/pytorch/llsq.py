"""llsq for GradBench's pytorch tool. Not GradBench's: written for adcore's comparison.

Vectorised as the eval's README suggests: the residuals are s - T x, T[i, j] = t_i ** j.
"""

import numpy as np
import torch
from gradbench import wrap
from torch.autograd.functional import vjp


def llsq(x, n):
    m = x.shape[0]
    t = -1.0 + (torch.arange(n, dtype=torch.float64) * 2.0) / (n - 1.0)
    powers = torch.vander(t, N=m, increasing=True)
    residuals = torch.sign(t) - powers @ x
    return torch.sum(residuals**2) / 2.0


def prepare_input(input):
    return torch.tensor(np.array(input["x"], dtype=np.float64)), input["n"]


@wrap.multiple_runs(pre=prepare_input, post=float)
def primal(input):
    x, n = input
    return llsq(x, n)


@wrap.multiple_runs(pre=prepare_input, post=lambda x: x.tolist())
def gradient(input):
    x, n = input
    return vjp(lambda x: llsq(x, n), x, v=torch.tensor(1.0, dtype=torch.float64))[1]


# Force graph compilation, as GradBench's lse does.
vjp(lambda x: llsq(x, 3), torch.ones(2, dtype=torch.float64), v=torch.tensor(1.0, dtype=torch.float64))
