"""JVP rules of the core ops: the "jvp" rule table the forward backend needs.

Each entry maps an op name to a tuple with one rule per input of the op:

    rule(t, ans, *inputs, **params) -> that input's share of the output's tangent

`t` is the input's tangent with a leading batch axis, shape (B,) + input.shape: B
tangent directions at once (a Jacobian is one pass with B = n, seed 001's dual
numbers with B = 1). `ans` is the output and `inputs` the op's inputs, all without
the batch axis; `params` are the op's static params as passed. The share has shape
(B,) + ans.shape, or broadcasts to it. So a rule for an input as shaped as the
output reads like the math (`t * cos(x)`); broadcasting ops `lift` the tangent to
put its axes under the output's, and axis params move past the batch axis with
`batched_axis`. The shares of all inputs are summed. `None` means the input sends
no tangent (zero-derivative ops, conditions). Variadic ops (concatenate, stack)
have one rule taking the input's position first. Rules are written with adcore ops,
never raw NumPy on values that might be traced, so they nest: forward over reverse
(Hessians), forward over forward, reverse over forward. Masks (comparisons) are
computed on concrete values: they have no derivative. Conventions at kinks
(abs'(0)=0, ties split equally, ...): docs/conventions.md, the same as the VJPs'.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import (
    batched_axis,
    inside_clip,
    kept_shape,
    lift,
    mask,
    power_by_base,
    power_by_exponent,
    prod_partials,
    tie_split,
    tie_weights,
)

JVPS: dict[str, Any] = {}


def defjvp(op: str, *rules: Any) -> None:
    JVPS[op] = rules


def defjvp_variadic(op: str, rule: Any) -> None:
    JVPS[op] = rule


def _batch(t: Any, ans: Any) -> tuple[int, ...]:
    """The shape of the output's batched tangent: (B,) + ans.shape."""
    return t.shape[:1] + ans.shape


def _reduce(t: Any, x: Any, axis: Any, keepdims: bool, weights: Any = None) -> Any:
    """sum over `axis` of the tangent (times per-element weights): a reduction's JVP."""
    if weights is not None:
        t = t * weights
    return anp.sum(t, axis=batched_axis(axis, x.ndim), keepdims=keepdims)


def _matmul_jvp(argnum: int):
    def rule(t, ans, a, b):
        if argnum == 1 and b.ndim == 1 and a.ndim == 2:  # matrix @ vector: one product t @ a^T
            return anp.matmul(t, anp.transpose(a))
        if argnum == 0:  # t_a @ b, a 1-d a as a row, batch axes lined up
            ta = t if a.ndim > 1 else anp.reshape(t, (t.shape[0], 1, a.shape[0]))
            share = anp.matmul(_lift_to(ta, max(ta.ndim - 1, b.ndim)), b)
        else:  # a @ t_b, a 1-d b as a column
            tb = t if b.ndim > 1 else anp.reshape(t, (t.shape[0], b.shape[0], 1))
            share = anp.matmul(a, _lift_to(tb, max(a.ndim, tb.ndim - 1)))
        return anp.reshape(share, _batch(t, ans))

    return rule


def _lift_to(t: Any, ndim: int) -> Any:
    """The batched tangent with axes of length 1 after the batch axis, up to 1 + ndim axes."""
    missing = ndim - (t.ndim - 1)
    return t if missing <= 0 else anp.reshape(t, t.shape[:1] + (1,) * missing + t.shape[1:])


def _transpose_jvp(t, ans, x, axes=None):
    order = range(x.ndim - 1, -1, -1) if axes is None else (a % x.ndim for a in axes)
    return anp.transpose(t, (0,) + tuple(a + 1 for a in order))


def _as_tuple(index: Any) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def _advanced_axes_first(index: tuple) -> int:
    """Where NumPy puts the batch axis of t[:, *index]: after the advanced-index axes when
    the advanced indices (arrays, and integers among them) are not next to each other,
    since NumPy then moves those axes to the front; else first (0)."""
    if not any(isinstance(i, (np.ndarray, list)) for i in index):
        return 0
    positions = [k for k, i in enumerate(index) if isinstance(i, (np.ndarray, list, int, np.integer))]
    if positions == list(range(positions[0], positions[-1] + 1)):
        return 0
    shapes = [
        np.shape(np.nonzero(i)[0]) if np.asarray(i).dtype == bool else np.shape(i)
        for i in index
        if isinstance(i, (np.ndarray, list, int, np.integer))
    ]
    return len(np.broadcast_shapes(*shapes))


def _move_axis(t: Any, source: int, destination: int) -> Any:
    order = [a for a in range(t.ndim) if a != source]
    order.insert(destination, source)
    return anp.transpose(t, tuple(order))


def _getitem_jvp(t, ans, x, index):
    index = _as_tuple(index)
    out = anp.getitem(t, (slice(None),) + index)
    k = _advanced_axes_first(index)
    return out if k == 0 else _move_axis(out, k, 0)


def _scatter_add_jvp(t, ans, v, index, shape):
    index = _as_tuple(index)
    region = np.shape(concrete(ans)[index])  # where v lands, which v broadcasts to
    batched_shape = t.shape[:1] + tuple(shape)
    t = _lift_to(t, len(region))
    k = _advanced_axes_first(index)
    if k:
        t = _move_axis(t, 0, k)
    return anp.scatter_add(t, index=(slice(None),) + index, shape=batched_shape)


def _concatenate_jvp(i, t, ans, *xs, axis=0):
    # the output's tangent is zero outside input i's block
    parts = [t if j == i else np.zeros(t.shape[:1] + x.shape, dtype=t.dtype) for j, x in enumerate(xs)]
    return anp.concatenate(parts, axis=batched_axis(axis, ans.ndim))


def _stack_jvp(i, t, ans, *xs, axis=0):
    parts = [t if j == i else np.zeros(t.shape, dtype=t.dtype) for j in range(len(xs))]
    return anp.stack(parts, axis=batched_axis(axis, ans.ndim))


# fmt: off
# --- arithmetic -------------------------------------------------------------------
defjvp("negative",   lambda t, ans, x: -t)
defjvp("add",        lambda t, ans, x, y: lift(t, ans),
                     lambda t, ans, x, y: lift(t, ans))
defjvp("subtract",   lambda t, ans, x, y: lift(t, ans),
                     lambda t, ans, x, y: -lift(t, ans))
defjvp("multiply",   lambda t, ans, x, y: lift(t, ans) * y,
                     lambda t, ans, x, y: lift(t, ans) * x)
defjvp("divide",     lambda t, ans, x, y: lift(t, ans) / y,
                     lambda t, ans, x, y: lift(t, ans) * (-ans / y))
defjvp("power",      lambda t, ans, x, y: lift(t, ans) * power_by_base(x, y),
                     lambda t, ans, x, y: lift(t, ans) * power_by_exponent(x, y, ans))
defjvp("square",     lambda t, ans, x: t * (2 * x))
defjvp("reciprocal", lambda t, ans, x: t * (-ans * ans))
defjvp("sqrt",       lambda t, ans, x: t * (0.5 / ans))

# --- exponentials and logarithms ----------------------------------------------------
defjvp("exp",        lambda t, ans, x: t * ans)
defjvp("expm1",      lambda t, ans, x: t * (ans + 1))
defjvp("log",        lambda t, ans, x: t / x)
defjvp("log1p",      lambda t, ans, x: t / (1 + x))

# --- trigonometric and hyperbolic -------------------------------------------------
defjvp("sin",        lambda t, ans, x: t * anp.cos(x))
defjvp("cos",        lambda t, ans, x: t * -anp.sin(x))
defjvp("tan",        lambda t, ans, x: t * (1 + ans * ans))
defjvp("arcsin",     lambda t, ans, x: t / anp.sqrt(1 - x * x))
defjvp("arccos",     lambda t, ans, x: t / -anp.sqrt(1 - x * x))
defjvp("arctan",     lambda t, ans, x: t / (1 + x * x))
defjvp("arctan2",    lambda t, ans, y, x: lift(t, ans) * (x / (x * x + y * y)),
                     lambda t, ans, y, x: lift(t, ans) * (-y / (x * x + y * y)))
defjvp("sinh",       lambda t, ans, x: t * anp.cosh(x))
defjvp("cosh",       lambda t, ans, x: t * anp.sinh(x))
defjvp("tanh",       lambda t, ans, x: t * (1 - ans * ans))

# --- kinks and steps -----------------------------------------------------------------
defjvp("abs",        lambda t, ans, x: t * anp.sign(x))
defjvp("sign",       None)
defjvp("floor",      None)
defjvp("round",      None)
defjvp("maximum",    lambda t, ans, x, y: lift(t, ans) * tie_split(x, y, np.greater, t),
                     lambda t, ans, x, y: lift(t, ans) * tie_split(y, x, np.greater, t))
defjvp("minimum",    lambda t, ans, x, y: lift(t, ans) * tie_split(x, y, np.less, t),
                     lambda t, ans, x, y: lift(t, ans) * tie_split(y, x, np.less, t))
defjvp("clip",       lambda t, ans, x, a_min=None, a_max=None: t * mask(inside_clip(x, a_min, a_max), t))
defjvp("where",      None,
                     lambda t, ans, c, x, y: anp.where(concrete(c), lift(t, ans), 0.0),
                     lambda t, ans, c, x, y: anp.where(concrete(c), 0.0, lift(t, ans)))

# --- reductions and matmul ----------------------------------------------------------
defjvp("sum",        lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims))
defjvp("mean",       lambda t, ans, x, axis=None, keepdims=False: anp.mean(t, axis=batched_axis(axis, x.ndim), keepdims=keepdims))
defjvp("prod",       lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims, prod_partials(x, ans, axis)))
defjvp("max",        lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims, tie_weights(x, ans, axis, t.dtype)))
defjvp("min",        lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims, tie_weights(x, ans, axis, t.dtype)))
defjvp("matmul",     _matmul_jvp(0), _matmul_jvp(1))

# --- shapes and indexing ------------------------------------------------------------
defjvp("transpose",    _transpose_jvp)
defjvp("reshape",      lambda t, ans, x, shape: anp.reshape(t, _batch(t, ans)))
defjvp("broadcast_to", lambda t, ans, x, shape: anp.broadcast_to(lift(t, ans), _batch(t, ans)))
defjvp("expand_dims",  lambda t, ans, x, axis: anp.reshape(t, _batch(t, ans)))
defjvp("squeeze",      lambda t, ans, x, axis=None: anp.reshape(t, _batch(t, ans)))
defjvp("getitem",      _getitem_jvp)
defjvp("scatter_add",  _scatter_add_jvp)
defjvp_variadic("concatenate", _concatenate_jvp)
defjvp_variadic("stack",       _stack_jvp)

# --- neural-network ops -------------------------------------------------------------
defjvp("sigmoid",     lambda t, ans, x: t * (ans * (1 - ans)))
defjvp("relu",        lambda t, ans, x: t * mask(concrete(x) > 0, t))
defjvp("softplus",    lambda t, ans, x: t * anp.sigmoid(x))
defjvp("softmax",     lambda t, ans, x, axis=-1: ans * (t - anp.sum(t * ans, axis=batched_axis(axis, x.ndim), keepdims=True)))
defjvp("log_softmax", lambda t, ans, x, axis=-1: t - anp.sum(t * anp.exp(ans), axis=batched_axis(axis, x.ndim), keepdims=True))
defjvp("logsumexp",   lambda t, ans, x, axis=None, keepdims=False: _reduce(t, x, axis, keepdims, anp.exp(x - anp.reshape(ans, kept_shape(x, axis)))))
# fmt: on
