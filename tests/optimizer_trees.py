"""What the optimizer tests over pytrees share (test_optim_pytree, test_optim_functional): per
optimizer the options that make every state array exist and matter, and a nested parameter tree."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from adcore_kernels import optim

CONFIGS = {
    "sgd": dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": dict(lr=0.01, amsgrad=True, weight_decay=0.01),
    "adamw": dict(lr=0.01, weight_decay=0.1, maximize=True),
    "adagrad": dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1),
    "rmsprop": dict(lr=0.01, momentum=0.5, centered=True),
    "adadelta": dict(lr=1.0, weight_decay=0.01),
    "adamax": dict(lr=0.02),
    "rprop": dict(lr=0.01),
}
assert set(CONFIGS) == set(optim.OPTIMIZERS)
Layer = namedtuple("Layer", "w b")


def tree_start(dtype, seed: int) -> dict:
    """A nested pytree: a dict of a list of namedtuples (one with b=None: no leaf) and a tuple."""
    rng = np.random.default_rng(seed)
    arr = lambda *shape: rng.uniform(-1.5, 1.5, shape).astype(dtype)  # noqa: E731
    return {"enc": [Layer(arr(3, 4), arr(4)), Layer(arr(4, 2), None)], "head": (arr(2), arr())}
