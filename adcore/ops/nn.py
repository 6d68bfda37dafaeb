"""Neural-network ops: sigmoid, relu, softplus, softmax, log_softmax, logsumexp, stop_gradient.

The impls are the stable forms from seed 001 (Sigmoid算子, Softmax算子): finite, and
without NumPy warnings, at +-1e3.
"""

from __future__ import annotations

import numpy as np

from adcore.ops.reductions import reduction_samples
from adcore.spec import REAL, Kink, OpSpec, elementwise_samples, fixed_samples


def _sigmoid(x):
    # exp of a non-positive number never overflows; pick the form per sign of x
    z = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + z), z / (1 + z))


def _relu(x):
    return np.maximum(x, 0)


def _softplus(x):
    return np.logaddexp(0, x)


def _shifted(x, axis):
    # x - max(x), with -inf/inf maxima (all -inf rows) replaced by 0 so no nan appears
    m = np.max(x, axis=axis, keepdims=True)
    return x - np.where(np.isfinite(m), m, 0)


def _softmax(x, axis=-1):
    e = np.exp(_shifted(x, axis))
    return e / np.sum(e, axis=axis, keepdims=True)


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _log_softmax(x, axis=-1):
    # (x - m) - log sum exp(x - m): no cancellation between two large terms at +-1e3
    shifted = _shifted(x, axis)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _identity(x):
    return x


_AXIS_SAMPLES = fixed_samples(
    (((3,),), {"axis": -1}),
    (((2, 4),), {"axis": -1}),
    (((2, 4),), {"axis": 0}),
)

sigmoid = OpSpec("sigmoid", _sigmoid, samples=elementwise_samples(REAL), elementwise=True)
relu = OpSpec(
    "relu",
    _relu,
    samples=elementwise_samples(REAL),
    elementwise=True,
    doc="relu'(0) = 0",
    kinks=(Kink(([-1.0, 0.0, 1.0],), (np.diag([0.0, 0, 1]),), why="relu'(0) = 0"),),
    kink_distance=np.abs,
)
softplus = OpSpec("softplus", _softplus, samples=elementwise_samples(REAL), elementwise=True)
softmax = OpSpec("softmax", _softmax, params=("axis",), samples=_AXIS_SAMPLES)
log_softmax = OpSpec("log_softmax", _log_softmax, params=("axis",), samples=_AXIS_SAMPLES)
logsumexp = OpSpec("logsumexp", _logsumexp, params=("axis", "keepdims"), samples=reduction_samples(REAL))
stop_gradient = OpSpec(
    "stop_gradient",
    _identity,
    differentiable=(),
    samples=elementwise_samples(REAL),
    elementwise=True,
    doc="the identity, with no derivative flowing through it",
    accepts_complex=True,
)
