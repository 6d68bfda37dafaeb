"""The scipy plugin's batch rules: the "batch" table `adcore.vmap` reads (a kind adcore-batching
declares; without that plugin the registry sets these aside).

Each entry maps an op name to one rule:

    rule(dims, *inputs, **params) -> (out, out_dim)

`dims[i]` is input i's batch axis, or None where input i is the same for every example
(adcore.extend.batching says the rest); NotImplemented leaves a call to vmap's loop. An op
gets a rule only where one call for the batch is exact and saves the loop's calls:

- elementwise ops (scipy.special, the distributions' functions) need none: vmap batches them
  by their flag;
- expm, sqrtm and solve_sylvester take stacks (..., n, n) and compute each matrix as alone
  (SciPy's loop over the stack, or the impl's): the batch is one more leading axis, bit for bit;
- multivariate_normal_logpdf takes x (..., d) and a mean broadcasting with it: batched samples
  or means are more rows of its one triangular solve (bit for bit as measured: each row a
  column of its own); a batch of covariances is one Cholesky each: the loop;
- solve_banded takes one banded matrix: every example's b solves as more columns of one LAPACK
  call (gbsv, or gtsv for a tridiagonal band: each column substituted as alone); a batched ab: the loop;
- signal_convolve of one batched input with examples of 2 axes or more: the shared input gets a
  length-1 leading axis and the batch is one more axis of SciPy's n-d direct convolution, which
  computes each example as alone (bit for bit). method "auto" runs what SciPy chooses for one
  example. Left to the loop: 0-d and 1-d examples (SciPy's direct method is then a product or
  NumPy's convolve, whose BLAS dot the n-d loop does not match: 30x slower for 32 signals of
  3000 by 300 taps, 2x at 200 by 20, measured), the FFT method (its transform would run along the
  batch axis too), both inputs batched, and "same" with in2 batched (the window is centred on
  in1, whose batch axis would be 1 long).

Left to the loop: spd_inverse (LAPACK potrf/potri take one matrix; NumPy's batched Cholesky
is another computation) and odeint (each trajectory's adaptive steps are its own: one system
of the whole batch would step them together and give other numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adcore import ops
from adcore.extend import RuleTable
from adcore.extend.batching import batch_size, leading, moved_to_front
from adcore_scipy.linalg.ops import expm, solve_banded, solve_sylvester, sqrtm
from adcore_scipy.signal.ops import METHODS, MODES, signal, signal_convolve
from adcore_scipy.stats.ops import multivariate_normal_logpdf

BATCH_RULES = RuleTable("batch", __name__)
Dims = Sequence[int | None]


def _example_shape(x: Any, dim: int | None) -> tuple[int, ...]:
    shape = tuple(x.shape)
    return shape if dim is None else shape[:dim] + shape[dim + 1 :]


def _size(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64))


# --- scipy.stats ---------------------------------------------------------------------------------

_ROWS = leading(multivariate_normal_logpdf, (1, 1, 2))


def _mvn_logpdf(dims: Dims, x: Any, mean: Any, cov: Any) -> Any:
    if dims[2] is not None:
        return NotImplemented  # one Cholesky factor per example's covariance: the loop
    return _ROWS(dims, x, mean, cov)


# --- scipy.linalg --------------------------------------------------------------------------------


def _solve_banded(dims: Dims, ab: Any, b: Any, **params: Any) -> Any:
    """Every example's b as more columns of b: one factorization of the shared band."""
    (da, db), b_shape = dims, _example_shape(b, dims[1])
    size = batch_size(dims, (ab, b))
    if da is not None or len(ab.shape) != 2 or len(b_shape) not in (1, 2) or size * _size(b_shape) == 0:
        return NotImplemented  # a batched ab, or a call the op refuses (the loop raises its error)
    if b_shape[0] != ab.shape[1]:
        return NotImplemented
    columns = ops.moveaxis(b, source=db, destination=1)  # (n, B[, k])
    flat = ops.reshape(columns, shape=(b_shape[0], _size(columns.shape[1:])))
    return ops.reshape(solve_banded(ab, flat, **params), shape=tuple(columns.shape)), 1


# --- scipy.signal --------------------------------------------------------------------------------


def _method_for_one_example(in1: Any, in2: Any, shapes: tuple, mode: str, method: str) -> str:
    """The method SciPy's convolve runs on one example: "auto" chooses by shapes for float and
    complex inputs (its own stand-ins here), by the values for integers (then "": not known)."""
    if method != "auto":
        return method
    if any(np.dtype(x.dtype).kind not in "fc" for x in (in1, in2)):
        return ""
    volume, kernel = (np.zeros(s, dtype=x.dtype) for s, x in zip(shapes, (in1, in2)))
    if mode == "valid" and not all(m >= n for m, n in zip(*shapes)):
        volume, kernel = kernel, volume  # as convolve swaps them before choosing
    return signal.choose_conv_method(volume, kernel, mode=mode)


def _convolve(dims: Dims, in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    if None not in dims or mode not in MODES or method not in METHODS:
        return NotImplemented  # each example its own kernel, or a mode the op refuses: the loop
    i = 0 if dims[0] is not None else 1
    shapes = (_example_shape(in1, dims[0]), _example_shape(in2, dims[1]))
    if len(shapes[0]) < 2 or len(shapes[0]) != len(shapes[1]) or batch_size(dims, (in1, in2)) == 0:
        return NotImplemented
    if mode == "same" and i == 1:
        return NotImplemented  # "same" keeps in1's shape, whose batch axis would be 1 long
    if mode == "valid" and not all(m >= n for m, n in zip(shapes[i], shapes[1 - i])):
        return NotImplemented  # the batched one must be the larger, as its batch axis is
    if _method_for_one_example(in1, in2, shapes, mode, method) != "direct":
        return NotImplemented
    batched = moved_to_front((in1, in2)[i], dims[i])
    shared = ops.reshape((in1, in2)[1 - i], shape=(1, *shapes[1 - i]))
    args = (batched, shared) if i == 0 else (shared, batched)
    return signal_convolve(*args, mode=mode, method="direct"), 0


# fmt: off
# --- scipy.stats ---------------------------------------------------------------------------------
BATCH_RULES.add("multivariate_normal_logpdf", _mvn_logpdf)

# --- scipy.linalg: stacks (..., n, n), each matrix as alone ----------------------------------------
BATCH_RULES.add("expm",            leading(expm, (2,)))
BATCH_RULES.add("sqrtm",           leading(sqrtm, (2,)))
BATCH_RULES.add("solve_sylvester", leading(solve_sylvester, (2, 2, 2)))
BATCH_RULES.add("solve_banded",    _solve_banded)

# --- scipy.signal --------------------------------------------------------------------------------
BATCH_RULES.add("signal_convolve", _convolve)
# fmt: on
