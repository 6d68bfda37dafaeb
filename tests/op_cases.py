"""The registry's ops and their samples as pytest parameters, for the per-op rule tests."""

from __future__ import annotations

import numpy as np
import pytest

from adcore.plugins import get_registry
from adcore.spec import OpSpec

SEED = 0


def op_cases(dtype: type) -> list:
    """(op, sample) for every registered op and each of its samples, with ids like `sin-3`."""
    registry = get_registry()
    cases = []
    for name in sorted(registry.ops):
        op = registry.ops[name]
        samples = op.samples(np.random.default_rng(SEED), np.dtype(dtype)) if op.samples else []
        cases += [pytest.param(op, sample, id=f"{name}-{k}") for k, sample in enumerate(samples)]
    return cases


def report(failures: list) -> str:
    return "\n".join(map(str, failures))


def has_differentiable_inputs(op: OpSpec) -> bool:
    return op.variadic or op.differentiable is None or len(op.differentiable) > 0


def float_inputs(op: OpSpec, sample) -> list[int]:
    """The positions of a sample's inputs a derivative is taken by: differentiable, float."""
    return [
        i for i, x in enumerate(sample.args) if op.is_differentiable(i) and np.asarray(x).dtype.kind == "f"
    ]
