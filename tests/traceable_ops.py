"""A throwaway plugin with traceable ops (OpSpec.traceable), for the traces' tests of the body fallback.

- `softplus_body(x) = log1p(exp(x))`, traceable, no rules: every rule backend differentiates
  the body; the analytic derivative is the logistic sigmoid 1 / (1 + exp(-x)).
- `scaled_sin(x, y) = x * sin(y)`, traceable, a "vjp" rule only, deliberately twice the truth
  for x (so a test sees which one ran): reverse uses the rule, forward and symbolic the body.
- `opaque_sin(x) = sin(x)` on plain NumPy, not traceable, no rules: a MissingRuleError.
"""

from __future__ import annotations

import numpy as np

import adcore
from adcore import ops


def _softplus(x):
    return ops.log1p(ops.exp(x))


def _scaled_sin(x, y):
    return x * ops.sin(y)


SOFTPLUS = adcore.OpSpec("softplus_body", _softplus, traceable=True)
SCALED_SIN = adcore.OpSpec("scaled_sin", _scaled_sin, nin=2, traceable=True)
OPAQUE_SIN = adcore.OpSpec("opaque_sin", np.sin)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class TraceableOps:
    @adcore.hookimpl
    def adcore_register_ops(self, register):
        for spec in (SOFTPLUS, SCALED_SIN, OPAQUE_SIN):
            register(spec)

    @adcore.hookimpl
    def adcore_register_rules(self, register):
        register(
            "vjp",
            "scaled_sin",
            (lambda g, ans, x, y: 2 * g * ops.sin(y), lambda g, ans, x, y: g * x * ops.cos(y)),
        )
