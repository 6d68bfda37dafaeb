"""JVPs of adcore/ops/cumulative.py: cumsum, cumprod, diff, sort."""

from __future__ import annotations

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete, plain_numbers
from adcore.extend import batched_axis
from adcore.ops.cumulative import zero_split
from adcore.ops.ordering import from_rows, permute_rows, sorting_permutation, to_rows
from adcore_forward.jvps.table import batch as _batch
from adcore_forward.jvps.table import defjvp


def _flat(t):
    return anp.reshape(t, (t.shape[0], -1))


def _cumsum_jvp(t, ans, x, axis=None, dtype=None):
    if axis is None:
        return anp.cumsum(_flat(t), axis=1)
    return anp.cumsum(t, axis=batched_axis(axis, x.ndim))


def _cumprod_jvp(t, ans, x, axis=None, dtype=None):
    if x.ndim == 0:
        return anp.reshape(t, _batch(t, ans))
    if axis is None:
        return _cumprod_jvp(_flat(t), ans, anp.reshape(x, (-1,)), 0)
    ax = axis % x.ndim
    if not plain_numbers(concrete(x) == 0).any():  # (under vmap: in any example)
        return anp.cumsum(t / x, axis=ax + 1) * ans
    # with zeros: sum over i <= k of d out_k / d x_i t_i, by the pieces of zero_split
    split = zero_split(x, ax)
    up_to_zero = ans * anp.cumsum(anp.where(split.before, t / split.x_before, 0.0), axis=ax + 1)  # k < z
    at_zero = (
        split.before_zero
        * split.after_zero
        * anp.sum(anp.where(split.at, t, 0.0), axis=ax + 1, keepdims=True)
    )
    rest = anp.where(split.at, 0.0, t)  # the others, through x_z (0, x_z's slope)
    past_zero = split.zero * _cumprod_jvp(rest, anp.cumprod(split.rest, axis=ax), split.rest, ax)
    return anp.where(split.before, up_to_zero, 0.0) + anp.where(split.from_zero, at_zero + past_zero, 0.0)


def _diff_jvp(t, ans, x, n=1, axis=-1, prepend=None, append=None):
    ends = {k: 0.0 for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    if ends and n > 0:  # constants: tangent 0, laid along the axis as NumPy lays them
        ax = axis % x.ndim
        shape = list(t.shape)
        for k, v in (("prepend", prepend), ("append", append)):
            if v is not None:
                shape[ax + 1] = 1 if np.ndim(v) == 0 else np.shape(v)[ax]
                ends[k] = np.zeros(shape, dtype=t.dtype)
    return anp.diff(t, n=n, axis=batched_axis(axis, x.ndim), **ends)


def _sort_jvp(t, ans, x, axis=-1, kind=None, stable=None):
    perm = sorting_permutation(x, axis)
    if axis is None:
        return permute_rows(to_rows(t, None, lead=1), perm)[:, 0]
    return from_rows(permute_rows(to_rows(t, axis, lead=1), perm), t.shape, axis, lead=1)


# fmt: off
# --- cumulative and ordering ----------------------------------------------------------
defjvp("cumsum",  _cumsum_jvp)
defjvp("cumprod", _cumprod_jvp)
defjvp("diff",    _diff_jvp)
defjvp("sort",    _sort_jvp)

# fmt: on
