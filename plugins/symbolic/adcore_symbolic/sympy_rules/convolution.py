"""Sympy rules of adcore/ops/convolution.py: convolve and correlate, NumPy's convolve on object
arrays (the symbolic backend's values are real: correlate's conjugation changes nothing)."""

from __future__ import annotations

import numpy as np

from adcore.ops.convolution import output_window
from adcore_symbolic.sympy_rules.table import defsympy


def _objects(x):
    return np.asarray(x, dtype=object)


def _correlate(a, v, mode="valid"):
    a, v = _objects(a), _objects(v)
    return np.convolve(a, v[::-1])[output_window("correlate", mode, a.size, v.size)]


defsympy("convolve", lambda a, v, mode="full": np.convolve(_objects(a), _objects(v), mode))
defsympy("correlate", _correlate)
