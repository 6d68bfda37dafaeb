"""det for GradBench's jax tool. Not GradBench's: written for adcore's comparison.

The eval defines the determinant by expansion by minors; any correct way of computing it is
accepted, and this uses jnp.linalg.det (an LU factorisation), as a JAX user would.
"""

import jax
import jax.numpy as jnp
import numpy as np
from gradbench import wrap
from jax import grad, jit

jax.config.update("jax_enable_x64", True)


def det(A):
    return jnp.linalg.det(A)


def prepare_input(input):
    ell = input["ell"]
    return np.array(input["A"], dtype=np.float64).reshape(ell, ell)


@wrap.multiple_runs(pre=prepare_input, post=float)
@jit
def primal(input):
    return det(input)


@wrap.multiple_runs(pre=prepare_input, post=lambda x: x.flatten().tolist())
@jit
def gradient(input):
    return grad(det)(input)
