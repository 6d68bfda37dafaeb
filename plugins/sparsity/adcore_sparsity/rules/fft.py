"""Sparsity rules of adcore/ops/fft.py: a transform mixes every element along its axes (of the
input's part it reads: s crops or zero-pads it, irfftn reads n // 2 + 1 bins of its last axis) and
keeps the other axes apart. All four are linear."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.ops.fft import fft_plan
from adcore_sparsity.extend import DENSE, SparsityRule, fibres, scatter
from adcore_sparsity.rules.table import defsparsity


def transform(name: str) -> SparsityRule:
    """The rule of fft op `name`: output element o depends on the input elements of o's fibre (its
    indices off the transformed axes) that lie inside the part the transform reads."""

    def dependencies(ans: Any, a: Any, s: Any = None, axes: Any = None, norm: Any = None) -> tuple:
        shape = tuple(np.shape(a))
        plan = fft_plan(name, shape, s, axes, norm)
        read = plan.shape(shape, halved=name == "irfftn")  # what the transform reads along each axis
        index = np.indices(shape, sparse=True)
        inside = np.ones(shape, dtype=bool)
        for axis in plan.axes:
            inside = inside & (index[axis] < read[axis])
        if _fibres(shape, plan.axes) == 1 and inside.all():
            return (DENSE,)  # one fibre read whole: nothing to build
        into_in = scatter(np.where(inside, fibres(shape, plan.axes), -1), _fibres(shape, plan.axes))
        out = fibres(np.shape(ans), plan.axes)
        into_out = scatter(out, _fibres(shape, plan.axes))
        return ((into_out.T @ into_in).tocsr(),)

    # irfftn's real output takes the real parts of e^(2 pi i k j / n) times a real input's bins, which
    # are 0 where 4 k j / n is odd: its Jacobian has zeros inside the fibre, the rule is a superset
    return SparsityRule(dependencies, "linear", exact=name != "irfftn")


def _fibres(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return int(np.prod([n for k, n in enumerate(shape) if k not in axes], dtype=np.int64))


for _name in ("fftn", "ifftn", "rfftn", "irfftn"):
    defsparsity(_name, transform(_name))
