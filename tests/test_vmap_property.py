"""Property: vmap of elementwise functions and reductions at random example shapes, batch sizes,
batch axes (in_axes and out_axes, negative too) and reduction axes is the Python loop over the
batch: bit for bit for elementwise functions, to rounding for reductions (NumPy's summation
order depends on the layout), and vmap(grad(f)) is the loop of grad(f)."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vmap_reference import assert_same, looped

import adcore
import adcore.numpy as anp
from adcore import vmap
from adcore.vmap import VmapFallbackWarning

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

UNARY = {
    "sin": anp.sin,
    "exp": lambda x: anp.exp(0.3 * x),
    "tanh times x": lambda x: anp.tanh(x) * x,
    "square plus x": lambda x: x * x + x,
    "where": lambda x: anp.where(x > 0, x, 0.1 * x),
    "abs": anp.abs,
    "maximum": lambda x: anp.maximum(x, 0.2),
}
BINARY = {
    "product": lambda x, y: x * y,
    "sin sum": lambda x, y: anp.sin(x) + y,
    "hypot": lambda x, y: anp.sqrt(x * x + y * y),
    "select": lambda x, y: anp.where(x > y, x, y),
}
REDUCTIONS = {"sum": anp.sum, "mean": anp.mean, "max": anp.max, "min": anp.min, "prod": anp.prod}


@st.composite
def batched_array(draw, example_shape=None):
    """(batch, example shape, batch axis in it, in_axes form): the batch axis anywhere, negative too."""
    shape = example_shape or tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=3)))
    size = draw(st.integers(1, 4))
    axis = draw(st.integers(0, len(shape)))
    full = shape[:axis] + (size,) + shape[axis:]
    seed = draw(st.integers(0, 2**16))
    value = np.random.default_rng(seed).normal(size=full)
    in_axis = axis - len(full) if draw(st.booleans()) else axis
    return value, shape, size, in_axis


def _out_axis(draw, out_ndim):
    axis = draw(st.integers(0, out_ndim))
    return axis - (out_ndim + 1) if draw(st.booleans()) else axis


def _quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error", VmapFallbackWarning)  # elementwise ops never loop over f
        return call()


@SETTINGS
@given(st.data(), st.sampled_from(sorted(UNARY)))
def test_elementwise_unary_is_the_loop(data, name):
    x, shape, _, in_axis = data.draw(batched_array())
    out_axis = _out_axis(data.draw, len(shape))
    f = UNARY[name]
    got = _quiet(lambda: vmap(f, in_axes=in_axis, out_axes=out_axis)(x))
    assert_same(got, looped(f, x, in_axes=in_axis, out_axes=out_axis))


@SETTINGS
@given(st.data(), st.sampled_from(sorted(BINARY)), st.sampled_from(["both", "first", "second"]))
def test_elementwise_binary_broadcasting_is_the_loop(data, name, batched):
    x, shape, size, x_axis = data.draw(batched_array())
    # y: the same example shape, or a trailing part of it (broadcast), batched or shared
    tail = shape[data.draw(st.integers(0, len(shape))) :]
    y, _, _, y_axis = data.draw(batched_array(example_shape=tail or None))
    if not tail:
        y, y_axis = np.random.default_rng(1).normal(size=(size,)), 0
    elif y.shape[y_axis] != size:
        y = np.take(y, [0] * size, axis=y_axis)  # the same batch size as x
    f = BINARY[name]
    args = {
        "both": (x, y),
        "first": (x, np.take(y, 0, axis=y_axis)),
        "second": (np.take(x, 0, axis=x_axis), y),
    }
    in_axes = {"both": (x_axis, y_axis), "first": (x_axis, None), "second": (None, y_axis)}[batched]
    got = _quiet(lambda: vmap(f, in_axes=in_axes)(*args[batched]))
    assert_same(got, looped(f, *args[batched], in_axes=in_axes))


@SETTINGS
@given(st.data(), st.sampled_from(sorted(REDUCTIONS)), st.booleans())
def test_reductions_over_random_axes_are_the_loop(data, name, keepdims):
    x, shape, _, in_axis = data.draw(batched_array())
    choices = [None, *range(len(shape)), *range(-len(shape), 0)]
    axis = data.draw(st.sampled_from(choices))
    reduce = REDUCTIONS[name]

    def f(x):
        return reduce(x, axis=axis, keepdims=keepdims)

    got = vmap(f, in_axes=in_axis)(x)
    assert_same(got, looped(f, x, in_axes=in_axis), exact=False)


# reverse's rules of steps (abs, maximum, where) keep their structural zeros as plain masks: under
# vmap those run once per example (right, with a VmapFallbackWarning); forward's stay batched
STEPS = {"where", "abs", "maximum"}


@SETTINGS
@given(st.data(), st.sampled_from(sorted(UNARY)), st.sampled_from(["reverse", "forward"]))
def test_vmap_of_grad_is_the_loop_of_grad(data, name, backend):
    x, shape, _, in_axis = data.draw(batched_array())
    f = UNARY[name]
    df = adcore.grad(lambda x: anp.sum(f(x)), backend=backend)
    if backend == "reverse" and name in STEPS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VmapFallbackWarning)
            got = vmap(df, in_axes=in_axis)(x)
    else:
        got = _quiet(lambda: vmap(df, in_axes=in_axis)(x))
    assert_same(got, looped(df, x, in_axes=in_axis), exact=False)
