"""Batch rules of the kernel ops: the "batch" table `adcore.vmap` reads (a kind adcore-batching
declares; without that plugin the registry sets these aside).

Each entry maps an op name to one rule:

    rule(dims, *inputs, **params) -> (out, out_dim)

`dims[i]` is input i's batch axis, or None where input i is the same for every example
(adcore.extend.batching says the rest). Every rule here computes each example the way the
op computes it alone, so its result is the per-example loop's:

- pooling works on the last two axes with any leading ones, each plane on its own: the batch
  axis is one more leading axis (`leading`);
- the convolutions take 4-D arrays: one batched input has its batch folded into an axis whose
  slices the op computes independently (`jvps.in_batch`, as the JVP rules fold a batch of
  tangents): N of x or g, or a channel axis -- O of w for conv2d, C of w for the input gradient,
  C of x or O of g for the weight gradient (which sums over N, so N is no place for a batch).
  `algorithm="auto"` picks by N and the channel counts, which folding changes, so the rule asks
  it for one example's choice and runs that: each example by the algorithm the loop runs.
  Both inputs batched (per-example kernels on per-example images) is a grouped convolution,
  which the kernels do not compute: NotImplemented, and vmap loops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adcore.extend import RuleTable
from adcore.extend.batching import leading, moved_to_front, ndim
from adcore_kernels import ops
from adcore_kernels._geometry import check, int_pair
from adcore_kernels.jvps import in_batch

BATCH_RULES = RuleTable("batch", __name__)


def _example_shape(x: Any, dim: int | None) -> tuple[int, ...]:
    shape = tuple(x.shape)
    return shape if dim is None else shape[:dim] + shape[dim + 1 :]


def _algorithm_inputs(op: str, a: tuple, b: tuple, params: dict) -> tuple[tuple, tuple]:
    """The (x, w) shapes `algorithm="auto"` chooses by for a call of `op` on inputs of shapes a, b
    (as adcore_kernels.conv reads them)."""
    if op == "conv2d":
        return a, b
    if op == "conv2d_input_grad":  # a is g (N, O, H', W'), b is w (O, C, kh, kw)
        return (a[0], b[1], *int_pair(op, "input_size", params["input_size"], 1)), b
    # conv2d_weight_grad: a is x (N, C, H, W), b is g (N, O, H', W')
    return a, (b[1], a[1], *int_pair(op, "kernel_size", params["kernel_size"], 1))


def _pinned(op: str, a: tuple, b: tuple, params: dict) -> dict:
    """params with algorithm "auto" replaced by what auto runs for one example of these shapes
    (which are checked first: a bad call raises the op's own error, as its impl would)."""
    check(op, a, b, **params)
    if params.get("algorithm", "auto") != "auto":
        return params
    from adcore_kernels.conv import choose_algorithm  # (imports numba, as the op's impl does)

    x, w = _algorithm_inputs(op, a, b, params)
    geometry = (params.get(k, d) for k, d in (("stride", 1), ("padding", 0), ("dilation", 1)))
    function = {"conv2d": "conv2d", "conv2d_input_grad": "input_grad"}.get(op, "weight_grad")
    return {**params, "algorithm": choose_algorithm(x, w, *geometry, function)}


def folded(op: Callable[..., Any], folds: tuple[tuple[int, int], tuple[int, int]]) -> Callable[..., Any]:
    """The batch rule of a convolution of two 4-D inputs with one batched: `folds[i]` is (the axis
    of input i the batch folds into, the output axis it unfolds from)."""

    def rule(dims: tuple, a: Any, b: Any, **params: Any) -> Any:
        if None not in dims:
            return NotImplemented  # a grouped convolution
        i = 0 if dims[0] is not None else 1
        batched = moved_to_front((a, b)[i], dims[i])
        if ndim(batched) != 5 or batched.shape[0] == 0:
            return NotImplemented  # not 4-D examples (the loop raises the op's error), or no example
        shapes = [_example_shape(x, d) for x, d in zip((a, b), dims)]
        params = _pinned(op.name, *shapes, params)
        axis, out_axis = folds[i]
        if i == 0:
            return in_batch(lambda t: op(t, b, **params), batched, axis, out_axis), 0
        return in_batch(lambda t: op(a, t, **params), batched, axis, out_axis), 0

    rule.__name__ = f"batch_{op.name}"
    return rule


# fmt: off
# --- convolution: (N, C, H, W) * (O, C, kh, kw) -> (N, O, H', W') --------------------------------------------
#                                               (x or g: fold, out)   (w or g: fold, out)
BATCH_RULES.add("conv2d",             folded(ops.conv2d,             ((0, 0), (0, 1))))
BATCH_RULES.add("conv2d_input_grad",  folded(ops.conv2d_input_grad,  ((0, 0), (1, 1))))
BATCH_RULES.add("conv2d_weight_grad", folded(ops.conv2d_weight_grad, ((1, 1), (1, 0))))

# --- pooling: (..., H, W) -> (..., H', W'), the linear maps' first input broadcasting with x ------------------
BATCH_RULES.add("max_pool2d",         leading(ops.max_pool2d, (2,)))
BATCH_RULES.add("max_pool2d_gather",  leading(ops.max_pool2d_gather, (2, 2)))
BATCH_RULES.add("max_pool2d_scatter", leading(ops.max_pool2d_scatter, (2, 2)))
BATCH_RULES.add("avg_pool2d",         leading(ops.avg_pool2d, (2,)))
BATCH_RULES.add("avg_pool2d_grad",    leading(ops.avg_pool2d_grad, (2,)))
# fmt: on
