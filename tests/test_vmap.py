"""adcore.vmap's forms: in_axes/out_axes (ints, None, negative, pytrees of them as prefixes),
axis_size, nesting, its typed errors, and NumPy randomness; each result against a Python loop
over the batch (tests/vmap_reference.py), bit for bit where the computation is the same."""

from __future__ import annotations

import collections
import dataclasses
import warnings

import numpy as np
import pytest
from vmap_reference import assert_same, looped

import adcore
import adcore.numpy as anp
from adcore import vmap
from adcore.errors import AdcoreError, InvalidInputError

rng = np.random.default_rng(34)
X = rng.normal(size=(4, 3))
Y = rng.normal(size=(3, 4))
C = rng.normal(size=3)
Point = collections.namedtuple("Point", "w b")


def f(x, y):
    return anp.sin(x) * y + x


# --- in_axes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("in_axes", "args"),
    [
        (0, (X, X)),
        ((0, 0), (X, X)),
        ((0, 1), (X, Y)),
        ((0, -1), (X, Y)),
        ((-2, 1), (X, Y)),
        ((1, 0), (Y, X)),
        ((0, None), (X, C)),
        ((None, 0), (C, X)),
        ([0, None], (X, C)),  # a list for the arguments, as JAX takes it
        ((np.int64(0), None), (X, C)),  # a NumPy int is an axis too
    ],
)
def test_in_axes_forms_are_the_loop(in_axes, args):
    assert_same(vmap(f, in_axes=in_axes)(*args), looped(f, *args, in_axes=in_axes))


def test_a_batch_of_scalars_and_a_scalar_result():
    assert_same(vmap(lambda x: x * 2.0)(C), looped(lambda x: x * 2.0, C))
    assert_same(vmap(anp.sum)(X), looped(anp.sum, X))


def test_in_axes_of_a_three_dimensional_argument():
    Z = rng.normal(size=(2, 5, 3))
    for axis in (0, 1, 2, -1, -3):
        assert_same(vmap(anp.tanh, in_axes=axis)(Z), looped(anp.tanh, Z, in_axes=axis))


def test_in_axes_dict_prefix():
    p = {"a": X, "b": Y}
    g = lambda p: p["a"] * 2.0 + p["b"]  # noqa: E731
    in_axes = ({"a": 0, "b": 1},)
    assert_same(vmap(g, in_axes=in_axes)(p), looped(g, p, in_axes=in_axes))


def test_in_axes_ordered_dict_follows_its_own_order():
    # optree walks an OrderedDict in its own order, a dict in sorted order: the axes must follow
    p = collections.OrderedDict([("b", Y), ("a", C)])
    g = lambda p: p["b"] * p["a"][0]  # noqa: E731
    in_axes = ({"b": 1, "a": None},)
    assert_same(vmap(g, in_axes=in_axes)(p), looped(g, p, in_axes=in_axes))


def test_in_axes_namedtuple_and_list_prefixes():
    h = lambda p, x: p.w * x + p.b  # noqa: E731
    in_axes = (Point(0, None), 0)
    assert_same(vmap(h, in_axes=in_axes)(Point(X, C), X), looped(h, Point(X, C), X, in_axes=in_axes))
    k = lambda pair: pair[0] + pair[1]  # noqa: E731
    in_axes = ([0, 1],)
    assert_same(vmap(k, in_axes=in_axes)([X, Y]), looped(k, [X, Y], in_axes=in_axes))


def test_none_leaves_in_arguments_and_in_axes():
    g = lambda p, nothing: p["a"] * 2.0  # noqa: E731
    p = {"a": X, "b": None}
    assert_same(vmap(g, in_axes=({"a": 0, "b": None}, None))(p, None), looped(g, p, None, in_axes=(0, None)))


@adcore.tree.register_dataclass
@dataclasses.dataclass
class Layer:
    w: object
    b: object


def test_a_registered_class_as_an_axes_prefix():
    got = vmap(lambda p: p.w * p.b, in_axes=(Layer(0, None),))(Layer(X, C))
    assert_same(got, X * C)
    out = vmap(lambda x: Layer(x, x * 2.0), out_axes=Layer(0, 1))(X)
    assert_same((out.w, out.b), (X, (X * 2.0).T))
    with pytest.raises(InvalidInputError, match=r"args\[0\]\.b has 2"):
        vmap(lambda p: p.w, in_axes=(Layer(0, 0),))(Layer(X, X[:2]))


def test_in_axes_one_int_for_a_whole_pytree():
    p = {"w": X, "b": {"c": X[:, 0]}}
    g = lambda p: p["w"] * p["b"]["c"]  # noqa: E731
    assert_same(vmap(g)(p), looped(g, p))
    assert_same(vmap(g, in_axes=(0,))(p), looped(g, p))


def test_ensemble_over_stacked_parameters():
    params = {"w": rng.normal(size=(5, 3, 2)), "b": rng.normal(size=(5, 2))}

    def predict(p, x):
        return anp.tanh(x @ p["w"] + p["b"])

    got = vmap(predict, in_axes=(0, None))(params, X)
    assert_same(got, looped(predict, params, X, in_axes=(0, None)), exact=False)


# --- out_axes ------------------------------------------------------------------------------


@pytest.mark.parametrize("out_axes", [0, 1, -1, -2])
def test_out_axes_int(out_axes):
    g = lambda x: anp.outer(x, x)  # noqa: E731
    assert_same(vmap(g, out_axes=out_axes)(X), looped(g, X, out_axes=out_axes))


def test_out_axes_pytree_prefix_of_the_output():
    g = lambda x: {"s": anp.sin(x), "t": (x, C)}  # noqa: E731
    out_axes = {"s": 1, "t": (0, None)}
    got = vmap(g, out_axes=out_axes)(X)
    assert_same(got, looped(g, X, out_axes=out_axes))
    assert got["t"][1] is C  # an unbatched output with out_axes None is returned as it is


def test_out_axes_tuple_for_a_tuple_output():
    g = lambda x: (x * 2.0, anp.sum(C))  # noqa: E731
    assert_same(vmap(g, out_axes=(-1, None))(X), looped(g, X, out_axes=(-1, None)))


def test_an_unbatched_output_is_broadcast_over_the_batch():
    g = lambda x: (x, C)  # noqa: E731
    assert_same(vmap(g)(X), looped(g, X))
    assert_same(vmap(g, out_axes=1)(X), looped(g, X, out_axes=1))


def test_outputs_namedtuple_and_list():
    g = lambda x: Point(anp.exp(x), [x, x * x])  # noqa: E731
    assert_same(vmap(g)(X), looped(g, X))


# --- axis_size, empty and unbatched ---------------------------------------------------------


def test_axis_size_when_nothing_is_batched():
    g = lambda c: c * 2.0  # noqa: E731
    assert_same(vmap(g, in_axes=None, axis_size=5)(C), looped(g, C, in_axes=None, size=5))


def test_axis_size_that_agrees_with_the_batch():
    assert_same(vmap(f, axis_size=4)(X, X), looped(f, X, X))


# --- nesting -------------------------------------------------------------------------------


def test_vmap_of_vmap_with_different_in_axes():
    inner = vmap(lambda x, y: x * y, in_axes=(0, None))
    outer = vmap(inner, in_axes=(None, 1))
    want = looped(lambda y: looped(lambda x: x * y, X[0]), Y, in_axes=1)
    assert_same(outer(X[0], Y), want)


def test_vmap_of_vmap_is_a_double_loop():
    Z = rng.normal(size=(2, 4, 3))
    W = rng.normal(size=(4, 3, 2))
    g = lambda z, w: anp.sum(anp.sin(z) * w)  # noqa: E731
    got = vmap(vmap(g), in_axes=(0, 2))(Z, W)
    want = looped(lambda z, w: looped(g, z, w), Z, W, in_axes=(0, 2))
    assert_same(got, want)


def test_three_nested_vmaps_with_out_axes():
    Z = rng.normal(size=(2, 3, 4))
    g = vmap(vmap(vmap(lambda z: anp.exp(z) * z), out_axes=0), in_axes=1, out_axes=-1)
    want = looped(
        lambda a: looped(lambda b: looped(lambda z: np.exp(z) * z, b), a), Z, in_axes=1, out_axes=-1
    )
    assert_same(g(Z), want)


def test_nested_vmaps_sharing_an_unbatched_closure():
    def outer(x):
        return vmap(lambda y: y * x)(Y.T)  # x: the outer batch's value, a constant to the inner

    assert_same(vmap(outer)(X[:2]), looped(lambda x: looped(lambda y: y * x, Y.T), X[:2]))


# --- NumPy randomness ----------------------------------------------------------------------


def test_numpy_randomness_draws_once_for_the_whole_batch():
    # f sees one example's shape, so np.random draws one example's worth, shared by every example
    # (torch.func's randomness='same'); a draw per example needs the noise passed in as an argument
    np.random.seed(0)
    got = vmap(lambda x: x + np.random.normal(size=x.shape))(X)
    np.random.seed(0)
    noise = np.random.normal(size=X.shape[1:])
    np.testing.assert_array_equal(got, X + noise)


def test_randomness_per_example_from_a_batched_argument():
    noise = rng.normal(size=X.shape)
    assert_same(vmap(lambda x, n: x + n)(X, noise), X + noise)


# --- typed errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: vmap(f)(X, Y), "different sizes"),
        (lambda: vmap(f, in_axes=(0, 1))(X, X), "different sizes"),
        (lambda: vmap(f, axis_size=3)(X, X), "axis_size=3"),
        (lambda: vmap(f, in_axes=(2, 0))(X, X), "axis 2 of a value with 2 axes"),
        (lambda: vmap(f, in_axes=(-3, 0))(X, X), "axis -3 of a value with 2 axes"),
        (lambda: vmap(f, in_axes=(0, 0))(X, 1.0), "axis 0 of a value with 0 axes"),
        (lambda: vmap(f, out_axes=3)(X, X), "axis 3 of a value with 2 axes"),
        (lambda: vmap(f, out_axes=None)(X, X), "out_axes is None for an output that depends"),
        (lambda: vmap(lambda x: (x, x), out_axes=(0, None))(X), "out_axes is None"),
        (lambda: vmap(f, in_axes=(0,))(X, X), "one entry per positional argument"),
        (lambda: vmap(f, in_axes=(0, 0, 0))(X, X), "one entry per positional argument"),
        (lambda: vmap(f, in_axes={"x": 0})(X, X), "one entry per positional argument"),
        (lambda: vmap(f, in_axes="0")(X, X), "one entry per positional argument"),
        (lambda: vmap(f, in_axes=0.0)(X, X), "one entry per positional argument"),
        (lambda: vmap(f, in_axes=(True, 0))(X, X), "an axis is an int"),
        (lambda: vmap(f, in_axes=(0, 1.0))(X, X), "an axis is an int"),
        (lambda: vmap(lambda p: p["a"], in_axes=({"a": 0},))({"a": X, "b": X}), "does not match argument 0"),
        (lambda: vmap(lambda p: p[0], in_axes=((0, 0, 0),))((X, X)), "does not match argument 0"),
        (lambda: vmap(lambda p: p, in_axes=({"a": 0},))(X), "does not match argument 0"),
        (lambda: vmap(lambda x: (x, x), out_axes={"a": 0})(X), "does not match f's output"),
        (lambda: vmap(lambda x: x, out_axes=(0, 0))(X), "does not match f's output"),
        (lambda: vmap(lambda c: c, in_axes=None)(C), "pass axis_size"),
        (lambda: vmap(f, axis_size=-1), "axis_size"),
        (lambda: vmap(f, axis_size=2.0), "axis_size"),
        (lambda: vmap(f)(X, y=X), "keyword arguments"),
        (lambda: vmap(f, fallback="silent"), "fallback"),
        (lambda: vmap(3.0), "takes a function"),
    ],
)
def test_typed_errors(call, match):
    with pytest.raises(InvalidInputError, match=match):
        call()


def test_misspelled_keyword_of_vmap_is_an_error():
    with pytest.raises(AdcoreError, match="in_axes"):
        vmap(f, in_axis=0)


def test_an_empty_batch_elementwise_and_looped():
    assert_same(vmap(anp.sin)(np.zeros((0, 3))), np.zeros((0, 3)))

    def branchy(x):
        return x if anp.sum(x) > 0 else -x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(InvalidInputError, match="empty batch"):
            vmap(branchy)(np.zeros((0, 3)))


def test_the_call_after_an_error_works():
    with pytest.raises(InvalidInputError):
        vmap(f)(X, Y)
    with pytest.raises(InvalidInputError):
        vmap(f, out_axes=None)(X, X)
    with pytest.raises(ZeroDivisionError):
        vmap(lambda x: 1 // 0)(X)  # f's own error passes through, the trace is closed
    assert_same(vmap(f)(X, X), looped(f, X, X))
    assert_same(adcore.grad(lambda x: anp.sum(anp.sin(x)))(C), np.cos(C))


def test_errors_of_f_pass_through_with_fallback_error_too():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(KeyError):
            vmap(lambda p: p["missing"], fallback="error")({"a": X})


def test_an_unbatched_list_argument_broadcasts_as_the_array_it_is():
    # a list's axes read as 0 gave [11, 22] for the loop's [[11, 21], [12, 22]]
    xs = np.array([1.0, 2.0])
    expected = np.stack([anp.add(x, [10.0, 20.0]) for x in xs])
    np.testing.assert_array_equal(adcore.vmap(lambda x: anp.add(x, [10.0, 20.0]))(xs), expected)
    np.testing.assert_array_equal(
        adcore.vmap(lambda x: anp.multiply([[1.0], [2.0]], x))(xs), [[[1.0], [2.0]], [[2.0], [4.0]]]
    )
