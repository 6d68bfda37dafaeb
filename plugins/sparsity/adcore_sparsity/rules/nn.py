"""Sparsity rules of adcore/ops/nn.py: sigmoid, relu, softplus and stop_gradient elementwise;
softmax and log_softmax couple every element of a fibre along their axis; logsumexp reduces."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore_sparsity.extend import (
    SparsityRule,
    along_axes,
    elementwise,
    no_dependency,
    normalize_axes,
    reduction,
)
from adcore_sparsity.rules.elementwise import piecewise, positive
from adcore_sparsity.rules.table import defsparsity


def axes_of(x: Any, axis: Any = -1) -> tuple[int, ...]:
    """softmax's axis (an int or a tuple) as a tuple of axes."""
    return normalize_axes(axis, np.ndim(x))


def normalized(exact: bool = True) -> SparsityRule:
    """softmax, log_softmax: every element of a fibre along the axes depends on every other (its
    Jacobian diag(s) - s s^T, or I - 1 s^T, has no zero); a fibre of one is constant (1, or 0)."""
    coupled = along_axes(axes_of, "nonlinear", exact)

    def dependencies(ans: Any, x: Any, axis: Any = -1) -> tuple:
        shape = np.shape(x)
        if int(np.prod([shape[a] for a in axes_of(x, axis)], dtype=np.int64)) == 1:
            return (None,)
        return coupled(ans, x, axis=axis)

    return SparsityRule(dependencies, "nonlinear", exact)


# fmt: off
defsparsity("sigmoid",       elementwise("nonlinear"))
defsparsity("relu",          piecewise(positive))
defsparsity("softplus",      elementwise("nonlinear"))
defsparsity("softmax",       normalized())
defsparsity("log_softmax",   normalized())
defsparsity("logsumexp",     reduction("nonlinear"))
defsparsity("stop_gradient", no_dependency())
# fmt: on
