"""hello for the jax-jacfwd tool. Not GradBench's: written for adcore's comparison (define sanity)."""

import jax.numpy as jnp
from gradbench import wrap
from jax import jacfwd


def to_tensor(x):
    return jnp.array(x, dtype=jnp.float32)


@wrap.function(pre=to_tensor, post=lambda x: x.item())
def square(x):
    return x * x


@wrap.function(pre=to_tensor, post=lambda x: x.item())
def double(x):
    return jacfwd(square)(x)
