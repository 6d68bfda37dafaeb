"""GradBench's lstm eval: ADBench's LSTM (diagonal weights) over a character sequence, and the gradient
of its loss with respect to the main and extra parameters (GradBench's pytorch tool, in NumPy)."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore
import adcore.numpy as anp
from adcore_tool.backends import options

UNSUPPORTED: dict[str, str] = {
    "symbolic": (
        "the recurrence over the characters (about 20 ops per layer and step) traces into sympy expressions "
        "that pass the backend's max_nodes=100000 guard already at c=64 characters (l=2), while the eval's "
        "smallest size is c=1024; with the guard lifted, tracing and compiling took 6 s at c=64 and 49 s at "
        "c=256, growing faster than linearly, so many minutes at c=1024"
    ),
}


def lstm_cell(weight: Any, bias: Any, hidden: Any, cell: Any, x: Any) -> tuple[Any, Any]:
    """One layer's step: the forget and output gates read the input, the input gate and the change
    read the hidden state, each through its own diagonal weight (rows of `weight`, shape (4, b))."""
    gates = np.stack((x, hidden, x, hidden)) * weight + bias
    forget, ingate, outgate = anp.sigmoid(gates[:3])
    change = np.tanh(gates[3])
    cell = cell * forget + ingate * change
    return outgate * np.tanh(cell), cell


def lstm_objective(main_params: Any, extra_params: Any, state: np.ndarray, sequence: np.ndarray) -> Any:
    """The mean log-likelihood loss of predicting each character from the ones before it."""
    layers, b = state.shape[0] // 2, state.shape[1]
    params = np.reshape(main_params, (layers, 2, 4, b))  # per layer: weight rows, then bias rows
    weights, biases = [params[i, 0] for i in range(layers)], [params[i, 1] for i in range(layers)]
    hidden = [state[2 * i] for i in range(layers)]
    cell = [state[2 * i + 1] for i in range(layers)]
    outputs = []
    in_weight, out_weight, out_bias = extra_params
    for char in sequence[:-1]:
        x = char * in_weight
        for i in range(layers):
            hidden[i], cell[i] = lstm_cell(weights[i], biases[i], hidden[i], cell[i], x)
            x = hidden[i]
        outputs.append(x)
    ypred = np.stack(outputs) * out_weight + out_bias
    ynorm = ypred - np.log(np.sum(np.exp(ypred), axis=1, keepdims=True) + 2)  # ADBench's "+ 2"
    ygold = sequence[1:]
    return -np.sum(ygold * ynorm) / ygold.size


def prepare(input: dict[str, Any], backend: str) -> tuple[np.ndarray, ...]:
    arrays = [
        np.asarray(input[k], dtype=np.float64) for k in ("main_params", "extra_params", "state", "sequence")
    ]
    return (*arrays, adcore.grad(lstm_objective, argnums=(0, 1), **options(backend)))


def objective(prepared: tuple[Any, ...]) -> float:
    *arrays, _ = prepared
    return float(lstm_objective(*arrays))


def jacobian(prepared: tuple[Any, ...]) -> np.ndarray:
    *arrays, gradient = prepared
    d_main, d_extra = gradient(*arrays)
    return np.concatenate((np.ravel(d_main), np.ravel(d_extra)))
