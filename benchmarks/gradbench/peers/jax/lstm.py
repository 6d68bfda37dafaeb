"""lstm for GradBench's jax tool. Not GradBench's: written for adcore's comparison.

ADBench's LSTM as GradBench's pytorch tool and C++ reference compute it (diagonal weights, the
log-sum-exp with the extra 2), with the sequence loop as a `lax.scan` and the layers unrolled.
"""

import jax
import jax.numpy as jnp
import numpy as np
from gradbench import wrap
from jax import grad, jit

jax.config.update("jax_enable_x64", True)


def lstm(weight, bias, hidden, cell, input):
    gates = jnp.concatenate((input, hidden, input, hidden)) * weight + bias
    forget, ingate, outgate, change = jnp.split(gates, 4)
    cell = cell * jax.nn.sigmoid(forget) + jax.nn.sigmoid(ingate) * jnp.tanh(change)
    hidden = jax.nn.sigmoid(outgate) * jnp.tanh(cell)
    return hidden, cell


def predict(main_params, extra_params, state, x):
    x = x * extra_params[0]
    new_state = []
    for i in range(0, state.shape[0], 2):
        hidden, cell = lstm(main_params[i], main_params[i + 1], state[i], state[i + 1], x)
        new_state += [hidden, cell]
        x = hidden
    return x * extra_params[1] + extra_params[2], jnp.stack(new_state)


def lstm_objective(main_params, extra_params, state, sequence):
    def step(state, inputs):
        x, ygold = inputs
        ypred, state = predict(main_params, extra_params, state, x)
        ynorm = ypred - jnp.log(jnp.sum(jnp.exp(ypred)) + 2)
        return state, jnp.sum(ygold * ynorm)

    _, totals = jax.lax.scan(step, state, (sequence[:-1], sequence[1:]))
    return -jnp.sum(totals) / ((sequence.shape[0] - 1) * sequence.shape[1])


def prepare_input(input):
    return tuple(
        np.array(input[name], dtype=np.float64)
        for name in ("main_params", "extra_params", "state", "sequence")
    )


@wrap.multiple_runs(pre=prepare_input, post=float)
@jit
def objective(input):
    return lstm_objective(*input)


@wrap.multiple_runs(pre=prepare_input, post=lambda x: np.concatenate([g.flatten() for g in x]).tolist())
@jit
def jacobian(input):
    return grad(lstm_objective, argnums=(0, 1))(*input)
