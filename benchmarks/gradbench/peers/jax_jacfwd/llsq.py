"""llsq for the jax-jacfwd tool. Not GradBench's: written for adcore's comparison.

GradBench's jax llsq (the same primal), with the gradient computed in forward mode by
`jax.jacfwd`: one tangent per element of x, batched by JAX into one pass.
"""

from functools import partial

import jax
import numpy as np
from gradbench import wrap
from gradbench.tools.jax.llsq import llsq

jax.config.update("jax_enable_x64", True)


@partial(jax.jit, static_argnums=[1])
def grad_llsq(x, n):
    return jax.jacfwd(llsq, argnums=0)(x, n)


def prepare_input(input):
    return (np.array(input["x"], dtype=np.float64), input["n"])


@wrap.multiple_runs(pre=prepare_input, post=float)
def primal(input):
    x, n = input
    return llsq(x, n)


@wrap.multiple_runs(pre=prepare_input, post=lambda x: x.tolist())
def gradient(input):
    x, n = input
    return grad_llsq(x, n)
