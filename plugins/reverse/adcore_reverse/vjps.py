"""VJP rules of the core ops: the "vjp" rule table the reverse backend needs.

Each entry maps an op name to a tuple with one rule per input of the op:

    rule(g, ans, *inputs, **params) -> the cotangent of that input

`g` is the cotangent of the output, `ans` the output, `inputs` the op's inputs and
`params` its static params as passed (so every param has NumPy's default here). The
returned cotangent has the input's shape: binary ops `unbroadcast` it (seed 001,
张量广播规律). `None` means no derivative flows to that input (zero-derivative ops,
conditions). Variadic ops (concatenate, stack) have one rule taking the input's
position first. Rules are written with adcore ops, never raw NumPy on values that
might be traced, so the backward pass can itself be differentiated (reverse over
reverse). Masks (comparisons) are computed on concrete values: they have no derivative.
Conventions at kinks (abs'(0)=0, ties split equally, ...): docs/conventions.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import (
    inside_clip,
    kept_shape,
    mask,
    power_by_base,
    power_by_exponent,
    prod_partials,
    tie_split,
    tie_weights,
    unbroadcast,
)
from adcore_reverse.zeros import MaskingRules, where_branch

VJPS: dict[str, Any] = {}


def defvjp(op: str, *rules: Any) -> None:
    VJPS[op] = rules


def defvjp_variadic(op: str, rule: Any) -> None:
    VJPS[op] = rule


def _expand(g: Any, x: Any, axis: Any) -> Any:
    """A reduction's cotangent, broadcast back over the input x."""
    return anp.broadcast_to(anp.reshape(g, kept_shape(x, axis)), x.shape)


def _matmul_vjp(argnum: int):
    def rule(g, ans, a, b):
        # promote 1-d operands to matrices as matmul does, then A^T G and G B^T
        a2 = a if a.ndim > 1 else anp.reshape(a, (1, a.shape[0]))
        b2 = b if b.ndim > 1 else anp.reshape(b, (b.shape[0], 1))
        # restore the dropped axes: b's last first, so a 0-d g (vector @ vector) becomes 1x1
        g2 = g
        if b.ndim == 1:
            g2 = anp.expand_dims(g2, -1)
        if a.ndim == 1:
            g2 = anp.expand_dims(g2, -2)
        if argnum == 0:
            return anp.reshape(unbroadcast(anp.matmul(g2, _swap(b2)), a2), a.shape)
        return anp.reshape(unbroadcast(anp.matmul(_swap(a2), g2), b2), b.shape)

    return rule


def _swap(x: Any) -> Any:
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return anp.transpose(x, axes)


def _transpose_vjp(g, ans, x, axes=None):
    if axes is None:
        return anp.transpose(g)
    return anp.transpose(g, tuple(int(i) for i in np.argsort([a % x.ndim for a in axes])))


def _concatenate_vjp(i, g, ans, *xs, axis=0):
    ax = axis % ans.ndim
    start = int(np.sum([x.shape[ax] for x in xs[:i]], dtype=int))
    return anp.getitem(g, index=(slice(None),) * ax + (slice(start, start + xs[i].shape[ax]),))


def _stack_vjp(i, g, ans, *xs, axis=0):
    return anp.getitem(g, index=(slice(None),) * (axis % ans.ndim) + (i,))


# fmt: off
# --- arithmetic -------------------------------------------------------------------
defvjp("negative",   lambda g, ans, x: -g)
defvjp("add",        lambda g, ans, x, y: unbroadcast(g, x),
                     lambda g, ans, x, y: unbroadcast(g, y))
defvjp("subtract",   lambda g, ans, x, y: unbroadcast(g, x),
                     lambda g, ans, x, y: unbroadcast(-g, y))
defvjp("multiply",   lambda g, ans, x, y: unbroadcast(g * y, x),
                     lambda g, ans, x, y: unbroadcast(g * x, y))
defvjp("divide",     lambda g, ans, x, y: unbroadcast(g / y, x),
                     lambda g, ans, x, y: unbroadcast(-g * ans / y, y))
defvjp("power",      lambda g, ans, x, y: unbroadcast(g * power_by_base(x, y), x),
                     lambda g, ans, x, y: unbroadcast(g * power_by_exponent(x, y, ans), y))
defvjp("square",     lambda g, ans, x: g * 2 * x)
defvjp("reciprocal", lambda g, ans, x: -g * ans * ans)
defvjp("sqrt",       lambda g, ans, x: g * 0.5 / ans)

# --- exponentials and logarithms ----------------------------------------------------
defvjp("exp",        lambda g, ans, x: g * ans)
defvjp("expm1",      lambda g, ans, x: g * (ans + 1))
defvjp("log",        lambda g, ans, x: g / x)
defvjp("log1p",      lambda g, ans, x: g / (1 + x))

# --- trigonometric and hyperbolic -------------------------------------------------
defvjp("sin",        lambda g, ans, x: g * anp.cos(x))
defvjp("cos",        lambda g, ans, x: -g * anp.sin(x))
defvjp("tan",        lambda g, ans, x: g * (1 + ans * ans))
defvjp("arcsin",     lambda g, ans, x: g / anp.sqrt(1 - x * x))
defvjp("arccos",     lambda g, ans, x: -g / anp.sqrt(1 - x * x))
defvjp("arctan",     lambda g, ans, x: g / (1 + x * x))
defvjp("arctan2",    lambda g, ans, y, x: unbroadcast(g * x / (x * x + y * y), y),
                     lambda g, ans, y, x: unbroadcast(-g * y / (x * x + y * y), x))
defvjp("sinh",       lambda g, ans, x: g * anp.cosh(x))
defvjp("cosh",       lambda g, ans, x: g * anp.sinh(x))
defvjp("tanh",       lambda g, ans, x: g * (1 - ans * ans))

# --- kinks and steps -----------------------------------------------------------------
defvjp("abs",        lambda g, ans, x: g * anp.sign(x))
defvjp("sign",       None)
defvjp("floor",      None)
defvjp("round",      None)
defvjp("maximum",    lambda g, ans, x, y: unbroadcast(g * tie_split(x, y, np.greater, g), x),
                     lambda g, ans, x, y: unbroadcast(g * tie_split(y, x, np.greater, g), y))
defvjp("minimum",    lambda g, ans, x, y: unbroadcast(g * tie_split(x, y, np.less, g), x),
                     lambda g, ans, x, y: unbroadcast(g * tie_split(y, x, np.less, g), y))
defvjp("clip",       lambda g, ans, x, a_min=None, a_max=None: g * mask(inside_clip(x, a_min, a_max), g))
VJPS["where"] = MaskingRules((None,  # untaken positions are structural zeros (zeros.py): no 0 * inf there
                     lambda g, ans, c, x, y: where_branch(g, ans, c, x, taken_where=True),
                     lambda g, ans, c, x, y: where_branch(g, ans, c, y, taken_where=False)))

# --- reductions and matmul ----------------------------------------------------------
defvjp("sum",        lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis))
defvjp("mean",       lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis) * (max(ans.size, 1) / max(x.size, 1)))
defvjp("prod",       lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis) * prod_partials(x, ans, axis))
defvjp("max",        lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis) * tie_weights(x, ans, axis, g.dtype))
defvjp("min",        lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis) * tie_weights(x, ans, axis, g.dtype))
defvjp("matmul",     _matmul_vjp(0), _matmul_vjp(1))

# --- shapes and indexing ------------------------------------------------------------
defvjp("transpose",    _transpose_vjp)
defvjp("reshape",      lambda g, ans, x, shape: anp.reshape(g, x.shape))
defvjp("broadcast_to", lambda g, ans, x, shape: unbroadcast(g, x))
defvjp("expand_dims",  lambda g, ans, x, axis: anp.reshape(g, x.shape))
defvjp("squeeze",      lambda g, ans, x, axis=None: anp.reshape(g, x.shape))
defvjp("getitem",      lambda g, ans, x, index: anp.scatter_add(g, index=index, shape=x.shape))
defvjp("scatter_add",  lambda g, ans, v, index, shape: unbroadcast(anp.getitem(g, index=index), v))
defvjp_variadic("concatenate", _concatenate_vjp)
defvjp_variadic("stack",       _stack_vjp)

# --- neural-network ops -------------------------------------------------------------
defvjp("sigmoid",     lambda g, ans, x: g * ans * (1 - ans))
defvjp("relu",        lambda g, ans, x: g * mask(concrete(x) > 0, g))
defvjp("softplus",    lambda g, ans, x: g * anp.sigmoid(x))
defvjp("softmax",     lambda g, ans, x, axis=-1: ans * (g - anp.sum(g * ans, axis=axis, keepdims=True)))
defvjp("log_softmax", lambda g, ans, x, axis=-1: g - anp.exp(ans) * anp.sum(g, axis=axis, keepdims=True))
defvjp("logsumexp",   lambda g, ans, x, axis=None, keepdims=False: _expand(g, x, axis) * anp.exp(x - anp.reshape(ans, kept_shape(x, axis))))
# fmt: on
