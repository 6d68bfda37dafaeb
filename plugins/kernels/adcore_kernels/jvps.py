"""JVP rules of the kernel ops: the "jvp" table the forward backend needs.

Each entry maps an op name to a tuple with one rule per input of the op:

    rule(t, ans, *inputs, **params) -> that input's share of the output's tangent

`t` is the input's tangent with a leading batch axis, shape (B,) + input.shape (B
directions at once); the share has shape (B,) + ans.shape. Every op here is linear in
each differentiable input, so its share is the op itself applied to the tangent, the
other input held:

- pooling works on the last two axes with any leading ones, so the batched tangent goes
  through as it is (max_pool2d's through `max_pool2d_gather`, reading it at x's maxima);
- the convolutions take 4-D arrays, so `in_batch` folds B into one of the tangent's axes
  (the batch N, or a channel axis: then the op handles each direction as more channels),
  calls the op once and unfolds B from the output's matching axis, with reshape and
  transpose (adcore ops: the rules nest, forward over reverse included).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import adcore.numpy as anp
from adcore import lift
from adcore_kernels.ops import (
    avg_pool2d,
    avg_pool2d_grad,
    conv2d,
    conv2d_input_grad,
    conv2d_weight_grad,
    max_pool2d_gather,
    max_pool2d_scatter,
)


def _fold(t: Any, axis: int) -> Any:
    """A batched tangent (B,) + shape as one array of the input's rank: B folded into `axis`
    (the B directions side by side along it, each shape[axis] long)."""
    b, shape = t.shape[0], tuple(t.shape[1:])
    if axis:
        t = anp.transpose(t, (*range(1, axis + 1), 0, *range(axis + 1, t.ndim)))  # B next to `axis`
    return anp.reshape(t, (*shape[:axis], b * shape[axis], *shape[axis + 1 :]))


def _unfold(y: Any, axis: int, b: int) -> Any:
    """_fold's inverse on an op's output: axis `axis` (B * k long) split into (B, k), B moved first."""
    shape = tuple(y.shape)
    y = anp.reshape(y, (*shape[:axis], b, shape[axis] // b, *shape[axis + 1 :]))
    if axis:
        y = anp.transpose(y, (axis, *(i for i in range(y.ndim) if i != axis)))
    return y


def in_batch(op: Callable[[Any], Any], t: Any, axis: int, out_axis: int) -> Any:
    """op applied to each of the B directions of t, in one call: B folded into t's `axis`,
    unfolded from the output's `out_axis` (the output axis that `axis` maps to)."""
    return _unfold(op(_fold(t, axis)), out_axis, t.shape[0])


# fmt: off
JVPS: dict[str, tuple[Any, ...]] = {
    # --- convolution: (N, C, H, W) * (O, C, kh, kw) -> (N, O, H', W') ------------------------------------
    "conv2d":             (lambda t, ans, x, w, **p: in_batch(lambda tx: conv2d(tx, w, **p), t, 0, 0),
                           lambda t, ans, x, w, **p: in_batch(lambda tw: conv2d(x, tw, **p), t, 0, 1)),
    "conv2d_input_grad":  (lambda t, ans, g, w, **p: in_batch(lambda tg: conv2d_input_grad(tg, w, **p), t, 0, 0),
                           lambda t, ans, g, w, **p: in_batch(lambda tw: conv2d_input_grad(g, tw, **p), t, 1, 1)),
    "conv2d_weight_grad": (lambda t, ans, x, g, **p: in_batch(lambda tx: conv2d_weight_grad(tx, g, **p), t, 1, 1),
                           lambda t, ans, x, g, **p: in_batch(lambda tg: conv2d_weight_grad(x, tg, **p), t, 1, 0)),
    # --- pooling: (..., H, W) -> (..., H', W') ---------------------------------------------------------
    "max_pool2d":         (lambda t, ans, x, **p: max_pool2d_gather(t, x, **p),),
    "max_pool2d_gather":  (lambda t, ans, u, x, **p: max_pool2d_gather(lift(t, ans), x, **p), None),
    "max_pool2d_scatter": (lambda t, ans, g, x, **p: max_pool2d_scatter(lift(t, ans), x, **p), None),
    "avg_pool2d":         (lambda t, ans, x, **p: avg_pool2d(t, **p),),
    "avg_pool2d_grad":    (lambda t, ans, g, **p: avg_pool2d_grad(t, **p),),
}
# fmt: on
