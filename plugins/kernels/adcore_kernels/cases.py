"""A composite function the conformance suite checks like an op: a tiny two-layer CNN loss."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore
import adcore.numpy as anp
from adcore import Domain, Sample
from adcore_kernels.ops import avg_pool2d, conv2d

WEIGHTS = Domain(-1.0, 1.0)


def small_cnn(x: Any, w1: Any, w2: Any) -> Any:
    """sum(conv2d(avg_pool2d(tanh(conv2d(x, w1, padding=1)), 2), w2)^2): both convolutions'
    gradients in x and w, and the pooling's, through the chain rule (smooth: no kinks)."""
    hidden = avg_pool2d(anp.tanh(conv2d(x, w1, padding=1)), 2)
    return anp.sum(anp.square(conv2d(hidden, w2)))


def _cnn_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    shapes = ((2, 1, 4, 4), (2, 1, 3, 3), (1, 2, 2, 2))  # x, w1, w2: (2,2,4,4) -> (2,2,2,2) -> (2,1,1,1)
    return [Sample(tuple(WEIGHTS.draw(rng, shape, dtype) for shape in shapes))]


SMALL_CNN = adcore.Case(
    "small_cnn", small_cnn, samples=_cnn_samples, argnums=(0, 1, 2), doc=small_cnn.__doc__ or ""
)
