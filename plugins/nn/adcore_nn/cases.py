"""Composite functions the conformance suite checks like ops, so every backend is proved on them:
an MLP layer stack and a BatchNorm + CrossEntropyLoss step, as functions of arrays (functional_call).

The modules are built on first use (this module is imported when adcore loads its plugins).
BatchNorm runs in train mode on batch statistics with track_running_stats=False: a running-stat
update is refused on the backends that evaluate f several times (numeric) and under vmap.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

import adcore
import adcore.numpy as anp
from adcore import Domain, Sample

VALUES = Domain(-1.0, 1.0)
LABELS = np.array([0, 2, 1, 2])


@cache
def _mlp(dtype: np.dtype) -> Any:
    from adcore_nn import GELU, LayerNorm, Linear, Sequential

    rng = np.random.default_rng(0)
    return Sequential(Linear(3, 4, dtype=dtype, generator=rng), GELU(), LayerNorm(4, dtype=dtype))


@cache
def _batch_norm(dtype: np.dtype) -> Any:
    from adcore_nn import BatchNorm1d

    return BatchNorm1d(3, track_running_stats=False, dtype=dtype)


def nn_mlp(x: Any, w: Any, b: Any, gamma: Any, beta: Any) -> Any:
    """sum(LayerNorm(GELU(Linear(x)))²) through adcore_nn's modules and functional_call: the
    gradients in the input, the Linear's weight and bias and the LayerNorm's scale and shift."""
    from adcore_nn import functional_call

    params = {"0.weight": w, "0.bias": b, "2.weight": gamma, "2.bias": beta}
    return anp.sum(anp.square(functional_call(_mlp(np.dtype(x.dtype)), params, (x,))))


def nn_batch_norm_cross_entropy(x: Any, weight: Any, bias: Any) -> Any:
    """CrossEntropyLoss(BatchNorm1d(x) in train mode, fixed labels): the batch statistics depend on x."""
    from adcore_nn import CrossEntropyLoss, functional_call

    logits = functional_call(_batch_norm(np.dtype(x.dtype)), {"weight": weight, "bias": bias}, (x,))
    return CrossEntropyLoss()(logits, LABELS)


def _draw(shapes: tuple[tuple[int, ...], ...]) -> Any:
    def samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [Sample(tuple(VALUES.draw(rng, shape, dtype) for shape in shapes))]

    return samples


NN_MLP = adcore.Case(
    "nn_mlp",
    nn_mlp,
    samples=_draw(((2, 3), (4, 3), (4,), (4,), (4,))),
    argnums=(0, 1, 2, 3, 4),
    doc=nn_mlp.__doc__ or "",
)
NN_BATCH_NORM_CROSS_ENTROPY = adcore.Case(
    "nn_batch_norm_cross_entropy",
    nn_batch_norm_cross_entropy,
    samples=_draw(((4, 3), (3,), (3,))),
    argnums=(0, 1, 2),
    doc=nn_batch_norm_cross_entropy.__doc__ or "",
)
CASES = (NN_MLP, NN_BATCH_NORM_CROSS_ENTROPY)
