"""The helpers of `vjp` and `jvp` rules (re-exported by `adcore.extend`).

`unbroadcast` for VJP rules; `lift` and `batched_axis` for JVP rules, whose tangents carry a
leading batch axis (one slice per tangent direction); `reduced_axes` and `kept_shape` for
reductions; `tie_weights`, `tie_split`, `mask`, `inside_clip` for derivatives that are steps,
and `times_step` to apply one (0 where the step is 0, even times inf or nan: select, not multiply);
`prod_partials` and `power_by_base` / `power_by_exponent` for the products and powers whose
formulas break at zero. They are written with adcore ops, so a rule built from them can be
differentiated again. Layer 3 (docs/architecture.md): it imports core and ops only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.core import Tracer, concrete, plain_numbers
from adcore.errors import AdcoreError
from adcore.ops import elementwise, reductions, shapes


def unbroadcast(g: Any, target: Any) -> Any:
    """Sum `g` back to the shape of `target`, undoing NumPy broadcasting (seed 001, 张量广播规律)."""
    shape = getattr(target, "shape", ())
    g_shape = getattr(g, "shape", ())
    if g_shape == shape:
        return g
    extra = len(g_shape) - len(shape)
    if extra > 0:
        g = reductions.sum(g, axis=tuple(range(extra)))
    kept = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if kept:
        g = reductions.sum(g, axis=kept, keepdims=True)
    if g.shape != shape:
        g = shapes.reshape(g, shape=shape)
    return g


def lift(t: Any, ans: Any) -> Any:
    """A batched tangent with axes of length 1 inserted after its batch axis, so that its
    input's axes line up under the output's as NumPy broadcasting lines them up.

    In a JVP rule of a broadcasting op, `lift(t, ans) * y` is (B,) + ans.shape where
    `t * y` would pair the batch axis with one of y's axes.
    """
    missing = len(getattr(ans, "shape", ())) - (len(t.shape) - 1)
    if missing <= 0:
        return t
    return shapes.reshape(t, shape=t.shape[:1] + (1,) * missing + t.shape[1:])


def batched_axis(axis: Any, ndim: int) -> Any:
    """An op's `axis` param for an input of `ndim` axes, moved onto its batched tangent:
    non-negative axes shift by one, negative ones stay, None becomes every axis but the batch."""
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, int):
        return axis + 1 if axis >= 0 else axis
    return tuple(a + 1 if a >= 0 else a for a in axis)


def reduced_axes(ndim: int, axis: Any) -> tuple[int, ...]:
    """The axes a reduction over `axis` removes, non-negative; None is every axis. A 0-d array
    has none, though NumPy accepts axis 0 or -1 for it."""
    if axis is None or ndim == 0:
        return tuple(range(ndim))
    if axis.__class__ is int:  # the common case, without np.atleast_1d's array
        return (axis % ndim,)
    return tuple(a % ndim for a in np.atleast_1d(axis))


def kept_shape(x: Any, axis: Any) -> tuple[int, ...]:
    """x's shape with the reduced axes set to 1 (what keepdims=True would give)."""
    axes = reduced_axes(x.ndim, axis)
    return tuple(1 if i in axes else n for i, n in enumerate(x.shape))


def tie_weights(x: Any, ans: Any, axis: Any, dtype: Any) -> np.ndarray:
    """d max / d x (or min): 1/k on each of the k elements equal to the result, 0 elsewhere;
    a NaN result is "equal" to the NaNs it came from, as max_pool2d and PyTorch have it."""
    x, ans = concrete(x), concrete(ans)
    ans = np.reshape(ans, kept_shape(x, axis))
    hit = x == ans
    nan_ans = np.isnan(ans)
    if _anywhere(nan_ans):  # x's full size is scanned for NaNs only where a result is NaN
        hit |= np.isnan(x) & nan_ans
    counts = np.sum(hit, axis=axis, keepdims=True)
    if not _anywhere(counts != 1):  # the usual case, no ties: the weights are the hits, no division
        return _as_dtype(hit, dtype)
    return _as_dtype(hit / counts, dtype)


def prod_partials(x: Any, ans: Any, axis: Any) -> Any:
    """d prod(x, axis) / d x elementwise: the product of the other elements, zeros included.

    ans / x wherever x != 0; at a lone zero of its slice, the product of the others. A slice
    with two zeros or more has every partial 0, but not every second derivative (prod(x)'s
    d2 / dx0 dx1 at x = (0, 0, 3) is 3), so those take the products of the others one by one.
    """
    zero = concrete(x) == 0
    if _anywhere(np.sum(zero, axis=axis, keepdims=True) > 1):
        return _products_of_others(x, axis)
    nonzero_x = elementwise.where(zero, 1.0, x)
    others = reductions.prod(nonzero_x, axis=axis, keepdims=True)
    ans_kept = shapes.reshape(ans, shape=kept_shape(x, axis))
    return elementwise.where(zero, others, ans_kept / nonzero_x)


def _products_of_others(x: Any, axis: Any) -> Any:
    """For each element, the product of the others in its slice along `axis`: n products of n
    elements per slice of n (no division, so exact with any number of zeros)."""
    axes = reduced_axes(x.ndim, axis)
    order = tuple(i for i in range(x.ndim) if i not in axes) + axes
    moved = shapes.transpose(x, axes=order)
    n = int(np.prod([x.shape[a] for a in axes], dtype=int))
    rows = shapes.reshape(moved, shape=moved.shape[: x.ndim - len(axes)] + (1, n))
    others = reductions.prod(elementwise.where(np.eye(n, dtype=bool), 1.0, rows), axis=-1)
    return shapes.transpose(shapes.reshape(others, shape=moved.shape), axes=tuple(np.argsort(order)))


def mask(condition: Any, like: Any) -> np.ndarray:
    """A concrete 0/1 (or weight) array in `like`'s dtype: a derivative that is a step."""
    return _as_dtype(condition, like.dtype)


def _as_dtype(values: Any, dtype: Any) -> Any:
    """Concrete values in `dtype`; under vmap a batch of them (concrete() stops at a vmap's
    BatchTracer, so np.asarray of it would make vmap run once per example)."""
    if isinstance(values, Tracer):
        return values.astype(dtype)
    return np.asarray(values, dtype=dtype)


def nan_where_value_is(x: Any, ans: Any) -> Any:
    """x, with nan where the op's value `ans` is nan (a real x outside the op's domain: log(-1),
    arctanh(2)): a rule that divides by it gives nan there, not the finite slope of the formula,
    since a slope must not be a number where the value is not one. x itself where no value is nan,
    and where ans has no number (symbolic, whose where refuses a nan constant)."""
    try:
        values = concrete(ans)
    except AdcoreError:  # a backend with no numbers
        return x
    if values.__class__ is np.float64 or values.__class__ is np.float32:
        return x if values == values else elementwise.where(True, np.nan, x)  # a scalar, at no cost
    undefined = np.isnan(values)
    return elementwise.where(undefined, np.nan, x) if _anywhere(undefined) else x


def times_step(v: Any, weight: Any, zero: Any = None) -> Any:
    """v * weight where weight is a step's derivative (concrete: 0/1, 0.5 on ties, a sign), with 0
    wherever weight is 0 (`zero`, if the caller has it), even where v is inf or nan: the chain
    rule's zero factor wins (as JAX's select), so a NaN or inf tangent or cotangent the op ignores
    there does not poison the result."""
    product = v * weight
    if all_finite(product):  # weight is finite: no 0 * inf, the product is right
        return product  # (a select by a random mask costs 30 products: only where it changes something)
    if zero is None:
        zero = (weight if isinstance(weight, Tracer) else np.asarray(weight)) == 0
    if product.__class__ is np.ndarray:
        return np.where(zero, 0.0, product)
    return elementwise.where(zero, 0.0, product)


def all_finite(a: Any) -> bool:
    """No inf or nan in a (traced or not): its sum is finite (one fast pass; an overflowing sum of
    finite values says False, which only costs the caller its slower exact path). Under vmap it
    asks the whole batch: all finite there means all finite in each example, so the shortcut
    stays right, and the cotangent is not converted (vmap would loop over the examples)."""
    while isinstance(a, Tracer):  # concrete(a), through a vmap's batch (its `value`) too
        a = a.value if a.concrete_itself else a._concrete_value()
    values = np.asarray(a)
    if values.dtype.kind not in "fc":
        return values.dtype.kind in "iub"  # integers are finite; objects (sympy) take the exact path
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, an overflow: False, quietly
        return bool(np.isfinite(np.add.reduce(values, axis=None)))


def tie_split(x: Any, y: Any, wins: Any, like: Any) -> np.ndarray:
    """d maximum(x, y) / d x (with wins=np.greater; np.less for minimum): 1 where x wins,
    0.5 on a tie, 0 where it loses, in `like`'s dtype."""
    x, y = concrete(x), concrete(y)
    return mask(wins(x, y) + 0.5 * (x == y), like)


def inside_clip(x: Any, a_min: Any, a_max: Any) -> np.ndarray:
    """Where clip(x, a_min, a_max) passes x through (bounds included): its derivative is 1 there."""
    x = concrete(x)
    lo = True if a_min is None else x >= concrete(a_min)
    hi = True if a_max is None else x <= concrete(a_max)
    return np.logical_and(lo, hi)


def _anywhere(mask: Any) -> bool:
    """np.any(mask), without its dispatch cost on the hot path (mask is often a Python bool). Under
    vmap, anywhere in the batch: the shortcuts it guards are right for every example then."""
    if isinstance(mask, Tracer):
        return bool(plain_numbers(mask).any())
    return bool(mask.any()) if hasattr(mask, "any") else bool(mask)


def power_by_base(x: Any, y: Any) -> Any:
    """d x**y / d x = y x**(y-1), and 0 where y = 0: x**0 is the constant 1, also at x = 0,
    where the formula is 0 * inf. There the exponent is taken as 1, so that the rule stays
    finite when it is differentiated again (x**1's second derivative is this case one order up)."""
    y_zero = concrete(y) == 0
    if not _anywhere(y_zero):  # the usual case: one comparison on the hot path
        if y.__class__ in (int, float) and y == 2:  # x**2, the commonest power: 2 x, one array op, not two
            return 2 * x
        return y * x ** (y - 1)
    if isinstance(y, Tracer):  # d/dy of the rule at y = 0 is 1/x where x != 0: keep the formula there
        y_zero = y_zero & (concrete(x) == 0)
    e = elementwise.where(y_zero, 1.0, y)
    return elementwise.where(y_zero, 0.0, e * x ** (e - 1))


def power_by_exponent(x: Any, y: Any, ans: Any) -> Any:
    """d x**y / d y = x**y log x, and 0 where x = 0 < y: 0**y is 0 on both sides of y, where the
    formula is 0 * -inf. Where no derivative exists it is NumPy's value of the formula: nan for
    x < 0 (no real x**y for y near an integer), -inf for x = 0 >= y (0**y jumps there)."""
    flat = concrete(x) == 0
    if _anywhere(flat):
        flat = flat & (concrete(y) > 0)
    if not _anywhere(flat):
        return ans * elementwise.log(x)
    return ans * elementwise.log(elementwise.where(flat, 1.0, x))  # log 1 = 0 there, also when differentiated
