"""det for GradBench's pytorch tool. Not GradBench's: written for adcore's comparison.

The eval defines the determinant by expansion by minors; any correct way of computing it is
accepted, and this uses torch.linalg.det (an LU factorisation), as a PyTorch user would.
"""

import numpy as np
import torch
from gradbench import wrap
from torch.autograd.functional import vjp


def det(A):
    return torch.linalg.det(A)


def prepare_input(input):
    ell = input["ell"]
    return torch.tensor(np.array(input["A"], dtype=np.float64).reshape(ell, ell))


@wrap.multiple_runs(pre=prepare_input, post=float)
def primal(input):
    return det(input)


@wrap.multiple_runs(pre=prepare_input, post=lambda x: x.flatten().tolist())
def gradient(input):
    return vjp(det, input, v=torch.tensor(1.0, dtype=torch.float64))[1]


# Force graph compilation, as GradBench's lse does.
vjp(det, torch.eye(2, dtype=torch.float64), v=torch.tensor(1.0, dtype=torch.float64))
