"""Sympy rules of adcore/ops/nn.py: sigmoid, relu, softplus, softmax, log_softmax, logsumexp."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.extend import each, reduce_with
from adcore_symbolic.sympy_rules.table import defsympy, fn, sp


def _relu(x: Any) -> Any:
    return sp.Piecewise((x, x > 0), (0, True))


def _logsumexp_keepdims(x: Any, axis: Any) -> np.ndarray:
    return reduce_with(fn.logsumexp, x, axis, keepdims=True)


# fmt: off
# --- neural-network ops -------------------------------------------------------------
defsympy("sigmoid",       lambda x: each(fn.sigmoid, x))
defsympy("relu",          lambda x: each(_relu, x))
defsympy("softplus",      lambda x: each(fn.softplus, x))
defsympy("softmax",       lambda x, axis=-1: each(sp.exp, x - _logsumexp_keepdims(x, axis)))
defsympy("log_softmax",   lambda x, axis=-1: x - _logsumexp_keepdims(x, axis))
defsympy("logsumexp",     lambda x, axis=None, keepdims=False: reduce_with(fn.logsumexp, x, axis, keepdims))
defsympy("stop_gradient", lambda x: each(fn.stop_gradient, x))
# fmt: on
