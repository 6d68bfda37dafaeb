"""VJP rules of the kernel ops: the "vjp" table the reverse backend needs.

Each entry maps an op name to a tuple with one rule per input of the op:

    rule(g, ans, *inputs, **params) -> the cotangent of that input

`g` is the cotangent of the output, `ans` the output, `params` the op's params as the
caller passed them (`**p`, handed on to the op the rule calls). Every op here is linear
in each differentiable input, so each rule is another op of this plugin, its transpose:

    conv2d(x, w)            x: conv2d_input_grad(g, w)    w: conv2d_weight_grad(x, g)
    conv2d_input_grad(g, w) g: conv2d(h, w)               w: conv2d_weight_grad(h, g)
    conv2d_weight_grad(x, g) x: conv2d_input_grad(g, h)   g: conv2d(x, h)
    max_pool2d(x)           x: max_pool2d_scatter(g, x)
    max_pool2d_gather(t, x) t: max_pool2d_scatter(g, x)   (x: not differentiable)
    max_pool2d_scatter(g, x) g: max_pool2d_gather(h, x)
    avg_pool2d(x)           x: avg_pool2d_grad(g)
    avg_pool2d_grad(g)      g: avg_pool2d(h)

(h is the cotangent of the output where the names above would clash.) The set is closed,
so the rules can be differentiated again: Hessians through conv2d and pooling work on
every pair of backends. A convolution and its gradients share the geometry (kernel size,
stride, dilation) that decides which algorithms apply (`adcore_kernels.conv.applicable`),
so the forward's algorithm is passed on unchanged. A first input of the pooling maps may
have leading axes that broadcast against x's: its cotangent is summed back (`unbroadcast`).
"""

from __future__ import annotations

from typing import Any

from adcore import unbroadcast
from adcore_kernels.ops import (
    avg_pool2d,
    avg_pool2d_grad,
    conv2d,
    conv2d_input_grad,
    conv2d_weight_grad,
    max_pool2d_gather,
    max_pool2d_scatter,
)


def without(params: dict, name: str) -> dict:
    """The params but `name`: a gradient op's params (input_size, kernel_size) handed to the forward."""
    return {k: v for k, v in params.items() if k != name}


# fmt: off
VJPS: dict[str, tuple[Any, ...]] = {
    # --- convolution ----------------------------------------------------------------------------
    "conv2d":             (lambda g, ans, x, w, **p: conv2d_input_grad(g, w, x.shape[2:], **p),
                           lambda g, ans, x, w, **p: conv2d_weight_grad(x, g, w.shape[2:], **p)),
    "conv2d_input_grad":  (lambda h, ans, g, w, **p: conv2d(h, w, **without(p, "input_size")),
                           lambda h, ans, g, w, **p: conv2d_weight_grad(h, g, w.shape[2:], **without(p, "input_size"))),
    "conv2d_weight_grad": (lambda h, ans, x, g, **p: conv2d_input_grad(g, h, x.shape[2:], **without(p, "kernel_size")),
                           lambda h, ans, x, g, **p: conv2d(x, h, **without(p, "kernel_size"))),
    # --- pooling ----------------------------------------------------------------------------------
    "max_pool2d":         (lambda g, ans, x, **p: max_pool2d_scatter(g, x, **p),),
    "max_pool2d_gather":  (lambda h, ans, t, x, **p: unbroadcast(max_pool2d_scatter(h, x, **p), t), None),
    "max_pool2d_scatter": (lambda h, ans, g, x, **p: unbroadcast(max_pool2d_gather(h, x, **p), g), None),
    "avg_pool2d":         (lambda g, ans, x, **p: avg_pool2d_grad(g, x.shape[-2:], **p),),
    "avg_pool2d_grad":    (lambda h, ans, g, **p: avg_pool2d(h, **without(p, "input_size")),),
}
# fmt: on
